"""Sum out every spin with one neighbour, repeatedly (trees shrink to nothing). See summing_out.py for the expansion and the choice of spins."""

from __future__ import annotations

import sys

from search.derivation.actions import summing_out
from search.derivation.actions.summing_out import _so_pass
from search.derivation.actions import register

NAME = "degree_one"
SUMMARY = "sum out every spin with one neighbour, repeatedly (trees shrink to nothing)"
COST = "O(n)"
LABELS = ("treewidth_bounded",)          # leaves first: variable elimination on a tree
PRESERVES_ENERGY = False
ORDER = 60                 # where a derivation search tries it among the actions
FIRST_STEP = False
DEGREE = 1
OPTION_SPACE = {"repeat": (True, False)}
IMPORTS = summing_out.IMPORTS


def _act_degree_one(model, options):
    """The model with its degree-1 spins summed out (log_shift gains the constants)."""
    return _so_pass(model, 1, bool(options.get("repeat", True)))


FUNCTIONS = summing_out.FUNCTIONS + (_act_degree_one,)
ENTRY = _act_degree_one


def admits(view) -> str | None:
    if view.kind != "model" or view.statistic != "log_z":
        return "summing out needs a spin model whose quantity is log Z"
    if DEGREE not in view.degrees:
        return "no spin outside a rank-one block has exactly 1 neighbour(s)"
    return None


def explain(view, options) -> dict:
    return {"degree": DEGREE, "repeat": bool(options.get("repeat", True)),
            "leaves": "f(s_N) = log 2cosh(sum of the terms on the spin), expanded multilinearly on its neighbours"}


register(sys.modules[__name__])
