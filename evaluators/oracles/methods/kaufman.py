"""Exact oracle method ``kaufman``: homogeneous torus, Kaufman's exact finite-size solution, O(L) (:mod:`evaluators.oracles.kaufman`)."""

from __future__ import annotations

import sys

from evaluators.oracles.methods import register

NAME = "kaufman"
ORDER = 40
SUMMARY = "homogeneous torus, Kaufman's exact finite-size solution, O(L)"


def applies(model) -> str | None:
    """None when the method applies to ``model`` (an IsingModel), else why not."""
    from evaluators.oracles.kaufman import kaufman_applies  # lazy: a method's module loads when it is first asked
    return kaufman_applies(model)


def log_z(model) -> float:
    """Exact natural log Z of ``model`` at its beta."""
    from evaluators.oracles.kaufman import kaufman_log_z  # lazy: as in applies
    return float(kaufman_log_z(model))


register(sys.modules[__name__])
