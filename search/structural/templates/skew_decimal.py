"""Signed Pfaffians of sparse skew-symmetric matrices in decimal arithmetic of any precision: the
multifrontal skew elimination of ``skew_elimination`` (the same nested dissection, the same
threshold pivoting), each front a numpy object array of ``decimal.Decimal`` numbers.

Not a template: helper functions that the torus_pfaffian solver (and, for single fronts, the planar
Pfaffian's cold_decimal route) renders into its programs, on top
of ``skew_elimination`` (ordering, tree) and ``skew_sign`` (the sign of a pivot sequence).

Why. The four-Pfaffian torus adds four sectors with signs, W_c = (1/4) sum_s (+-) Pf(A_s), so a class
far below the likeliest (a logical error at low p: 1e-30 .. 1e-5000 of it) needs each Pfaffian to
about log10(max |Pf| / W_c) + 10 digits. The class sum itself is a polynomial with nonnegative
coefficients in the weights (well conditioned): only the four-sector sum cancels, so digits buy it
back. Decimal (the C libmpdec) has an exponent range of 10^+-(10^18): weights exp(-2|K|) like 1e-300
and their products are no problem, as they are in float64.

Cost. The work is the float route's (O(N^1.5) for a torus, the root front about 4 L nodes, eliminated
once per matrix) with every operation a Decimal one: about 1 us at 50 digits, 30 us at 1000 (a
multiplication). Each pivot's rank-2 update touches only the rows where its two columns are nonzero.

A matrix is given by a shared pattern (scipy CSR ``P`` whose data are the 1-based ids of its stored
entries) and, per matrix, an object array of the entries' values in id order.
"""

from __future__ import annotations

import decimal
import math

import numpy as np
from scipy.sparse import coo_matrix

from search.structural.templates.skew_elimination import (_csr_entries, _dissection, _node_groups, _stored_pattern,
                                                          _tree_ranks)
from search.structural.templates.skew_sign import _permutation_parity

#: a pair is an acceptable pivot when |S_ij| * this >= the largest entry of rows i and j (threshold 0.01)
SD_THRESHOLD_INV = 100


def _sd_context(prec):
    """A decimal context of ``prec`` digits with the widest exponent range (weights like 1e-300, and
    products of thousands of them, stay normal)."""
    return decimal.Context(prec=int(prec), Emin=decimal.MIN_EMIN, Emax=decimal.MAX_EMAX,
                           traps=[decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow])


def _sd_pattern(rows, cols, n):
    """(P, order): P a CSR pattern of the entries (rows[k], cols[k]) whose data are k + 1; ``order``
    maps P's stored entries back to k (so values[order] are the values in P's order)."""
    P = coo_matrix((np.arange(1, len(rows) + 1, dtype=np.float64), (rows, cols)), shape=(n, n)).tocsr()
    return P, P.data.astype(np.int64) - 1


def _sd_assemble_front(P, data, rank, pos, own, parts):
    """``_assemble_front`` in Decimal: the dense object front of tree node ``own`` (its own nodes,
    the nodes its children delayed, every later node they touch), original entries (values ``data``,
    aligned with P's stored entries) and the children's Schur complements ``parts`` [(nodes, delayed
    count, S)] added in. Returns (front nodes, S, number of fully summed nodes); ``pos`` is -1
    everywhere, restored."""
    full = np.concatenate([own] + [idx[:nd] for idx, nd, _ in parts]).astype(np.int64)
    rows, at = _csr_entries(P, own)
    i, j, a = own[rows], P.indices[at], data[at]
    up = rank[j] > rank[i]                                 # original entries, each assembled once
    i, j, a = i[up], j[up], a[up]
    pos[full] = np.arange(len(full))
    later = np.concatenate([j] + [idx[nd:] for idx, nd, _ in parts]).astype(np.int64)
    later = np.unique(later[pos[later] < 0])
    front = np.concatenate([full, later[np.argsort(rank[later], kind="stable")]])
    pos[front] = np.arange(len(front))
    f = len(front)
    S = np.zeros((f, f), dtype=object)
    S[pos[i], pos[j]] = S[pos[i], pos[j]] + a
    S[pos[j], pos[i]] = S[pos[j], pos[i]] - a
    for idx, _, U in parts:                                # children's Schur complements
        sub = np.ix_(pos[idx], pos[idx])
        S[sub] = S[sub] + U
    pos[front] = -1
    return front, S, len(full)


def _sd_eliminate_front(S, n_full):
    """Eliminate pivot pairs among the first ``n_full`` indices of the object front S (in place,
    exactly skew throughout), by the threshold rule of ``_eliminate_front``. Returns (pivots
    S[2k, 2k + 1] after the swaps, the permutation applied, the number eliminated)."""
    f = S.shape[0]
    perm = np.arange(f)
    pivots = []
    k = 0
    while n_full - k >= 2:
        A = np.abs(S[k:n_full, k:])
        rowmax = A.max(axis=1)
        part = A[:, :n_full - k].argmax(axis=1)
        val = A[np.arange(n_full - k), part]
        ok = (val != 0) & (SD_THRESHOLD_INV * val >= np.maximum(rowmax, rowmax[part]))
        if not ok.any():
            break                                          # no acceptable pair: delay the rest
        i = int(np.argmax(np.where(ok, val, -1)))
        i, j = min(i, int(part[i])) + k, max(i, int(part[i])) + k
        for a, b in ((i, k), (j, k + 1)):
            if a != b:
                S[[a, b]] = S[[b, a]]
                S[:, [a, b]] = S[:, [b, a]]
                perm[[a, b]] = perm[[b, a]]
        p = S[k, k + 1]
        pivots.append(p)
        if f > k + 2:
            u, v = S[k + 2:, k], S[k + 2:, k + 1]
            nz = np.flatnonzero((u != 0) | (v != 0))
            if len(nz) >= 2:
                uu, w = u[nz], v[nz] / p
                D = np.multiply.outer(uu, w)
                sub = np.ix_(nz + k + 2, nz + k + 2)
                S[sub] = S[sub] - (D - D.T)                # S + w u^T - u w^T: the Schur complement
        k += 2
    return pivots, perm, k


