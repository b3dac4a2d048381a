"""The site-by-site transfer-matrix steps of :mod:`evaluators.oracles.transfer_matrix` with the
state held as natural logs.

Why a second set. The linear sweep rescales its vector by the largest entry each step, which
keeps the largest entry at 1 but not the smallest: at low temperature (beta |J| of a few
hundred) entries of the vector, or of a site's Boltzmann table, fall below the smallest double
and are lost, or the whole step underflows (a bare FloatingPointError at beta = 1000 before this
module). The sweep notices any entry below ``TINY`` and starts again here, where an entry is a
log weight and a sum is a log-add-exp of two terms: no entry can underflow, at about five times
the cost. Same argument conventions as the linear kernels (psi, W, k, slots, posk, table, lo, hi),
with ``psi`` and ``table`` holding logs; each returns the largest log it wrote.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def _gather(x, slots):
    g = 0
    for j in range(slots.shape[0]):
        g |= ((x >> slots[j]) & 1) << j
    return g


@njit(cache=True, inline="always")
def _lae(a, b):
    """log(exp(a) + exp(b)) for finite a, b."""
    if a < b:
        a, b = b, a
    return a + np.log1p(np.exp(b - a))


@njit(cache=True)
def _extend_log(psi, W, k, slots, posk, table, lo, hi):
    half = 1 << W
    sv = 1 << slots.shape[0]
    m = -np.inf
    for x in range(lo, hi):
        g = _gather(x, slots)
        p = psi[x]
        a = p + table[g]
        b = p + table[g | sv]
        psi[x] = a
        psi[x | half] = b
        m = max(m, max(a, b))
    return m


@njit(cache=True)
def _absorb_log(psi, W, k, slots, posk, table, lo, hi):
    sv = 1 << slots.shape[0]
    m = -np.inf
    for x in range(lo, hi):
        g = _gather(x, slots)
        a = psi[x] + _lae(table[g], table[g | sv])
        psi[x] = a
        m = max(m, a)
    return m


@njit(cache=True)
def _replace_log(psi, W, k, slots, posk, table, lo, hi):
    bitk = 1 << k
    sv = 1 << slots.shape[0]
    gk = (1 << posk) if posk >= 0 else 0
    m = -np.inf
    for i in range(lo, hi):
        x0 = ((i >> k) << (k + 1)) | (i & (bitk - 1))
        x1 = x0 | bitk
        g0 = _gather(x0, slots)
        g1 = g0 | gk
        p0 = psi[x0]
        p1 = psi[x1]
        a = _lae(p0 + table[g0], p1 + table[g1])
        b = _lae(p0 + table[g0 | sv], p1 + table[g1 | sv])
        psi[x0] = a
        psi[x1] = b
        m = max(m, max(a, b))
    return m


@njit(cache=True)
def _remove_log(psi, W, k, slots, posk, table, lo, hi):
    tb = 1 << (W - 1)
    m = -np.inf
    if k == W - 1:
        for x in range(lo, hi):
            a = _lae(psi[x], psi[x | tb])
            psi[x] = a
            m = max(m, a)
        return m
    bj = 1 << k
    for i in range(lo, hi):
        y = ((i >> k) << (k + 1)) | (i & (bj - 1))
        a = _lae(psi[y], psi[y | bj])
        b = _lae(psi[y | tb], psi[y | bj | tb])
        psi[y] = a
        psi[y | bj] = b
        m = max(m, max(a, b))
    return m


@njit(cache=True, nogil=True)
def run_log_range(kind, psi, W, k, slots, posk, table, lo, hi):
    """One step on [lo, hi) of its loop index; kind 0 extend, 1 absorb, 2 replace, 3 remove.
    Returns the largest log written."""
    if kind == 0:
        return _extend_log(psi, W, k, slots, posk, table, lo, hi)
    if kind == 1:
        return _absorb_log(psi, W, k, slots, posk, table, lo, hi)
    if kind == 2:
        return _replace_log(psi, W, k, slots, posk, table, lo, hi)
    return _remove_log(psi, W, k, slots, posk, table, lo, hi)
