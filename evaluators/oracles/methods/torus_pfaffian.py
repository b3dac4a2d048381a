"""Exact oracle method ``torus_pfaffian``: a zero-field nearest-neighbour torus with any couplings, by four
Kasteleyn Pfaffians, dense then sparse (:mod:`evaluators.oracles.torus_pfaffian`)."""

from __future__ import annotations

import sys

from evaluators.oracles.methods import register

NAME = "torus_pfaffian"
ORDER = 60
SUMMARY = "zero-field nearest-neighbour torus with any couplings: dual domain walls, four Kasteleyn Pfaffians (periodic/antiperiodic sectors): dense O(n^3) to n = 100, then sparse nested dissection with signs in double-double, O(n^1.5)"


def applies(model) -> str | None:
    """None when the method applies to ``model`` (an IsingModel), else why not."""
    from evaluators.oracles.torus_pfaffian import torus_pfaffian_applies  # lazy: a method's module loads when it is first asked
    return torus_pfaffian_applies(model)


def log_z(model) -> float:
    """Exact natural log Z of ``model`` at its beta."""
    from evaluators.oracles.torus_pfaffian import torus_pfaffian_log_z  # lazy: as in applies
    return float(torus_pfaffian_log_z(model))


register(sys.modules[__name__])
