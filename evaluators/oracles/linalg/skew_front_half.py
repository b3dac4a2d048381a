"""The dense front of the multifrontal skew elimination on one triangle: the same 2 x 2 pivots
chosen by size under a threshold as :func:`evaluators.oracles.linalg.skew_front.eliminate_front`, but
the rank-2 Schur update S_ij += (S_qi S_pj - S_pi S_qj) / S_pq is computed for j < i only (the
front is skew, S_ji = -S_ij): half the arithmetic, which is most of the double-double time. The
kernel with a running error bound stays in :mod:`evaluators.oracles.linalg.skew_front` (full storage).

Storage: entry (i, j), i > j, of the active block lives in H[i, j] (its negative is entry (j, i));
the diagonal and the upper triangle are stale until the end, when the remaining block is
mirrored back to full storage for the extend-add. Pivot pairs are swapped to the end of the
active block, so the pivot rows are contiguous rows; a row's statistics (largest entry, largest
fully summed partner) read its part left of the diagonal and its column below it. After a
sparse update the maxima of the changed entries are kept on the way; after a dense one (every
column changed) the update runs in plain contiguous loops and the maxima come from one more pass
(keeping them inside the double-double loop cost 3x the update itself at f = 1000).

The kernel is a sequence of njit steps (:func:`front_start`, :func:`next_pivot`, the update by
:func:`pivot_update` or by :func:`dense_rows` in row ranges, :func:`finish_pivot`,
:func:`front_end`) so that :mod:`evaluators.oracles.linalg.skew_front_split` can run the same steps with
a large dense update shared by threads. A pivot counts as dense (:func:`dense_enough`) when its
rows are at least 3/4 nonzero: the fronts near the root are 99.5% dense but rarely 100%.

Measured (CPU, P04 L = 256, ``evolve perf planar``): 1.2x faster than the full-storage kernel in
double-double at beta = 8; slower at beta = 1 (0.6x: small sparse fronts, where the swaps and the
mirror in half-strided storage cost more than the arithmetic saved) and no faster in float64, so
it is used in double-double only, which the planar oracle runs only cold.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from evaluators.oracles.linalg.double_double import dd_axpy2, dd_div
# a front still in full storage (zero diagonal) has the statistics of the full-storage kernel
from evaluators.oracles.linalg.skew_front import _row_stats as full_row_stats
from evaluators.oracles.linalg.skew_front import choose_pivot, swap_bookkeeping


@njit(cache=True, inline="always")
def _get(H, i, j):
    """Entry (i, j) of the skew matrix stored in the lower triangle of H."""
    if i > j:
        return H[i, j]
    if i < j:
        return -H[j, i]
    return 0.0


@njit(cache=True, inline="always")
def _put(H, i, j, v):
    if i > j:
        H[i, j] = v
    else:
        H[j, i] = -v


@njit(cache=True)
def _row_stats(H, i, na, isfs, rowmax, rmcol, cval, cpart):
    """Largest |entry| of row i in the active block, and its largest fully summed partner
    (columns in ascending order, the first maximum kept, as in the full-storage kernel)."""
    rmax = 0.0
    rc = -1
    pmax = 0.0
    pj = -1
    for j in range(na):
        if j == i:
            continue
        v = abs(H[i, j]) if j < i else abs(H[j, i])
        if v > rmax:
            rmax = v
            rc = j
        if v > pmax and isfs[j]:
            pmax = v
            pj = j
    rowmax[i] = rmax
    rmcol[i] = rc
    cval[i] = pmax
    cpart[i] = pj


@njit(cache=True)
def _swap_lower(H, x, y, na):
    """Entries (i, x) and (i, y) exchanged for every i other than x < y, in lower storage."""
    for i in range(x):
        H[x, i], H[y, i] = H[y, i], H[x, i]
    for i in range(x + 1, y):  # (i, x) is H[i, x]; (i, y) is -H[y, i]
        a = H[i, x]
        H[i, x] = -H[y, i]
        H[y, i] = -a
    for i in range(y + 1, na):
        H[i, x], H[i, y] = H[i, y], H[i, x]


@njit(cache=True)
def _swap(H, L, ext, x, y, na, isfs, loc, rowmax, rmcol, cval, cpart):
    """Exchange positions x and y of the active block (entries and bookkeeping)."""
    if x == y:
        return
    if x > y:
        x, y = y, x
    _swap_lower(H, x, y, na)
    if ext:
        _swap_lower(L, x, y, na)
    H[y, x] = -H[y, x]
    if ext:
        L[y, x] = -L[y, x]
    swap_bookkeeping(x, y, na, isfs, loc, rowmax, rmcol, cval, cpart)


@njit(cache=True)
def _refresh_stats(H, i, na, row_touched, dense, tm, tc, pm, pc, touched, isfs, rowmax, rmcol, cval, cpart):
    """Row i's statistics after an update that changed the touched columns of the touched rows
    (and removed the two pivot columns), given the largest changed entry of row i (tm, at column
    tc) and its largest changed fully summed partner (pm, at pc): these settle the statistics
    unless an old maximum sat in a changed or removed column and the changed entries are now
    smaller; only then is the row scanned again."""
    if not row_touched:  # row unchanged; only the pivot columns left it
        if cpart[i] >= na or rmcol[i] >= na:
            _row_stats(H, i, na, isfs, rowmax, rmcol, cval, cpart)
        return
    tmax, tcol, pmax, pcol = tm[i], tc[i], pm[i], pc[i]
    # an old maximum still holds where it sits in an unchanged column (or the row was empty)
    rm_kept = not dense and (rmcol[i] < 0 or (rmcol[i] < na and not touched[rmcol[i]]))
    cp_kept = not dense and (cpart[i] < 0 or (cpart[i] < na and not touched[cpart[i]]))
    if (not rm_kept and not dense and tmax < rowmax[i]) or (not cp_kept and not dense and pmax < cval[i]):
        _row_stats(H, i, na, isfs, rowmax, rmcol, cval, cpart)
        return
    if dense or not rm_kept or tmax > rowmax[i]:
        rowmax[i] = tmax
        rmcol[i] = tcol
    if dense or not cp_kept or pmax > cval[i]:
        cval[i] = pmax
        cpart[i] = pcol


@njit(cache=True)
def _sparse_update(H, L, ext, p, q, ph, pl, nzj, nz, isfs, tm, tc, pm, pc):
    """S_ij += a_i S_pj - b_i S_qj, a_i = S_qi / S_pq, b_i = S_pi / S_pq, for j < i both among the
    nonzero columns nzj[:nz] of the pivot rows; the largest new |S_ij| of each touched row (and
    its largest fully summed partner) is kept on the way, as :func:`dense_rows` does for a dense update."""
    for t in range(nz):
        i = nzj[t]
        tm[i], tc[i], pm[i], pc[i] = 0.0, -1, 0.0, -1
    for t in range(nz):
        i = nzj[t]
        fs_i = isfs[i]
        if ext:
            ah, al = dd_div(H[q, i], L[q, i], ph, pl)
            bh, bl = dd_div(H[p, i], L[p, i], ph, pl)
        else:
            ah = H[q, i] / ph
            bh = H[p, i] / ph
            al = bl = 0.0
        tmi, tci, pmi, pci = 0.0, -1, 0.0, -1
        for r in range(t):
            j = nzj[r]
            if ext:
                v, lo = dd_axpy2(H[i, j], L[i, j], ah, al, H[p, j], L[p, j], bh, bl, H[q, j], L[q, j])
                H[i, j], L[i, j] = v, lo
            else:
                v = H[i, j] + (ah * H[p, j] - bh * H[q, j])
                H[i, j] = v
            v = abs(v)
            if v > tmi:
                tmi, tci = v, j
            if v > pmi and isfs[j]:
                pmi, pci = v, j
            if v > tm[j]:
                tm[j], tc[j] = v, i
            if v > pm[j] and fs_i:
                pm[j], pc[j] = v, i
        tm[i], tc[i], pm[i], pc[i] = tmi, tci, pmi, pci


@njit(cache=True)
def front_start(H, k):
    """The bookkeeping of a front whose first k positions are fully summed (H in full storage):
    (isfs, loc, rowmax, rmcol, cval, cpart, nzj, touched, tm, tc, pm, pc)."""
    f = H.shape[0]
    isfs = np.zeros(f, np.bool_)
    isfs[:k] = True
    loc = np.arange(f)
    rowmax = np.zeros(f)
    rmcol = np.full(f, -1, np.int64)
    cval = np.zeros(f)
    cpart = np.full(f, -1, np.int64)
    for i in range(k):  # the front arrives in full storage: whole rows are contiguous
        full_row_stats(H, i, f, isfs, rowmax, rmcol, cval, cpart)
    return (isfs, loc, rowmax, rmcol, cval, cpart, np.empty(f, np.int64), np.zeros(f, np.bool_), np.zeros(f),
            np.full(f, -1, np.int64), np.zeros(f), np.full(f, -1, np.int64))


@njit(cache=True)
def next_pivot(H, L, ext, u, st, na, s, c):
    """Choose the next pivot pair, swap it to positions na - 1, na - 2 and add ln |pivot| to the
    compensated sum (s, c); mark the nonzero columns of the pivot rows. Returns (found, na
    without the pair, s, c, pivot hi, pivot lo, nonzero columns nz); the pair's update is left
    to :func:`pivot_update` (or to :func:`dense_rows` in parts, then :func:`finish_pivot`)."""
    isfs, loc, rowmax, rmcol, cval, cpart, nzj, touched, tm, tc, pm, pc = st
    bp, bq = choose_pivot(na, isfs, cpart, cval, rowmax, u)
    if bp < 0:
        return False, na, s, c, 0.0, 0.0, 0
    _swap(H, L, ext, bp, na - 1, na, isfs, loc, rowmax, rmcol, cval, cpart)
    if bq == na - 1:
        bq = bp
    _swap(H, L, ext, bq, na - 2, na, isfs, loc, rowmax, rmcol, cval, cpart)
    p = na - 1
    q = na - 2
    ph = H[p, q]
    pl = L[p, q] if ext else 0.0
    y = math.log(abs(ph)) + math.log1p(pl / ph) - c  # Kahan-compensated sum of ln|pivot|
    tt = s + y
    c = (tt - s) - y
    s = tt
    na -= 2
    nz = 0
    for j in range(na):  # rows p and q are H[p, :na], H[q, :na] (j < q < p)
        if H[p, j] != 0.0 or H[q, j] != 0.0:
            nzj[nz] = j
            nz += 1
            touched[j] = True
    return True, na, s, c, ph, pl, nz


@njit(cache=True, nogil=True)
def dense_rows(H, L, ext, na, ph, pl, r_lo, r_hi, isfs, tm, tc, pm, pc, xtm, xtc, xpm, xpc):
    """The dense update of rows r_lo .. r_hi - 1 (columns j < i) by the pivot pair at na + 1, na,
    in plain contiguous loops, then their maxima in a second pass (as the serial kernel does):
    the largest |entry| of each row i (tm[i], at column tc[i]) and its largest fully summed
    partner (pm, pc), a row's own part in ascending columns, then its column below the diagonal,
    first maximum kept. Columns j >= r_lo get their column part from these rows in tm ..
    directly, columns j < r_lo in xtm .. (merged by :func:`merge_column_maxima`, parts in
    ascending order): the update of disjoint row ranges can run in threads (no GIL), with the
    same entries and the same maxima as one call over all rows."""
    p = na + 1
    q = na
    for i in range(r_lo, r_hi):
        Hi, Hp, Hq = H[i], H[p], H[q]
        if ext:
            ah, al = dd_div(H[q, i], L[q, i], ph, pl)
            bh, bl = dd_div(H[p, i], L[p, i], ph, pl)
            Li, Lp, Lq = L[i], L[p], L[q]
            for j in range(i):
                Hi[j], Li[j] = dd_axpy2(Hi[j], Li[j], ah, al, Hp[j], Lp[j], bh, bl, Hq[j], Lq[j])
        else:
            ah = H[q, i] / ph
            bh = H[p, i] / ph
            for j in range(i):
                Hi[j] += ah * Hp[j] - bh * Hq[j]
    for j in range(r_lo):
        xtm[j], xtc[j], xpm[j], xpc[j] = 0.0, -1, 0.0, -1
    for i in range(r_lo, r_hi):
        tmi, tci, pmi, pci = 0.0, -1, 0.0, -1
        fs_i = isfs[i]
        Hi = H[i]
        # (written out, here and in _sparse_update: a helper returning the four maxima made the
        # double-double elimination 2-3x slower, L = 128 at beta = 8)
        for j in range(r_lo):
            v = abs(Hi[j])
            if v > tmi:
                tmi, tci = v, j
            if v > pmi and isfs[j]:
                pmi, pci = v, j
            if v > xtm[j]:
                xtm[j], xtc[j] = v, i
            if v > xpm[j] and fs_i:
                xpm[j], xpc[j] = v, i
        for j in range(r_lo, i):
            v = abs(Hi[j])
            if v > tmi:
                tmi, tci = v, j
            if v > pmi and isfs[j]:
                pmi, pci = v, j
            if v > tm[j]:
                tm[j], tc[j] = v, i
            if v > pm[j] and fs_i:
                pm[j], pc[j] = v, i
        tm[i], tc[i], pm[i], pc[i] = tmi, tci, pmi, pci


@njit(cache=True)
def merge_column_maxima(tm, tc, pm, pc, xtm, xtc, xpm, xpc, r_lo):
    """Column maxima of a later row range (xtm .., from :func:`dense_rows`) into columns j < r_lo:
    a strictly larger value wins, so the first maximum in row order is kept."""
    for j in range(r_lo):
        if xtm[j] > tm[j]:
            tm[j], tc[j] = xtm[j], xtc[j]
        if xpm[j] > pm[j]:
            pm[j], pc[j] = xpm[j], xpc[j]


@njit(cache=True)
def finish_pivot(H, st, na, nz, dense):
    """The fully summed rows' statistics after the pivot's update, from the changed entries' maxima."""
    isfs, loc, rowmax, rmcol, cval, cpart, nzj, touched, tm, tc, pm, pc = st
    for i in range(na):
        if isfs[i]:
            _refresh_stats(H, i, na, touched[i], dense, tm, tc, pm, pc, touched, isfs, rowmax, rmcol, cval, cpart)
    for t in range(nz):
        touched[nzj[t]] = False


