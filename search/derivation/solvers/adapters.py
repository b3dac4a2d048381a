"""The two shapes a derivation solver comes in, behind one interface: a solver written as a module
of this package (:class:`ModuleSolver`), and a structural template with its adapter
(:class:`AdaptedTemplate`, search/derivation/solvers/templates.py).

Both expose ``NAME``, ``SUMMARY``, ``OPTION_SPACE``, ``ORDER`` (where a search tries it), ``source(options)``
(its program text), ``ENTRY`` and ``entry`` (its runtime function ``(model, options) -> log Z without the
shift`` and its name), ``energy`` (the function for a mean energy, or None), ``applies(view)``,
``claims(view, options) -> (class labels, complexity, justification, cost rank)``, ``tune(states)``, and
three declared capabilities: ``cheap`` (its ENTRY is tried on every view state, so "applies" means the
code that will run accepts every instance), ``fallback`` (a generic method that a named mapping of
the same growth outranks, engine._plan) and ``step_check`` (the models it is the exact finisher of a
derivation step's check for: "any" small model, "pairwise" models of any size, or "large" models with
multi-spin terms beyond enumeration; None: none).
"""

from __future__ import annotations

from search.structural.templates import render

#: what a solver module declares (module-level names); ENERGY, FALLBACK, STEP_CHECK and CONSTANTS are optional
MODULE_SOLVER_PROTOCOL = ("NAME", "SUMMARY", "OPTION_SPACE", "IMPORTS", "FUNCTIONS", "ENTRY", "ORDER", "CHEAP",
                          "applies", "claims")


class ModuleSolver:
    """A solver written as a module of this package."""

    def __init__(self, module):
        missing = [a for a in MODULE_SOLVER_PROTOCOL if not hasattr(module, a)]
        if missing:
            raise TypeError(f"solver module {module.__name__} does not declare {', '.join(missing)}")
        self.module = module
        self.NAME, self.SUMMARY, self.OPTION_SPACE = module.NAME, module.SUMMARY, module.OPTION_SPACE
        self.ORDER = module.ORDER
        self.cheap = bool(module.CHEAP)
        self.fallback = bool(getattr(module, "FALLBACK", False))
        self.step_check = getattr(module, "STEP_CHECK", None)
        self.ENTRY = module.ENTRY
        self.entry = module.ENTRY.__name__
        self.energy_fn = getattr(module, "ENERGY", None)
        self.energy = self.energy_fn.__name__ if self.energy_fn is not None else None
        #: "exact", or for an answer solver (register_answer) "lower" | "upper" | "approximation"
        self.answer = getattr(module, "ANSWER", "exact")

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

    def __init__(self, wrapped, order: int, adapter_imports: str, step_check: str | None = None):
        self.wrapped = wrapped
        self.NAME, self.SUMMARY, self.OPTION_SPACE = wrapped.NAME, wrapped.SUMMARY, wrapped.OPTION_SPACE
        self.ORDER = order
        self.cheap = False
        self.fallback = False
        self.step_check = step_check
        self.ENTRY = wrapped.ENTRY
        self.entry = wrapped.ENTRY.__name__
        self.energy = None
        self.energy_fn = None
        self.answer = "exact"
        self._imports = adapter_imports

    def source(self, options: dict) -> str:
        return self.wrapped.source(options) + "\n\n" + render(self._imports, self.wrapped.FUNCTIONS)

    def applies(self, view) -> str | None:
        return self.wrapped.applies(view)

    def claims(self, view, options):
        return self.wrapped.claims(view, options)

    def tune(self, states) -> dict:
        return self.wrapped.tune(states)
