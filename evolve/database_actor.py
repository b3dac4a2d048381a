"""The population's single home: a Ray actor around ``search.database.ProgramDatabase``.

Callers send and receive small dicts (a candidate with its verdict, a request with a parent
and inspirations); the population itself never leaves the actor.
"""

from __future__ import annotations

import numpy as np


class DatabaseActor:
    def __init__(self, db_config: dict, seed: int):
        from search.database import DatabaseConfig, ProgramDatabase

        self.config = DatabaseConfig(**db_config)
        self.db = ProgramDatabase(self.config, seed)
        self.evaluated = 0
        # the proposer's own record of every program (provenance, structural plans), by id
        self.candidates: dict[str, dict] = {}

    # -- dedup --------------------------------------------------------------------------------
    def seen(self, code: str) -> bool:
        from search.database import normalised_hash

        return self.db.seen(normalised_hash(code))

    def mark_seen(self, code: str) -> None:
        from search.database import normalised_hash

        self.db.mark_seen(normalised_hash(code))

    # -- selection ----------------------------------------------------------------------------
    def request_for(self, island: int, seed: list[int], num_inspirations: int) -> dict:
        """{"parent": program dict or None, "inspirations": [program dicts]} for one slot."""
        rng = np.random.default_rng(seed)
        sample = self.db.sample(island, rng)
        if sample is None:
            return {"parent": None, "inspirations": []}
        return {"parent": self._view(sample.parent),
                "inspirations": [self._view(p) for p in sample.inspirations[:num_inspirations]]}

    def _view(self, program) -> dict:
        """The program as its proposer made it, with its verdict (copies map to their original)."""
        original = self.candidates.get(program.copy_of or program.id, {})
        return {**original, "id": program.copy_of or program.id, "verdict": program.verdict}

    # -- results ------------------------------------------------------------------------------
    def add(self, candidate: dict, verdict: dict, island: int) -> dict:
        from search.database import Program

        program = Program.new(candidate["id"], candidate.get("code"), verdict, candidate.get("tractable_class"),
                              candidate.get("complexity_O"), candidate.get("confidence"), candidate.get("parent_ids", []))
        self.candidates[candidate["id"]] = candidate
        result = self.db.add(program, island)
        self.evaluated += 1
        best = self.db.best()
        return {"new_global_best": bool(result.new_global_best), "score": list(program.score),
                "best_summary": _summary(best) if best is not None else None}

    def maintain(self, seed: list[int]) -> list[dict]:
        """Migration and resets due at this point; journal records of what happened."""
        rng = np.random.default_rng(seed + [7])
        events = [{"kind": "migration", **e.to_dict()} for e in self.db.migrate(rng)]
        events += [{"kind": "reset", **e.to_dict()} for e in self.db.reset_stagnant(rng)]
        return events

    def best(self) -> dict | None:
        best = self.db.best()
        return None if best is None else self._view(best)

    def stats(self) -> dict:
        return self.db.stats()

    # -- checkpoints --------------------------------------------------------------------------
    def state(self) -> dict:
        return {"db": self.db.state_dict(), "evaluated": self.evaluated, "candidates": self.candidates}

    def load_state(self, state: dict) -> None:
        from search.database import ProgramDatabase

        self.db = ProgramDatabase.from_state_dict(state["db"])
        self.evaluated = state["evaluated"]
        self.candidates = dict(state["candidates"])


def _summary(p) -> str:
    v = p.verdict or {}
    n = (v.get("numerical") or {}).get("largest_n_verified", "?")
    return f"{p.id} {v.get('verdict', '?')} {p.tractable_class} n<={n}"
