"""Exact oracle method ``planar``: zero-field planar graphs, dual Kasteleyn Pfaffian, multifrontal skew elimination (double-double at low T) (:mod:`evaluators.oracles.planar`)."""

from __future__ import annotations

import sys

from evaluators.oracles.methods import register

NAME = "planar"
ORDER = 50
SUMMARY = "zero-field planar graphs, dual Kasteleyn Pfaffian, multifrontal skew elimination (double-double at low T)"


def applies(model) -> str | None:
    """None when the method applies to ``model`` (an IsingModel), else why not."""
    from evaluators.oracles.planar import planar_applies  # lazy: a method's module loads when it is first asked
    return planar_applies(model)


def log_z(model) -> float:
    """Exact natural log Z of ``model`` at its beta."""
    from evaluators.oracles.planar import planar_log_z  # lazy: as in applies
    return float(planar_log_z(model))


register(sys.modules[__name__])