def _sd_product(pivots):
    """The product of a list of Decimals (in the current context)."""
    value = decimal.Decimal(1)
    for p in pivots:
        value *= p
    return value


def _sd_sector_pfaffians(P, datas, xy, group, first, second, ctx, shared_ctx=None):
    """[Pf M (Decimal; 0 when numerically singular)] of the four skew matrices datas[2 i + j] (pattern
    ``P``, stored values aligned with P's data) whose entries among the nodes ``first`` depend on j
    only, among ``second`` on i only, and agree everywhere else (a torus's four sectors: the wrap
    edges of one seam, of the other). Everything else is eliminated once along a nested dissection
    of the other nodes (node i at xy[i], ``group`` labels kept together); then whatever those fronts
    delayed, once; then ``first`` once per j, then ``second`` once per (i, j) (each stage's front
    takes what the previous one delayed; the last pivots completely): half the work of eliminating
    the root four times. Pf M = sgn(p_1 q_1 p_2 q_2 ...) prod of the pivots (``skew_sign``). In the
    decimal context ``ctx``; the part shared by the four matrices in ``shared_ctx`` (default ``ctx``).

    Why the shared part may take fewer digits: it is a plain elimination of the interior (the torus
    cut open along both seams, a disk), and its rounding is a backward error on the interior's own
    entries, relative to the products along the elimination (|L||U|): every class sum is a sum of
    positive terms in those weights (a spurious fill entry stands for a path inside the disk, which
    crosses no seam), so each moves relative to itself: E needs the digits of the likeliest class,
    not those of the cancellation. Not so for the seams' stages: their rounding perturbs the dense
    Schur complement on the ports, whose Pfaffian expansion has terms of both signs (measured: a
    first seam's stages in 40 digits moved a class 1e-479 of the largest by 25 %).
    """
    n = P.shape[0]
    if n % 2:
        return [decimal.Decimal(0)] * 4
    first, second = np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64)
    with decimal.localcontext(ctx if shared_ctx is None else shared_ctx):
        pattern = _stored_pattern(P)
        inner = np.setdiff1d(np.arange(n), np.concatenate([first, second]))
        sub = pattern[inner][:, inner].tocsr()
        tree = [(inner[own], kids) for own, kids in _dissection(sub, xy[inner], _node_groups(sub, group[inner]))]
        top = len(tree)
        tree += [(np.zeros(0, dtype=np.int64), [top - 1]), (first, [top]), (second, [top + 1])]
        rank, level = _tree_ranks(tree, n)
        updates, seq, pivots = {}, [], []
        pos = np.full(n, -1, dtype=np.int64)

        def stage(t, data, parts):
            front, S, n_full = _sd_assemble_front(P, data, rank, pos, tree[t][0], parts)
            piv, perm, done = _sd_eliminate_front(S, n_full)
            return front[perm][:done], piv, (front[perm][done:], n_full - done, S[done:, done:].copy())

        for t in np.argsort(level[:top], kind="stable"):   # the dissection's fronts, children first
            nodes, piv, updates[t] = stage(t, datas[0], [updates.pop(c) for c in tree[t][1]])
            seq.append(nodes)
            pivots.extend(piv)
        nodes, piv, rest = stage(top, datas[0], [updates.pop(top - 1)])
        seq.append(nodes)
        shared = _sd_product(pivots + piv)
    out = [None] * 4
    for j in (0, 1):
        with decimal.localcontext(ctx):
            nodes_j, piv_j, rest_j = stage(top + 1, datas[j], [rest])
            value_j = shared * _sd_product(piv_j)
            for i in (0, 1):
                nodes_ij, piv_ij, _ = stage(top + 2, datas[2 * i + j], [rest_j])
                order = np.concatenate(seq + [nodes_j, nodes_ij]).astype(np.int64)
                if len(order) != n or len(np.unique(order)) != n:
                    out[2 * i + j] = decimal.Decimal(0)
                    continue
                value = value_j * _sd_product(piv_ij)
                out[2 * i + j] = -value if _permutation_parity(order) else value
    return out


#: what a program that eliminates single Decimal fronts renders (``cold_decimal``)
FRONT_FUNCTIONS = (_sd_context, _sd_pattern, _sd_assemble_front, _sd_eliminate_front)
FUNCTIONS = FRONT_FUNCTIONS + (_sd_product, _sd_sector_pfaffians)


def constants() -> str:
    return f"SD_THRESHOLD_INV = {SD_THRESHOLD_INV!r}\n"
