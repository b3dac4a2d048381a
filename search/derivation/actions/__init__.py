"""The transformation library: one module per action over the runtime model (search/derivation/runtime.py).

Every action module declares ``NAME``, ``SUMMARY``, ``COST`` (its own complexity), ``LABELS`` (the
tractable classes a chain through it names), ``PRESERVES_ENERGY`` (a bijection of the variables, so a
mean energy is unchanged), ``OPTION_SPACE``, ``IMPORTS``, ``FUNCTIONS`` (rendered into the program by
inspect.getsource, in order) and ``ENTRY`` (the runtime function ``(state, options) -> state``), plus
``admits(view) -> str | None`` (None: it applies to the states a chain has left, else why not) and
``explain(view, options) -> dict`` (its parameters for the derivation record).

The change of variables {0, 1} -> {-1, +1} is exact algebra on the formula, done once when the
reader is compiled (tasks/formula_algebra.py); :data:`SPIN_VARIABLES` describes it as a step.
"""

from __future__ import annotations

from search.derivation.actions import (components, decoration, degree_one, dual_rbim, face_dual, free_terms, gauge,
                                       ghost_spin, nishimori, planar_drawing, star_triangle)

#: in the order a search tries them
ACTIONS = {m.NAME: m for m in (nishimori, dual_rbim, face_dual, gauge, free_terms, degree_one, decoration, star_triangle,
                               components, ghost_spin, planar_drawing)}

SPIN_VARIABLES = {
    "action": "spin_variables",
    "summary": "x = (1 + s)/2 for every {0, 1} variable: products multiplied out, like terms merged, exactly "
               "(rational arithmetic on the formula); the terms without variables are the energy constant",
}


def get_action(name: str):
    if name not in ACTIONS:
        raise KeyError(f"unknown action {name!r}; known: {', '.join(ACTIONS)}")
    return ACTIONS[name]
