"""Exact oracle method ``mattis``: rank-one (Mattis / Curie-Weiss) sum over magnetisation, O(n) (:mod:`evaluators.oracles.closed_forms`)."""

from __future__ import annotations

import sys

from evaluators.oracles.methods import register

NAME = "mattis"
ORDER = 10
SUMMARY = "rank-one (Mattis / Curie-Weiss) sum over magnetisation, O(n)"


def applies(model) -> str | None:
    """None when the method applies to ``model`` (an IsingModel), else why not."""
    from evaluators.oracles.closed_forms import mattis_applies  # lazy: a method's module loads when it is first asked
    return mattis_applies(model)


def log_z(model) -> float:
    """Exact natural log Z of ``model`` at its beta."""
    from evaluators.oracles.closed_forms import mattis_log_z  # lazy: as in applies
    return float(mattis_log_z(model))


register(sys.modules[__name__])
