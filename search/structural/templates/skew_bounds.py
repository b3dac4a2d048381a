"""A running (Wilkinson) error analysis for the double-double skew elimination of
``skew_elimination``: every front entry carries a bound on its absolute error, propagated through
each rank-2 Schur update, so an elimination can say how far its log |Pf| may be from the exact
value of the matrix it was given. Not a template: helper functions that the planar_pfaffian
template renders into its programs (through ``skew_elimination``).

Model (first order in the unit roundoff, as the textbook running error analysis): an update
S_ij -= u_i w_j - w_i u_j with u = S[:, k], w = S[:, k+1] / p and p = S[k, k+1] adds to the bound
of S_ij the propagated errors |u_i| dw_j + du_i |w_j| + |w_i| du_j + dw_i |u_j| (du, dw the bounds
of u and w; dw = (dv + |w| dp) / |p| + 2 eps |w|) and the rounding of the operation,
3 eps (|S_ij| + |u_i w_j| + |w_i u_j|), plus an absolute UNDERFLOW for results below the normal
range. The pivot's relative error dp / |p| is the error of its log. eps is the double-double unit
roundoff with a margin for its non-IEEE rounding (2^-102). Entries are absolute values in
float64 (a bound needs no more than its leading digits).
"""

from __future__ import annotations

import numpy as np

EPS_DD = 2.0 ** -102          # double-double unit roundoff, with a margin
UNDERFLOW = 2.0 ** -1020      # absolute error of a result below the normal range


def _bound_update(B, S, ua, du, wa, dw):
    """The running bound of a rank-2 update S -= u w^T - w u^T on one front block (in place on B,
    before S is updated). ua, wa: |u|, |w|; du, dw: their bounds. Only rows and columns where one
    of them is nonzero change (elsewhere the update is exactly zero)."""
    nz = np.flatnonzero((ua != 0.0) | (wa != 0.0) | (du != 0.0) | (dw != 0.0))
    if len(nz) < 2:
        return
    ua, du, wa, dw = ua[nz], du[nz], wa[nz], dw[nz]
    sub = np.ix_(nz, nz)
    outer = np.multiply.outer
    prod = outer(ua, wa)
    prod += prod.T
    add = outer(ua, dw)
    add += outer(du, wa)
    add += add.T
    add += 3.0 * EPS_DD * (np.abs(S[sub]) + prod) + UNDERFLOW
    np.fill_diagonal(add, 0.0)                    # a skew matrix's diagonal is exactly zero
    B[sub] += add


def _bound_update_stack(B, S, ua, du, wa, dw):
    """_bound_update on a stack of fronts (B, S: (F, m, m) views; the vectors (F, m)), on the rows
    and columns where one of the vectors is nonzero, gathered per front when they are few."""
    on = (ua != 0.0) | (wa != 0.0) | (du != 0.0) | (dw != 0.0)
    F, m = on.shape
    k = int(on.sum(axis=1).max()) if F else 0
    if k < 2:
        return
    if k >= 0.75 * m:
        _bound_stack_block(B, S, ua, du, wa, dw, on)
        return
    rows = np.argsort(~on, axis=1, kind="stable")[:, :k]           # every such row, then padding
    sub = (np.arange(F)[:, None, None], rows[:, :, None], rows[:, None, :])
    take = np.take_along_axis
    Bs = B[sub]
    _bound_stack_block(Bs, S[sub], take(ua, rows, 1), take(du, rows, 1), take(wa, rows, 1), take(dw, rows, 1),
                       take(on, rows, 1))
    B[sub] = Bs


def _bound_stack_block(B, S, ua, du, wa, dw, on):
    """The bound update on whole (F, k, k) blocks; rows and columns not ``on`` are left alone."""
    col, row = (lambda x: x[:, :, None]), (lambda x: x[:, None, :])
    prod = col(ua) * row(wa)
    prod += prod.transpose(0, 2, 1)
    add = col(ua) * row(dw)
    add += col(du) * row(wa)
    add += add.transpose(0, 2, 1)
    add += 3.0 * EPS_DD * (np.abs(S) + prod) + UNDERFLOW
    add *= col(on) & row(on)
    idx = np.arange(add.shape[1])
    add[:, idx, idx] = 0.0
    B += add


def _pivot_bounds(H, L, B, ph, k, r):
    """(|u|, du, |w|, dw) for the pivot pair (k, k+1) of the front(s) H + L with bounds B, rows
    ``r`` (a slice; a leading stack axis allowed): u = S[r, k], w = S[r, k+1] / p, p = ``ph``."""
    u = H[..., r, k]
    w = H[..., r, k + 1] / ph
    wa = np.abs(w)
    dw = (B[..., r, k + 1] + wa * B[..., k, k + 1][..., None]) / np.abs(ph) + 2.0 * EPS_DD * wa + UNDERFLOW
    return np.abs(u), B[..., r, k].copy(), wa, dw


FUNCTIONS = (_bound_update, _bound_update_stack, _bound_stack_block, _pivot_bounds)


def constants() -> str:
    """The module's constants as program text."""
    return "".join(f"{name} = {globals()[name]!r}\n" for name in ("EPS_DD", "UNDERFLOW"))
