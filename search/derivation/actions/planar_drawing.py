"""A planar drawing from the interaction graph alone: planarity is a property of the graph, not of
the coordinates a formula happens to give.

networkx's check_planarity (the left-right planarity test, linear time) decides whether the graph of
the model's terms is planar and returns a combinatorial embedding (a rotation system); a Kasteleyn
orientation needs nothing more, and networkx's combinatorial_embedding_to_pos (de Fraysseix, Pach and
Pollack, linear time) turns that embedding into integer straight-line coordinates, so the planar
solver's face tracing and its cold route's nested dissection run unchanged on a model whose spins were
numbered along a line. Z is unchanged: only the drawing is new. A non-planar graph raises ValueError
naming the size (the check of the step then fails), which is also how the search learns that the
graph is not planar at some size.
"""

from __future__ import annotations

import sys

import networkx as nx
import numpy as np

from search.derivation.runtime import _rt_neighbour_pairs
from search.derivation.actions import register

NAME = "planar_drawing"
SUMMARY = ("a straight-line planar drawing computed from the interaction graph (networkx: a combinatorial "
           "embedding by the left-right planarity test, then de Fraysseix-Pach-Pollack coordinates)")
COST = "O(n)"
LABELS: tuple[str, ...] = ()
PRESERVES_ENERGY = True
ORDER = 110                 # where a derivation search tries it among the actions
FIRST_STEP = False
OPTION_SPACE: dict = {}
IMPORTS = """\
import networkx as nx
import numpy as np
"""


def _act_planar_drawing(model, options):
    """The model with ``positions`` from a planar embedding of its interaction graph; ValueError when
    that graph is not planar."""
    n = model["n"]
    a, b = _rt_neighbour_pairs(model)
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(zip(a.tolist(), b.tolist()))
    planar, embedding = nx.check_planarity(graph)
    if not planar:
        raise ValueError(f"the interaction graph of {n} spins is not planar (networkx's planarity test)")
    where = nx.combinatorial_embedding_to_pos(embedding) if n > 2 else {k: (float(k), 0.0) for k in range(n)}
    positions = np.array([where[k] for k in range(n)], dtype=np.float64).reshape(n, 2)
    return {**model, "positions": positions}


FUNCTIONS = (_act_planar_drawing,)
ENTRY = _act_planar_drawing


def admits(view) -> str | None:
    if view.kind != "model":
        return "there is no spin model yet"
    if view.max_order > 2 or view.rank_one:
        return "only pair models are drawn (a Pfaffian needs pair couplings)"
    if not view.has_pairs:
        return "there are no pair couplings to draw"
    if view.has_positions and view.drawing_planar:
        return "the model already has a planar drawing"
    if view.family is None or view.family.planar is not True:
        return "the interaction graph is not planar at every size the view ran"
    return None


def explain(view, options) -> dict:
    return {"embedding": "networkx check_planarity (left-right test)",
            "coordinates": "networkx combinatorial_embedding_to_pos (de Fraysseix-Pach-Pollack)"}


register(sys.modules[__name__])
