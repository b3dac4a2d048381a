"""Exact oracle method ``forest``: acyclic zero-field graph, Z = 2^n prod cosh(beta J), O(n) (:mod:`evaluators.oracles.closed_forms`)."""

from __future__ import annotations

import sys

from evaluators.oracles.methods import register

NAME = "forest"
ORDER = 30
SUMMARY = "acyclic zero-field graph, Z = 2^n prod cosh(beta J), O(n)"


def applies(model) -> str | None:
    """None when the method applies to ``model`` (an IsingModel), else why not."""
    from evaluators.oracles.closed_forms import forest_applies  # lazy: a method's module loads when it is first asked
    return forest_applies(model)


def log_z(model) -> float:
    """Exact natural log Z of ``model`` at its beta."""
    from evaluators.oracles.closed_forms import forest_log_z  # lazy: as in applies
    return float(forest_log_z(model))


register(sys.modules[__name__])
