"""Exact oracle method ``tensor_network``: tensor-network contraction (cotengra), O(n 2^width) (:mod:`evaluators.oracles.tensor_network`)."""

from __future__ import annotations

import sys

from evaluators.oracles.methods import register

NAME = "tensor_network"
ORDER = 90
SUMMARY = "tensor-network contraction (cotengra), O(n 2^width)"


def applies(model) -> str | None:
    """None when the method applies to ``model`` (an IsingModel), else why not."""
    from evaluators.oracles.tensor_network import tensor_network_applies  # lazy: a method's module loads when it is first asked
    return tensor_network_applies(model)


def log_z(model) -> float:
    """Exact natural log Z of ``model`` at its beta."""
    from evaluators.oracles.tensor_network import tensor_network_log_z  # lazy: as in applies
    return float(tensor_network_log_z(model))


register(sys.modules[__name__])
