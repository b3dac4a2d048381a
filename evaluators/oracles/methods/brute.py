"""Exact oracle method ``brute``: Gray-code enumeration, O(2^n) (:mod:`evaluators.oracles.brute`)."""

from __future__ import annotations

import sys

from evaluators.oracles.methods import register

NAME = "brute"
ORDER = 100
SUMMARY = "Gray-code enumeration, O(2^n)"
#: brute force is milliseconds up to this n and the most trustworthy method: tried right after the
#: closed forms there (EARLY_ORDER), last beyond it
EARLY_UP_TO_N = 20
EARLY_ORDER = 45


def applies(model) -> str | None:
    """None when the method applies to ``model`` (an IsingModel), else why not."""
    from evaluators.oracles.brute import brute_applies  # lazy: a method's module loads when it is first asked
    return brute_applies(model)


def log_z(model) -> float:
    """Exact natural log Z of ``model`` at its beta."""
    from evaluators.oracles.brute import brute_log_z  # lazy: as in applies
    return float(brute_log_z(model))


register(sys.modules[__name__])
