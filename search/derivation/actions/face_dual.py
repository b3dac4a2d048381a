"""The parity-constrained sum as an Ising model on the faces of its constraint graph (tasks/parity_dual.py
has the mapping and its derivation): chains, rings and planar codes, with no drawing needed."""

from __future__ import annotations

import sys

from tasks import parity_dual
from tasks.parity_dual import _fd_model
from search.derivation.actions import register

NAME = "face_dual"
SUMMARY = ("parity-constrained sum -> Ising model on the faces of the constraint graph's planar embedding "
           "(chains, rings, planar codes; couplings from one solution)")
COST = "O(n)"
LABELS = ("rbim_nishimori",)
PRESERVES_ENERGY = False
ORDER = 30                 # where a derivation search tries it among the actions
FIRST_STEP = True  # tried on every state of a problem before it is a spin model
OPTION_SPACE: dict = {}
IMPORTS = """\
import math

import networkx as nx
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components
"""


def _act_face_dual(problem, options):
    """The Ising model on the faces whose log Z plus log_shift is the constrained sum's log."""
    return _fd_model(problem)


FUNCTIONS = parity_dual.FUNCTIONS + (_act_face_dual,)
ENTRY = _act_face_dual


def admits(view) -> str | None:
    if view.kind != "constrained":
        return "not a parity-constrained sum"
    return view.reason(NAME)


def explain(view, options) -> dict:
    return {"graph": "one vertex per condition, one edge per variable (conditions holding each variable at most twice)",
            "faces": "networkx planar embedding of the subdivided graph", "couplings": "s_b = -eta_b prod t_g",
            "reference": "x1 by peeling a spanning forest, extra conditions by faces over GF(2)"}


register(sys.modules[__name__])
