"""Exact oracle method ``transfer_matrix``: site-by-site transfer matrix, O(n 2^width) (:mod:`evaluators.oracles.transfer_matrix`)."""

from __future__ import annotations

import sys

from evaluators.oracles.methods import register

NAME = "transfer_matrix"
ORDER = 80
SUMMARY = "site-by-site transfer matrix, O(n 2^width)"


def applies(model) -> str | None:
    """None when the method applies to ``model`` (an IsingModel), else why not."""
    from evaluators.oracles.transfer_matrix import transfer_matrix_applies  # lazy: a method's module loads when it is first asked
    return transfer_matrix_applies(model)


def log_z(model) -> float:
    """Exact natural log Z of ``model`` at its beta."""
    from evaluators.oracles.transfer_matrix import transfer_matrix_log_z  # lazy: as in applies
    return float(transfer_matrix_log_z(model))


register(sys.modules[__name__])
