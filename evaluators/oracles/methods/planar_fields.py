"""Exact oracle method ``planar_fields``: fields on the spins of one face of a planar graph, through a ghost spin (:mod:`evaluators.oracles.planar`)."""

from __future__ import annotations

import sys

from evaluators.oracles.methods import register

NAME = "planar_fields"
ORDER = 85   # after the elimination and the transfer matrix, which take a tree or a strip in fields at any beta
SUMMARY = "fields on one face of a planar graph: a ghost spin coupled by the fields, then the planar Pfaffian"


def applies(model) -> str | None:
    """None when the method applies to ``model`` (an IsingModel), else why not."""
    from evaluators.oracles.planar import planar_fields_applies  # lazy: a method's module loads when it is first asked
    return planar_fields_applies(model)


def log_z(model) -> float:
    """Exact natural log Z of ``model`` at its beta."""
    from evaluators.oracles.planar import planar_fields_log_z  # lazy: as in applies
    return float(planar_fields_log_z(model))


register(sys.modules[__name__])
