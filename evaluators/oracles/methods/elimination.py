"""Exact oracle method ``elimination``: variable elimination in log space along a min-fill / min-degree order, O(n 2^width) (:mod:`evaluators.oracles.elimination`)."""

from __future__ import annotations

import sys

from evaluators.oracles.methods import register

NAME = "elimination"
ORDER = 70
SUMMARY = "variable elimination in log space along a min-fill / min-degree order, O(n 2^width)"


def applies(model) -> str | None:
    """None when the method applies to ``model`` (an IsingModel), else why not."""
    from evaluators.oracles.elimination import elimination_applies  # lazy: a method's module loads when it is first asked
    return elimination_applies(model)


def log_z(model) -> float:
    """Exact natural log Z of ``model`` at its beta."""
    from evaluators.oracles.elimination import elimination_log_z  # lazy: as in applies
    return float(elimination_log_z(model))


register(sys.modules[__name__])
