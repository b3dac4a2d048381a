"""The structural proposer's templates (search/structural/templates) as derivation solvers.

Each template takes pair couplings, fields, rank-one blocks and a drawing; the adapter hands it the
runtime model's (dimensionless) arrays with beta = 1. The planar Pfaffian trusts the drawing it is
given, so the adapter first proves the drawing planar: its rotation system (neighbours sorted by
angle) must satisfy Euler's formula V - E + F = 1 + C, faces traced from the rotation.
"""

from __future__ import annotations

import numpy as np

from search.derivation.runtime import _rt_pairs
from search.derivation.solvers import register
from search.derivation.solvers.adapters import AdaptedTemplate
from search.structural.templates import chain, planar_pfaffian, row_transfer, tensor_contraction
from tasks.rotation_system import drawing_is_planar
from tasks.structure import vertex_separation

ADAPTER_IMPORTS = """\
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
"""


def _sol_template(model, options):
    """log Z (without the model's shift) by the rendered template's _method_log_z at beta = 1 (it runs
    inside the program, where the template's functions sit beside it)."""
    edges, K, H = _rt_pairs(model)
    return float(_method_log_z(edges, K, H, model["rank_one"], model["positions"], 1.0, model["n"], options))


def _sol_planar(model, options):
    """log Z by the planar Pfaffian template, after proving the given drawing planar."""
    edges, K, H = _rt_pairs(model)
    positions = model["positions"]
    if positions is None:
        raise ValueError("the Pfaffian needs a drawing of the graph")
    if not drawing_is_planar(model["n"], edges, np.asarray(positions, dtype=np.float64)):
        raise ValueError("the drawing given is not planar (its rotation system fails Euler's formula)")
    return _sol_template(model, options)


class TemplateSolver:
    """A structural template seen as a derivation solver (the same interface as the solver modules)."""

    def __init__(self, template, planar: bool = False):
        self.template = template
        self.NAME = template.NAME
        self.SUMMARY = template.__doc__.strip().splitlines()[0]
        self.OPTION_SPACE = template.OPTION_SPACE
        self.planar = planar
        self.FUNCTIONS = (_sol_template,) + ((drawing_is_planar, _sol_planar) if planar else ())
        self.ENTRY = _sol_planar if planar else _sol_template

    def source(self, options: dict) -> str:
        return self.template.source(options)

    def applies(self, view) -> str | None:
        if view.kind != "model":
            return "there is no spin model yet"
        if view.statistic != "log_z":
            return "it computes log Z, not a mean energy"
        reason = self.template.applies(view.task_view)
        if reason is None and self.planar and not view.drawing_planar:
            return "no planar drawing is known for every instance"
        return reason

    def claims(self, view, options):
        c = self.template.claims(view.task_view, options)
        complexity, why = c.complexity_O, c.justification
        if self.template is tensor_contraction and options.get("engine", "bucket") == "bucket" \
                and options.get("order", "min_fill") in ("min_fill", "min_degree") and complexity == "O(n)":
            # the greedy order scans every remaining spin at each step: O(n^2) before any contraction
            complexity = "O(n^2)"
            why += " Finding the greedy elimination order scans the remaining spins at every step: O(n^2) in all."
        return (c.tractable_class,), complexity, why, c.cost_rank

    def tune(self, states) -> dict:
        """Options chosen from the states themselves: the row sweep takes the order whose frontier
        (vertex separation) is smallest on every instance, so a 3 x L strip is swept across its width."""
        if self.template is not row_transfer or any(s["rank_one"] for s in states):
            return {}
        widths = {}
        for name in row_transfer.OPTION_SPACE["order"]:
            worst = 0
            for s in states:
                edges, _, _ = _rt_pairs(s)
                worst = max(worst, vertex_separation(s["n"], edges, row_transfer._sweep_order(s["n"], edges, name)))
            widths[name] = worst
        return {"order": min(widths, key=lambda k: (widths[k], list(widths).index(k)))}


for _order, _solver in ((40, TemplateSolver(chain)), (50, TemplateSolver(planar_pfaffian, planar=True)),
                       (60, TemplateSolver(row_transfer)), (70, TemplateSolver(tensor_contraction))):
    register(AdaptedTemplate(_solver, _order, ADAPTER_IMPORTS))
