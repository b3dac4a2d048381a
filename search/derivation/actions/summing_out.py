"""Summing out spins with few neighbours: the runtime shared by degree_one, decoration and star_triangle.

For a spin sigma whose terms reach the d spins N = (a_1 .. a_d) (d <= 3), the terms containing sigma
sum to sigma g(s_N), so summing sigma leaves f(s_N) = log 2cosh g(s_N) (docs/derivations.md, "Summing
out a spin"). A function on {+-1}^d is exactly its multilinear expansion, coefficient of prod_{j in T} s_j =
2^-d sum_s f(s) prod_{j in T} s_j: a constant (into log_shift), fields, pair couplings and, for d = 3
with a field or a higher term on sigma, one 3-spin term. f is even when g is odd; the odd coefficients
are then taken from (f(s) - f(-s))/2, which is exactly zero, so a zero-field decoration makes no field.

Which spins: every spin with exactly d neighbours that is in no rank-one block, taken greedily in index
order so that no two chosen spins are neighbours (their terms are then disjoint and all are summed out
in one vectorised pass); with ``repeat`` the pass is repeated until no such spin is left. The summed
spins leave the model (the rest is renumbered in order; the drawing keeps its points).
"""

from __future__ import annotations

import numpy as np

from search.derivation.runtime import _rt_compact, _rt_merge, _rt_neighbour_pairs

IMPORTS = """\
import numpy as np
"""


def _so_choose(model, degree):
    """(chosen spins, their sorted neighbours (c, degree)): spins with exactly ``degree`` neighbours, no
    two of them neighbours, none in a rank-one block."""
    n = model["n"]
    a, b = _rt_neighbour_pairs(model)
    src, dst = np.r_[a, b], np.r_[b, a]
    order = np.lexsort((dst, src))
    src, dst = src[order], dst[order]
    start = np.searchsorted(src, np.arange(n + 1))
    deg = np.diff(start)
    blocked = np.zeros(n, dtype=bool)
    for u, _ in model["rank_one"]:
        blocked |= u != 0.0
    chosen = []
    for v in np.flatnonzero((deg == degree) & ~blocked):
        if not blocked[v]:
            chosen.append(v)
            blocked[v] = True
            blocked[dst[start[v]:start[v + 1]]] = True
    chosen = np.asarray(chosen, dtype=np.int64)
    nbrs = dst[start[chosen][:, None] + np.arange(degree)] if len(chosen) else np.zeros((0, degree), dtype=np.int64)
    return chosen, nbrs


def _so_sum_out(model, chosen, nbrs):
    """The model with the spins ``chosen`` summed out (their neighbours ``nbrs``, rows sorted)."""
    n, d = model["n"], nbrs.shape[1]
    row = np.full(n, -1, dtype=np.int64)
    row[chosen] = np.arange(len(chosen))
    configs = np.arange(1 << d)
    G = np.zeros((len(chosen), 1 << d))
    keys = (np.arange(len(chosen))[:, None] * n + nbrs).ravel()
    kept, g_odd = [], np.ones(len(chosen), dtype=bool)
    for idx, w in model["terms"]:
        hit = row[idx]
        touched = np.any(hit >= 0, axis=1)
        kept.append((idx[~touched], w[~touched]))
        k = idx.shape[1]
        for x in range(k):
            sel = np.flatnonzero(hit[:, x] >= 0)
            r = hit[sel, x]
            mask = np.zeros(len(sel), dtype=np.int64)
            for y in range(k):
                if y != x:
                    pos = np.searchsorted(keys, r * n + idx[sel, y]) - r * d
                    mask |= np.left_shift(1, pos)
            parity = np.zeros((len(sel), 1 << d), dtype=np.int64)
            for p in range(d):
                parity ^= ((configs[None, :] & mask[:, None]) >> p) & 1
            np.add.at(G, r, w[sel, None] * (1.0 - 2.0 * parity))
            np.logical_and.at(g_odd, r, np.full(len(sel), k % 2 == 0))  # sigma times an odd product of others
    f = np.logaddexp(G, -G)
    flip = (1 << d) - 1 - configs
    sym, anti = 0.5 * (f + f[:, flip]), 0.5 * (f - f[:, flip])
    anti[g_odd] = 0.0                                 # g odd: f(-s) = f(s) exactly, no odd coefficients
    chi = 1.0 - 2.0 * (np.array([[bin(c & S).count("1") % 2 for S in configs] for c in configs]))
    size = np.array([bin(S).count("1") for S in configs])
    coef = np.where(size % 2 == 0, sym @ chi, anti @ chi) / (1 << d)
    parts = list(kept)
    for S in range(1, 1 << d):
        bits = [p for p in range(d) if (S >> p) & 1]
        parts.append((nbrs[:, bits], coef[:, S]))
    keep = np.ones(n, dtype=bool)
    keep[chosen] = False
    out = _rt_compact({**model, "terms": _rt_merge(parts)}, keep)
    out["log_shift"] = model["log_shift"] + float(coef[:, 0].sum())
    return out


def _so_pass(model, degree, repeat):
    """Sum out degree-``degree`` spins (one pass, or passes until none is left)."""
    while True:
        chosen, nbrs = _so_choose(model, degree)
        if len(chosen) == 0:
            return model
        model = _so_sum_out(model, chosen, nbrs)
        if not repeat:
            return model


FUNCTIONS = (_so_choose, _so_sum_out, _so_pass)


def degree_counts(view_states) -> set[int]:
    """The neighbour counts (0..3) that some spin outside rank-one blocks has, in any state."""
    found = set()
    for m in view_states:
        n = m["n"]
        a, b = _rt_neighbour_pairs(m)
        deg = np.bincount(np.r_[a, b], minlength=n)
        blocked = np.zeros(n, dtype=bool)
        for u, _ in m["rank_one"]:
            blocked |= u != 0.0
        found |= {int(x) for x in np.unique(deg[~blocked]) if x <= 3}
    return found
