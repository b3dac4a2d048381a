"""The transformation library: one module per action over the runtime model (search/derivation/runtime.py).

Every action module declares the :class:`Action` protocol's attributes and registers itself
(``register(sys.modules[__name__])`` at its end); the registry finds the modules of this package by
itself, so a new action is one module. ``ACTIONS`` maps names to the action modules in the order a
search tries them (their ``ORDER``).

The change of variables {0, 1} -> {-1, +1} is exact algebra on the formula, done once when the
reader is compiled (tasks/formula_algebra.py); :data:`SPIN_VARIABLES` describes it as a step.
"""

from __future__ import annotations

from typing import Callable, ClassVar, Protocol

from tasks.plugins import Registry


class Action(Protocol):
    """What an action module declares (module-level names)."""

    NAME: ClassVar[str]
    SUMMARY: ClassVar[str]
    COST: ClassVar[str]                     # its own complexity, e.g. "O(n)"
    LABELS: ClassVar[tuple[str, ...]]       # the tractable classes a chain through it names
    PRESERVES_ENERGY: ClassVar[bool]        # a bijection of the variables: a mean energy is unchanged
    ORDER: ClassVar[int]                    # where a search tries it (smaller first)
    FIRST_STEP: ClassVar[bool]              # it turns a problem (a constrained sum, a disorder average) into a
                                            # model: the view tries its ENTRY on every state of a problem
    OPTION_SPACE: ClassVar[dict]
    IMPORTS: ClassVar[str]                  # the import lines its functions need in a program
    FUNCTIONS: ClassVar[tuple]              # rendered into the program by inspect.getsource, in order
    ENTRY: ClassVar[Callable]               # (state, options) -> state

    def admits(self, view) -> str | None:
        """None when it applies to the states a chain has left, else why not."""

    def explain(self, view, options) -> dict:
        """Its parameters for the derivation record."""


_registry = Registry(__name__, "derivation action", key="NAME", order="ORDER",
                     required=("SUMMARY", "COST", "LABELS", "PRESERVES_ENERGY", "ORDER", "FIRST_STEP",
                               "OPTION_SPACE", "IMPORTS", "FUNCTIONS", "ENTRY", "admits", "explain"))
register = _registry.register
#: name -> action module, in the order a search tries them
ACTIONS = _registry

SPIN_VARIABLES = {
    "action": "spin_variables",
    "summary": "x = (1 + s)/2 for every {0, 1} variable: products multiplied out, like terms merged, exactly "
               "(rational arithmetic on the formula); the terms without variables are the energy constant",
}


def get_action(name: str):
    return _registry.lookup(name)
