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

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from search.records import JudgedProgram, Selection


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


_REGISTRY: dict[str, type] = {}


def register(cls: type) -> type:
    """Class decorator: make a strategy available under ``cls.name``."""
    _REGISTRY[cls.name] = cls
    return cls


def _discover() -> None:
    """Import every module of this package once, so their @register calls have run."""
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")


def strategy_class(name: str) -> type:
    """The registered strategy ``name`` (KeyError naming the known ones)."""
    if name not in _REGISTRY:
        _discover()
    if name not in _REGISTRY:
        raise KeyError(f"unknown strategy {name!r}; known: {', '.join(strategy_names())}")
    return _REGISTRY[name]


def strategy_names() -> list[str]:
    _discover()
    return sorted(_REGISTRY)