@njit(cache=True, inline="always")
def dense_enough(nz, na):
    """Whether a pivot whose rows have nz nonzero columns of na updates every column: a zero
    column gets + 0 (its value unchanged), and the dense loop costs about half the indexed one
    per entry (double-double: the fronts near the root are 99.5% dense but not 100%, and took
    8 against 4 ns an entry indexed)."""
    return 4 * nz >= 3 * na


@njit(cache=True)
def pivot_update(H, L, ext, st, na, ph, pl, nz):
    """The Schur update of the pivot pair chosen by :func:`next_pivot`, in this thread: over all
    columns when the pivot rows are :func:`dense_enough`, else over their nonzero columns only."""
    isfs, loc, rowmax, rmcol, cval, cpart, nzj, touched, tm, tc, pm, pc = st
    dense = dense_enough(nz, na)
    if dense:
        dense_rows(H, L, ext, na, ph, pl, 0, na, isfs, tm, tc, pm, pc, tm, tc, pm, pc)
    else:
        _sparse_update(H, L, ext, na + 1, na, ph, pl, nzj, nz, isfs, tm, tc, pm, pc)
    finish_pivot(H, st, na, nz, dense)


@njit(cache=True)
def half_steps(H, L, ext, u, st, na, s, c):
    """Pivot after pivot until none passes the threshold; returns (na, s, c)."""
    while True:
        found, na, s, c, ph, pl, nz = next_pivot(H, L, ext, u, st, na, s, c)
        if not found:
            return na, s, c
        pivot_update(H, L, ext, st, na, ph, pl, nz)


@njit(cache=True)
def front_end(H, L, ext, na):
    """The remaining block H[:na, :na] (+ L) back in full skew storage for the caller."""
    for i in range(na):
        H[i, i] = 0.0
        if ext:
            L[i, i] = 0.0
        for j in range(i):
            H[j, i] = -H[i, j]
            if ext:
                L[j, i] = -L[i, j]


@njit(cache=True)
def eliminate_front_half(H, L, ext, k, u):
    """Eliminate 2 x 2 pivots among the first k (fully summed) positions of the dense skew front
    hi + lo = H + L in place (L only if ext; both read from their lower triangles), moving
    eliminated pairs to the end. Returns (ln |pivots| summed, na, loc): H[:na, :na] (+ L) is what
    remains, in full skew storage again, and loc[:na] its original positions. (The same steps
    with the large dense updates in threads: :mod:`evaluators.oracles.linalg.skew_front_split`.)"""
    st = front_start(H, k)
    na, s, c = half_steps(H, L, ext, u, st, H.shape[0], 0.0, 0.0)
    front_end(H, L, ext, na)
    return s, na, st[1]
