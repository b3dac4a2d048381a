"""Sum out spins with two neighbours (decoration-iteration: a new coupling between the two). See summing_out.py for the expansion and the choice of spins."""

from __future__ import annotations

import sys

from search.derivation.actions import summing_out
from search.derivation.actions.summing_out import _so_pass
from search.derivation.actions import register

NAME = "decoration"
SUMMARY = "sum out spins with two neighbours (decoration-iteration: a new coupling between the two)"
COST = "O(n)"
LABELS: tuple[str, ...] = ()
PRESERVES_ENERGY = False
ORDER = 70                 # where a derivation search tries it among the actions
FIRST_STEP = False
DEGREE = 2
OPTION_SPACE = {"repeat": (False, True)}
IMPORTS = summing_out.IMPORTS


def _act_decoration(model, options):
    """The model with its degree-2 spins summed out (log_shift gains the constants)."""
    return _so_pass(model, 2, bool(options.get("repeat", False)))


FUNCTIONS = summing_out.FUNCTIONS + (_act_decoration,)
ENTRY = _act_decoration


def admits(view) -> str | None:
    if view.kind != "model" or view.statistic != "log_z":
        return "summing out needs a spin model whose quantity is log Z"
    if DEGREE not in view.degrees:
        return "no spin outside a rank-one block has exactly 2 neighbour(s)"
    return None


def explain(view, options) -> dict:
    return {"degree": DEGREE, "repeat": bool(options.get("repeat", False)),
            "leaves": "f(s_N) = log 2cosh(sum of the terms on the spin), expanded multilinearly on its neighbours"}


register(sys.modules[__name__])
