"""The dense front of the multifrontal skew elimination (:mod:`evaluators.oracles.linalg.skew_pfaffian`):
2 x 2 pivots chosen by size under a threshold, rank-2 Schur updates in float64 or double-double,
and, on request, a running (Wilkinson) bound on every entry's error. numba kernels; a front is
a dense array H (+ L, the low parts in double-double; + B, the error bounds).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from evaluators.oracles.linalg.double_double import dd_axpy2, dd_div

UNIT_ROUNDOFF = 2.0 ** -53
UNIT_ROUNDOFF_DD = 2.0 ** -102  # double-double, with a margin for its non-IEEE rounding
UNDERFLOW = 2.0 ** -1020  # absolute error of a result below the normal range


@njit(cache=True)
def _row_stats(H, i, na, isfs, rowmax, rmcol, cval, cpart):
    """Largest |entry| of row i in the active block, and its largest fully summed partner."""
    rmax = 0.0
    rc = -1
    pmax = 0.0
    pj = -1
    for j in range(na):
        v = abs(H[i, j])
        if v > rmax:
            rmax = v
            rc = j
        if v > pmax and isfs[j] and j != i:
            pmax = v
            pj = j
    rowmax[i] = rmax
    rmcol[i] = rc
    cval[i] = pmax
    cpart[i] = pj


@njit(cache=True)
def _swap(H, L, ext, B, track, x, y, isfs, loc, rowmax, rmcol, cval, cpart, na):
    """Exchange positions x and y (rows, columns and bookkeeping)."""
    if x == y:
        return
    f = H.shape[0]
    for j in range(f):
        H[x, j], H[y, j] = H[y, j], H[x, j]
    for i in range(f):
        H[i, x], H[i, y] = H[i, y], H[i, x]
    if ext:
        for j in range(f):
            L[x, j], L[y, j] = L[y, j], L[x, j]
        for i in range(f):
            L[i, x], L[i, y] = L[i, y], L[i, x]
    if track:
        for j in range(f):
            B[x, j], B[y, j] = B[y, j], B[x, j]
        for i in range(f):
            B[i, x], B[i, y] = B[i, y], B[i, x]
    swap_bookkeeping(x, y, na, isfs, loc, rowmax, rmcol, cval, cpart)


@njit(cache=True)
def swap_bookkeeping(x, y, na, isfs, loc, rowmax, rmcol, cval, cpart):
    """Exchange positions x and y in the per-row bookkeeping, and rename them where rows point at them."""
    isfs[x], isfs[y] = isfs[y], isfs[x]
    loc[x], loc[y] = loc[y], loc[x]
    rowmax[x], rowmax[y] = rowmax[y], rowmax[x]
    rmcol[x], rmcol[y] = rmcol[y], rmcol[x]
    cval[x], cval[y] = cval[y], cval[x]
    cpart[x], cpart[y] = cpart[y], cpart[x]
    for i in range(na):
        if cpart[i] == x:
            cpart[i] = y
        elif cpart[i] == y:
            cpart[i] = x
        if rmcol[i] == x:
            rmcol[i] = y
        elif rmcol[i] == y:
            rmcol[i] = x


@njit(cache=True)
def choose_pivot(na, isfs, cpart, cval, rowmax, u):
    """The pivot pair (p, q): the largest entry between two fully summed rows that passes the
    threshold (at least u times the largest entry of either row); (-1, -1) when none does."""
    best = 0.0
    bp = -1
    bq = -1
    for i in range(na):
        if isfs[i] and cpart[i] >= 0:
            v = cval[i]
            if v > best and v >= u * max(rowmax[i], rowmax[cpart[i]]):
                best = v
                bp = i
                bq = cpart[i]
    return bp, bq


@njit(cache=True)
def eliminate_front(H, L, ext, B, track, k, u):
    """Eliminate 2 x 2 pivots among the first k (fully summed) positions of the dense skew front
    hi + lo = H + L in place (L only if ext), moving eliminated pairs to the end. With track,
    B holds a running bound on each entry's absolute error (updated alongside). Returns
    (ln |pivots| summed, na, loc, bound on the error of that sum): M[:na, :na] is what remains
    and loc[:na] its original positions."""
    eps = UNIT_ROUNDOFF_DD if ext else UNIT_ROUNDOFF
    err = 0.0
    f = H.shape[0]
    isfs = np.zeros(f, np.bool_)
    isfs[:k] = True
    loc = np.arange(f)
    rowmax = np.zeros(f)
    rmcol = np.full(f, -1, np.int64)
    cval = np.zeros(f)
    cpart = np.full(f, -1, np.int64)
    for i in range(k):
        _row_stats(H, i, f, isfs, rowmax, rmcol, cval, cpart)
    na = f
    s = 0.0
    c = 0.0
    nzj = np.empty(f, np.int64)
    nzb = np.empty(f, np.int64)
    touched = np.zeros(f, np.bool_)
    while True:
        bp, bq = choose_pivot(na, isfs, cpart, cval, rowmax, u)
        if bp < 0:
            break
        _swap(H, L, ext, B, track, bp, na - 1, isfs, loc, rowmax, rmcol, cval, cpart, na)
        if bq == na - 1:
            bq = bp
        _swap(H, L, ext, B, track, bq, na - 2, isfs, loc, rowmax, rmcol, cval, cpart, na)
        p = na - 1
        q = na - 2
        ph = H[p, q]
        pl = L[p, q] if ext else 0.0
        if track:  # first order: d ln|pivot| = d pivot / pivot, plus the rounding of the log
            err += B[p, q] / abs(ph) + 4.0 * eps
        y = math.log(abs(ph)) + math.log1p(pl / ph) - c  # Kahan-compensated sum of ln|pivot|
        tt = s + y
        c = (tt - s) - y
        s = tt
        na -= 2
        nz = 0
        for j in range(na):
            if H[p, j] != 0.0 or H[q, j] != 0.0:
                nzj[nz] = j
                nz += 1
                touched[j] = True
        dense = nz == na
        nb = 0
        if track:  # columns whose bound moves: a nonzero value or a nonzero bound in row p or q
            for j in range(na):
                if H[p, j] != 0.0 or H[q, j] != 0.0 or B[p, j] != 0.0 or B[q, j] != 0.0:
                    nzb[nb] = j
                    nb += 1
        # S_ij += (S_qi S_pj - S_pi S_qj) / S_pq, rows only (skew symmetry)
        for i in range(na):
            if track and (H[q, i] != 0.0 or H[p, i] != 0.0 or B[q, i] != 0.0 or B[p, i] != 0.0):
                _bound_update(H, B, i, p, q, ph, nzb, nb, eps)
                B[i, i] = 0.0
            if H[q, i] == 0.0 and H[p, i] == 0.0:
                if isfs[i] and (cpart[i] >= na or rmcol[i] >= na):
                    _row_stats(H, i, na, isfs, rowmax, rmcol, cval, cpart)
                continue
            if ext:
                ah, al = dd_div(H[q, i], L[q, i], ph, pl)
                bh, bl = dd_div(H[p, i], L[p, i], ph, pl)
                if dense:  # contiguous, vectorisable
                    for j in range(na):
                        H[i, j], L[i, j] = dd_axpy2(H[i, j], L[i, j], ah, al, H[p, j], L[p, j],
                                                    bh, bl, H[q, j], L[q, j])
                else:
                    for t in range(nz):
                        j = nzj[t]
                        H[i, j], L[i, j] = dd_axpy2(H[i, j], L[i, j], ah, al, H[p, j], L[p, j],
                                                    bh, bl, H[q, j], L[q, j])
                L[i, i] = 0.0
            else:
                ah = H[q, i] / ph
                bh = H[p, i] / ph
                if dense:  # contiguous, vectorisable
                    for j in range(na):
                        H[i, j] += ah * H[p, j] - bh * H[q, j]
                else:
                    for t in range(nz):
                        j = nzj[t]
                        H[i, j] += ah * H[p, j] - bh * H[q, j]
            H[i, i] = 0.0
            if not isfs[i]:
                continue
            if dense or (rmcol[i] >= 0 and (rmcol[i] >= na or touched[rmcol[i]])) or \
                    (cpart[i] >= 0 and (cpart[i] >= na or touched[cpart[i]])):
                _row_stats(H, i, na, isfs, rowmax, rmcol, cval, cpart)
            else:  # the old maxima sit in untouched columns: merge with the updated ones
                for t in range(nz):
                    j = nzj[t]
                    v = abs(H[i, j])
                    if v > rowmax[i]:
                        rowmax[i], rmcol[i] = v, j
                    if v > cval[i] and isfs[j] and j != i:
                        cval[i], cpart[i] = v, j
        for t in range(nz):
            touched[nzj[t]] = False
    return s, na, loc, err


@njit(cache=True)
def _bound_update(H, B, i, p, q, ph, nzj, nz, eps):
    """Running error analysis of S_ij += a S_pj - b S_qj, a = S_qi / S_pq, b = S_pi / S_pq
    (before H is updated): the propagated errors of every operand plus the rounding of each
    operation, eps relative and UNDERFLOW absolute (a product below the normal range)."""
    piv = abs(ph)
    dp = B[p, q]
    a = H[q, i] / ph
    b = H[p, i] / ph
    da = (B[q, i] + abs(a) * dp) / piv + 2.0 * eps * abs(a) + UNDERFLOW
    db = (B[p, i] + abs(b) * dp) / piv + 2.0 * eps * abs(b) + UNDERFLOW
    aa = abs(a)
    ab = abs(b)
    for t in range(nz):
        j = nzj[t]
        x = abs(H[p, j])
        y = abs(H[q, j])
        B[i, j] += (aa * B[p, j] + ab * B[q, j] + x * da + y * db
                    + 3.0 * eps * (abs(H[i, j]) + aa * x + ab * y) + UNDERFLOW)
