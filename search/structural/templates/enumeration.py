"""Honest brute force: every configuration, vectorised with numpy in chunks.

Configurations are the binary digits of 0 .. 2^n - 1 (bit i -> spin i, 1 -> -1), a chunk at a
time; -beta H of a chunk is a few matrix products (couplings over the edge list, fields, the
rank-one blocks as (u.s)^2), folded into a running log-sum-exp. With no fields the global flip
halves the work (the last spin fixed to +1). O(m 2^n) time, O(chunk m) memory: exact, and
exponential in n.
"""

from __future__ import annotations

import sys

import numpy as np

from search.structural.templates import Claims, render, register

NAME = "enumeration"
#: the order in which the structural proposer tries templates when no plan is preferred by structure
ORDER = 60
OPTION_SPACE = {
    "chunk": (1 << 14, 1 << 12, 1 << 16),
    "flip_symmetry": (True, False),
}
IMPORTS = """\
import numpy as np
"""


def _method_log_z(edges, J, h, rank_one, positions, beta, n, options):
    """Natural log Z by enumerating all 2^n configurations."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    J = np.asarray(J, dtype=np.float64).reshape(-1)
    h = np.asarray(h, dtype=np.float64).reshape(-1)
    blocks = [(np.asarray(u, dtype=np.float64).reshape(-1), float(a)) for u, a in rank_one]
    flip = bool(options.get("flip_symmetry", True)) and not np.any(h != 0.0)
    free = n - 1 if flip else n                      # with the flip symmetry the last spin stays +1
    chunk = int(options.get("chunk", 1 << 14))
    bits = np.arange(free, dtype=np.int64)
    best, acc = -np.inf, 0.0                         # running log-sum-exp: exp(best) * acc
    for start in range(0, 1 << free, chunk):
        idx = np.arange(start, min(start + chunk, 1 << free), dtype=np.int64)
        s = np.ones((len(idx), n))
        s[:, :free] = 1.0 - 2.0 * ((idx[:, None] >> bits) & 1)
        x = (s[:, edges[:, 0]] * s[:, edges[:, 1]]) @ J + s @ h
        for u, a in blocks:
            x = x + 0.5 * a * ((s @ u) ** 2 - float(u @ u))
        x = beta * x
        top = float(x.max())
        if top > best:
            acc = acc * np.exp(best - top) if np.isfinite(best) else 0.0
            best = top
        acc += float(np.sum(np.exp(x - best)))
    return best + float(np.log(acc)) + (np.log(2.0) if flip else 0.0)


FUNCTIONS = (_method_log_z,)


def source(options: dict) -> str:
    return render(IMPORTS, FUNCTIONS)


def applies(view) -> str | None:
    if view.max_order > 2:
        return "terms on three or more spins: the template evaluates pair, field and rank-one energies"
    return None


def claims(view, options: dict) -> Claims:
    return Claims(
        tractable_class="no_efficient_known",
        complexity_O="O(n 2^n)",
        confidence=0.6,
        justification=("No structure of the library is used: the code enumerates all 2^n spin configurations "
                       "(vectorised in chunks, halved by the global spin flip when there are no fields) and sums "
                       "exp(-beta H) in log domain. It is exact but exponential in n, so it is labelled honestly."),
        cost_rank=2,
    )


register(sys.modules[__name__])
