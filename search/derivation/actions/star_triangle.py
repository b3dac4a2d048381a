"""Sum out spins with three neighbours (star-triangle; with a field on the centre a 3-spin term). See summing_out.py for the expansion and the choice of spins."""

from __future__ import annotations

import sys

from search.derivation.actions import summing_out
from search.derivation.actions.summing_out import _so_pass
from search.derivation.actions import register

NAME = "star_triangle"
SUMMARY = "sum out spins with three neighbours (star-triangle; with a field on the centre a 3-spin term)"
COST = "O(n)"
LABELS: tuple[str, ...] = ()
PRESERVES_ENERGY = False
ORDER = 80                 # where a derivation search tries it among the actions
FIRST_STEP = False
DEGREE = 3
OPTION_SPACE = {"repeat": (False, True)}
IMPORTS = summing_out.IMPORTS


def _act_star_triangle(model, options):
    """The model with its degree-3 spins summed out (log_shift gains the constants)."""
    return _so_pass(model, 3, bool(options.get("repeat", False)))


FUNCTIONS = summing_out.FUNCTIONS + (_act_star_triangle,)
ENTRY = _act_star_triangle


def admits(view) -> str | None:
    if view.kind != "model" or view.statistic != "log_z":
        return "summing out needs a spin model whose quantity is log Z"
    if DEGREE not in view.degrees:
        return "no spin outside a rank-one block has exactly 3 neighbour(s)"
    return None


def explain(view, options) -> dict:
    return {"degree": DEGREE, "repeat": bool(options.get("repeat", False)),
            "leaves": "f(s_N) = log 2cosh(sum of the terms on the spin), expanded multilinearly on its neighbours"}


register(sys.modules[__name__])
