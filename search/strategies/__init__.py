"""Search strategies: how parents are chosen and what is kept of judged programs.

A strategy is one small object behind :class:`Strategy`; the engine (``evolve.engine``) asks it
for one :class:`~search.records.Selection` per slot of a generation, hands back every proposal
of the generation once it is judged (or known to be unjudgeable), lets it do its end-of-generation
housekeeping, and stores its ``state()`` in snapshots. It knows nothing of Ray, budgets or the
journal. Three ship here, each one file:

- ``islands``: MAP-Elites islands with migration and resets (FunSearch / OpenEvolve);
- ``tree``: ERA-style flat PUCT over every judged program;
- ``refine``: StatMechBench-v0's propose-verify-revise loop (each slot one chain of k rounds).

A new strategy is one module here that defines a class with ``name`` and ``Options`` (its config
section, a dataclass) and decorates it with :func:`register`; ``strategy: <name>`` and a
``<name>:`` section in a run config select and configure it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from search.records import JudgedProgram, Selection
from tasks.plugins import Registry


@dataclass(frozen=True)
class StrategyContext:
    """What every strategy may know about the run: its seed and the slots per generation."""

    seed: int = 0
    batch_size: int = 4


class Strategy(Protocol):
    name: ClassVar[str]
    Options: ClassVar[type]          # the strategy's config section (a dataclass)
    #: judge a program again even when its code was judged before (the paper's loop judges every round)
    rejudge_duplicates: ClassVar[bool]
    #: the engine may choose generation g's parents before generation g - 1 is finished (one generation
    #: of lag, so the evaluators never wait for a generation's slowest evaluation); absent means False
    overlaps_generations: ClassVar[bool]
    #: the class of its population, built as ``Population(options, seed)``, which a run may host in its
    #: own Ray actor (the strategy then takes ``population=`` a proxy to it); None: no such population
    Population: ClassVar[type | None]

    def select(self, generation: int, slots: int) -> list[Selection]:
        """One selection per slot of ``generation``, in slot order."""

    def absorb(self, slot: int, selection: Selection, program: JudgedProgram) -> None:
        """The outcome of one slot (called in slot order, also for proposals that were not judged)."""

    def end_generation(self, generation: int) -> list[Any]:
        """Housekeeping after a generation; returns events for the journal (e.g. migrations)."""

    def finished(self) -> str | None:
        """Why the strategy has nothing more to do (the run then stops), or None."""

    def state(self) -> dict:
        """Everything needed to continue exactly (plain data, msgpack-ready)."""

    def load(self, state: dict) -> None:
        """Continue from ``state()``."""


_registry = Registry(__name__, "strategy", required=("Options", "select", "absorb", "end_generation", "finished", "state", "load"),
                     defaults={"overlaps_generations": False, "Population": None})
register = _registry.register  # class decorator: available under cls.name
strategy_class = _registry.lookup  # the class registered under a name (KeyError naming the known ones)
strategy_names = _registry.names  # every registered name, after importing the package's modules
