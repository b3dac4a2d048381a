"""Exact oracle method ``chain``: open or periodic chain, 2x2 transfer matrices, O(n) (:mod:`evaluators.oracles.closed_forms`)."""

from __future__ import annotations

import sys

from evaluators.oracles.methods import register

NAME = "chain"
ORDER = 20
SUMMARY = "open or periodic chain, 2x2 transfer matrices, O(n)"


def applies(model) -> str | None:
    """None when the method applies to ``model`` (an IsingModel), else why not."""
    from evaluators.oracles.closed_forms import chain_applies  # lazy: a method's module loads when it is first asked
    return chain_applies(model)


def log_z(model) -> float:
    """Exact natural log Z of ``model`` at its beta."""
    from evaluators.oracles.closed_forms import chain_log_z  # lazy: as in applies
    return float(chain_log_z(model))


register(sys.modules[__name__])
