"""Islands of MAP-Elites archives (``strategy: islands``), after FunSearch and OpenEvolve.

Slots are dealt to islands in rotation; each slot's parent and inspirations are sampled from its
island (:class:`search.database.ProgramDatabase`, seeded by run seed, generation and slot);
every judged program joins the island its parent came from; after each generation the islands
migrate and reset as the ``database:`` section says. The island is the slot's niche: the
negative-prompting memory is kept per island.

The population lives in an :class:`IslandDatabase`. The strategy calls it through plain method
calls, so the runtime may hand it a proxy of a Ray actor holding the database (only a slot's
parent and inspirations then travel, never the population) or the object itself.
"""

from __future__ import annotations

import numpy as np

from search.database import DatabaseConfig, Program, ProgramDatabase
from search.records import JudgedProgram, Selection
from search.strategies import StrategyContext, register


class IslandDatabase:
    """The program database plus each judged program as its proposer wrote it (by id), so a
    sampled parent goes back to proposers with its full record (response, plan, derivation)."""

    def __init__(self, config: DatabaseConfig, seed: int):
        self.config = config
        self.db = ProgramDatabase(config, seed)
        self.programs: dict[str, JudgedProgram] = {}

    def sample(self, island: int, seed: list[int]) -> tuple[JudgedProgram | None, tuple[JudgedProgram, ...]]:
        """(parent, inspirations) for one slot of ``island``; (None, ()) while the island is empty."""
        sample = self.db.sample(island, np.random.default_rng(seed))
        if sample is None:
            return None, ()
        return self._original(sample.parent), tuple(self._original(p) for p in sample.inspirations)

    def _original(self, program: Program) -> JudgedProgram:
        """Migrated and reset copies stand for the program they copy."""
        return self.programs[program.copy_of or program.id]

    def add(self, program: JudgedProgram, island: int) -> None:
        c = program.candidate
        self.programs[c.id] = program
        self.db.add(Program.new(c.id, c.code, program.verdict, c.tractable_class, c.complexity_O, c.confidence,
                                c.parent_ids), island)

    def maintain(self, seed: list[int]) -> list:
        """Migration and resets due now (search.database MigrationEvent / ResetEvent records)."""
        rng = np.random.default_rng(seed + [7])
        return [*self.db.migrate(rng), *self.db.reset_stagnant(rng)]

    def stats(self) -> dict:
        return self.db.stats()

    def state(self) -> dict:
        return {"db": self.db.state_dict(), "programs": {k: p.to_dict() for k, p in self.programs.items()}}

    def load(self, state: dict) -> None:
        self.db = ProgramDatabase.from_state_dict(state["db"])
        self.programs = {k: JudgedProgram.from_dict(p) for k, p in state["programs"].items()}


@register
class IslandsStrategy:
    name = "islands"
    Options = DatabaseConfig
    rejudge_duplicates = False
    overlaps_generations = True  # parents may lag one generation: islands evolve the same either way
    Population = IslandDatabase  # a run may host it in its own actor (the strategy gets a proxy)

    def __init__(self, options: DatabaseConfig, context: StrategyContext, population=None):
        self.options = options
        self.context = context
        self.db = population if population is not None else IslandDatabase(options, context.seed)

    def select(self, generation: int, slots: int) -> list[Selection]:
        out = []
        for s in range(slots):
            island = (generation * self.context.batch_size + s) % self.options.islands
            parent, inspirations = self.db.sample(island, [self.context.seed, generation, s])
            out.append(Selection(parent, inspirations[:self.options.num_inspirations], niche=island))
        return out

    def absorb(self, slot: int, selection: Selection, program: JudgedProgram) -> None:
        if program.evaluation is not None:
            self.db.add(program, selection.niche)

    def finished(self) -> str | None:
        return None

    def end_generation(self, generation: int) -> list:
        return self.db.maintain([self.context.seed, generation])

    def state(self) -> dict:
        return self.db.state()

    def load(self, state: dict) -> None:
        self.db.load(state)
