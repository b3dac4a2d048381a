"""The Pfaffian of a sparse skew-symmetric matrix with its sign, as sign * (hi + lo) * 2^e in
double-double (numpy only): the four-Pfaffian torus program adds four sectors with signs, and a
class far below the likeliest needs more digits of each Pfaffian than a log in a double keeps.

Not a template: helper functions that the torus_pfaffian solver renders into its programs, on top
of ``skew_elimination`` (the multifrontal double-double elimination of the planar programs).

The sign. Eliminating pivot pairs (p_1, q_1), (p_2, q_2), ... of matrix nodes, each pivot S_k[p_k, q_k]
the entry of the Schur complement at that step, gives Pf A = sgn(sigma) prod_k S_k[p_k, q_k] with
sigma = (p_1 q_1 p_2 q_2 ...): Pf(P A P^T) = det P Pf A, and a leading 2 x 2 block [[0, a], [-a, 0]]
factors out as a times the Pfaffian of its Schur complement. Exchanging whole pairs is an even
permutation, so the order of the fronts does not matter. Each front of ``skew_elimination`` leaves
pair k at its positions (2k, 2k + 1) with the pivot still at S[2k, 2k + 1].

Several matrices at once. The torus's four sectors differ only in the entries of the wrap edges
(4 L port nodes): those nodes are made the root of the dissection, so everything below the root is
eliminated once and only the root front (about 4 L nodes plus what was delayed to it) four times.
"""

from __future__ import annotations

import math

import numpy as np


from search.structural.templates.double_double import _dd_mul
from search.structural.templates.skew_elimination import (_assemble_front, _dissection, _eliminate_front, _eliminate_many,
                                                          _node_groups, _stored_pattern, _tree_ranks)


def _permutation_parity(seq):
    """0 for an even permutation of 0 .. n-1, 1 for an odd one (by its cycles)."""
    n = len(seq)
    seen = np.zeros(n, dtype=bool)
    cycles = 0
    for s in range(n):
        if not seen[s]:
            cycles += 1
            x = s
            while not seen[x]:
                seen[x] = True
                x = seq[x]
    return (n - cycles) % 2


def _skew_signed_pfaffians(mats, xy, group, last):
    """[(sign, hi, lo, e)] with Pf M = sign * (hi + lo) * 2^e (hi in [0.5, 1); sign 0: numerically
    singular) for sparse skew-symmetric matrices ``mats`` (scipy) that differ only in entries among
    the nodes ``last``: everything else is eliminated once, along a nested dissection of the other
    nodes (node i at xy[i], ``group`` labels kept together), and each matrix's own root front (the
    nodes ``last`` and whatever was delayed to them) is assembled from the shared Schur complements
    and eliminated with complete pivoting. Pf M = sgn(sigma) prod of the pivots (see above)."""
    A = mats[0].tocsr()
    n = A.shape[0]
    if n % 2:
        return [(0.0, 0.0, 0.0, 0)] * len(mats)
    pattern = _stored_pattern(A)
    inner = np.setdiff1d(np.arange(n), last)
    sub = pattern[inner][:, inner].tocsr()
    tree = [(inner[own], kids) for own, kids in _dissection(sub, xy[inner], _node_groups(sub, group[inner]))]
    tree.append((np.asarray(last, dtype=np.int64), [len(tree) - 1]))
    rank, level = _tree_ranks(tree, n)
    updates, logs, shared = {}, [], []
    pos = np.full(n, -1, dtype=np.int64)
    for lv in range(int(level.max())):                     # every level but the root's
        ts = np.flatnonzero(level == lv)
        fronts = [_assemble_front(A, rank, pos, tree[t][0], [updates.pop(c) for c in tree[t][1]]) for t in ts]
        lg, out = _eliminate_many([(H, L, n_full, None) for _, H, L, n_full, _ in fronts])
        logs.extend(lg)
        for t, (front, _, _, n_full, _), (perm, done, H, L, _) in zip(ts, fronts, out):
            ks = np.arange(0, done, 2)
            shared.append((front[perm][:done], H[ks, ks + 1], L[ks, ks + 1]))
            updates[t] = (front[perm][done:], n_full - done, H[done:, done:].copy(), L[done:, done:].copy(), None)
    parts = [updates.pop(c) for c in tree[-1][1]]
    results = []
    for M in mats:
        front, H, L, n_full, _ = _assemble_front(M.tocsr(), rank, pos, tree[-1][0], parts)
        _, perm, done = _eliminate_front(H, L, n_full)
        ks = np.arange(0, done, 2)
        results.append(_signed_product(shared + [(front[perm][:done], H[ks, ks + 1], L[ks, ks + 1])], n))
    return results


def _signed_product(record, n):
    """(sign, hi, lo, e) of sgn(sigma) * prod of the pivots, from [(eliminated nodes in pivot order,
    pivot highs, pivot lows)]; sign 0 unless every node was eliminated."""
    seq = np.concatenate([nodes for nodes, _, _ in record]).astype(np.int64)
    hi = np.concatenate([h for _, h, _ in record])
    lo = np.concatenate([low for _, _, low in record])
    if len(seq) != n or len(np.unique(seq)) != n or np.any(hi == 0.0):
        return 0.0, 0.0, 0.0, 0
    sign = -1.0 if (_permutation_parity(seq) + int(np.sum(hi < 0.0))) % 2 else 1.0
    lo = np.where(hi < 0.0, -lo, lo)
    hi = np.abs(hi)
    mh, ml, e = 1.0, 0.0, 0
    for k in range(len(hi)):
        mh, ml = _dd_mul(mh, ml, float(hi[k]), float(lo[k]))
        mh, s = math.frexp(mh)
        ml = math.ldexp(ml, -s)
        e += s
    return sign, float(mh), float(ml), e


FUNCTIONS = (_permutation_parity, _skew_signed_pfaffians, _signed_product)
