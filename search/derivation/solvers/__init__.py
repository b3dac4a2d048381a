"""Terminal solvers of a derivation: the structural templates plus the methods they lack.

Each solver exposes ``NAME``, ``SUMMARY``, ``OPTION_SPACE``, ``source(options)`` (its program text),
``entry`` (the name of its runtime function ``(model, options) -> log Z without the shift``),
``energy`` (the function for a mean energy, or None), ``applies(view)``,
``claims(view, options) -> (class labels, complexity, justification, cost rank)`` and ``fallback``: a
generic method (elimination) that a named mapping of the same growth outranks (engine._plan).

``ANSWER_SOLVERS`` are not exact: a rigorous lower bound (mean field), a rigorous upper bound (tree-
reweighted) and an approximation with a control parameter (boundary MPS). Their ``answer`` says which;
the engine never ranks them with the exact plans: search/derivation/answers.py turns them into programs
that answer with bounds or an approximation (evaluators/answer_kinds.py) when nothing polynomial is exact.
"""

from __future__ import annotations

from search.derivation.solvers import (boundary_mps, elimination, enumeration, kaufman, magnetisation, mean_field,
                                      product, tree_reweighted)
from search.derivation.solvers.templates import ADAPTER_IMPORTS, SOLVERS as TEMPLATE_SOLVERS
from search.structural.templates import render


class ModuleSolver:
    """A solver written as a module of this package."""

    def __init__(self, module, cheap: bool = False):
        self.module = module
        self.NAME = module.NAME
        self.SUMMARY = module.SUMMARY
        self.OPTION_SPACE = module.OPTION_SPACE
        self.cheap = cheap                       # its ENTRY is tried on every view state
        self.fallback = getattr(module, "FALLBACK", False)
        self.ENTRY = module.ENTRY
        self.entry = module.ENTRY.__name__
        self.energy_fn = getattr(module, "ENERGY", None)
        self.energy = self.energy_fn.__name__ if self.energy_fn is not None else None
        self.answer = getattr(module, "ANSWER", "exact")     # "lower" | "upper" | "approximation" | "exact"

    def source(self, options: dict) -> str:
        return render(self.module.IMPORTS + "\n" + getattr(self.module, "CONSTANTS", ""), self.module.FUNCTIONS)

    def applies(self, view) -> str | None:
        if view.kind == "model" and view.statistic == "mean_energy" and self.energy is None:
            return "it computes log Z, not a mean energy"
        if self.cheap and view.kind == "model":
            reason = self.module.applies(view)
            return reason if reason is not None else view.reason(self.NAME)
        return self.module.applies(view)

    def claims(self, view, options):
        return self.module.claims(view, options)

    def tune(self, states) -> dict:
        return {}


class AdaptedTemplate:
    """A structural template with its adapter (search/derivation/solvers/templates.py)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.NAME = wrapped.NAME
        self.SUMMARY = wrapped.SUMMARY
        self.OPTION_SPACE = wrapped.OPTION_SPACE
        self.cheap = False
        self.fallback = False
        self.ENTRY = wrapped.ENTRY
        self.entry = wrapped.ENTRY.__name__
        self.energy = None
        self.energy_fn = None
        self.answer = "exact"

    def source(self, options: dict) -> str:
        return self.wrapped.source(options) + "\n\n" + render(ADAPTER_IMPORTS, self.wrapped.FUNCTIONS)

    def applies(self, view) -> str | None:
        return self.wrapped.applies(view)

    def claims(self, view, options):
        return self.wrapped.claims(view, options)

    def tune(self, states) -> dict:
        return self.wrapped.tune(states)


SOLVERS = {s.NAME: s for s in (
    ModuleSolver(product, cheap=True), ModuleSolver(kaufman, cheap=True), ModuleSolver(magnetisation, cheap=True),
    *(AdaptedTemplate(t) for t in TEMPLATE_SOLVERS), ModuleSolver(elimination), ModuleSolver(enumeration))}
CHEAP = tuple(s for s in SOLVERS.values() if s.cheap)
ANSWER_SOLVERS = {s.NAME: s for s in (ModuleSolver(mean_field), ModuleSolver(tree_reweighted),
                                      ModuleSolver(boundary_mps))}


def get_solver(name: str):
    if name in SOLVERS:
        return SOLVERS[name]
    if name in ANSWER_SOLVERS:
        return ANSWER_SOLVERS[name]
    raise KeyError(f"unknown solver {name!r}; known: {', '.join(SOLVERS)}")
