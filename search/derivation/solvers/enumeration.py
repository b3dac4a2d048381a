"""Honest brute force over every configuration, for terms of any order and rank-one blocks.

Configurations are the binary digits of 0 .. 2^n - 1 (bit i -> spin i, 1 -> -1), a chunk at a time,
folded into a running log-sum-exp; the mean energy is the same sum weighted by -sum K prod s / beta.
Exact and exponential: O(m 2^n). It is what a derivation ends with when nothing polynomial applies,
and what the engine runs inside the sandbox to check a step on small instances.
"""

from __future__ import annotations

import sys

import numpy as np
from search.derivation.solvers import register
from search.derivation.solvers.adapters import ModuleSolver

NAME = "enumeration"
SUMMARY = "every configuration (exponential: the honest fallback)"
OPTION_SPACE = {"chunk": (1 << 14, 1 << 12)}
ORDER = 90                 # where a derivation search tries it among the solvers
CHEAP = False
IMPORTS = """\
import numpy as np
"""
#: a model with more spins than this is refused (2^n configurations)
MAX_SPINS = 30
CONSTANTS = f"MAX_SPINS = {MAX_SPINS}\n"


def _sol_enumeration_sums(model, options):
    """(log Z, <sum K prod s>) by enumeration (without the model's shift)."""
    n = model["n"]
    if n > MAX_SPINS:
        raise MemoryError(f"enumerating 2^{n} configurations is out of reach")
    chunk = int(options.get("chunk", 1 << 14))
    bits = np.arange(n, dtype=np.int64)
    best, acc, first = -np.inf, 0.0, 0.0
    for start in range(0, 1 << n, chunk):
        idx = np.arange(start, min(start + chunk, 1 << n), dtype=np.int64)
        s = 1.0 - 2.0 * ((idx[:, None] >> bits) & 1)
        x = np.zeros(len(idx))
        for t, w in model["terms"]:
            x = x + np.prod(s[:, t], axis=2) @ w
        for u, a in model["rank_one"]:
            x = x + 0.5 * a * ((s @ u) ** 2 - float(u @ u))
        top = float(x.max())
        if top > best:
            scale = np.exp(best - top) if np.isfinite(best) else 0.0
            acc, first, best = acc * scale, first * scale, top
        e = np.exp(x - best)
        acc += float(e.sum())
        first += float(e @ x)
    return best + float(np.log(acc)), first / acc


def _sol_enumeration(model, options):
    """log Z by enumerating all 2^n configurations."""
    return _sol_enumeration_sums(model, options)[0]


def _sol_enumeration_energy(model, options):
    """The mean energy at the model's beta (> 0) by enumeration, energy shift included."""
    return float(model["energy_shift"] - _sol_enumeration_sums(model, options)[1] / model["beta"])


FUNCTIONS = (_sol_enumeration_sums, _sol_enumeration, _sol_enumeration_energy)
ENTRY = _sol_enumeration
ENERGY = _sol_enumeration_energy


def applies(view) -> str | None:
    if view.kind != "model":
        return "there is no spin model yet"
    return None


def claims(view, options):
    return (("no_efficient_known",), "O(n 2^n)",
            "No transformation of the library led to a polynomial method: the program enumerates all 2^n "
            "configurations (vectorised in chunks, in logs). Exact but exponential in n.", 2)


register(ModuleSolver(sys.modules[__name__]))
