"""Double-double arithmetic (a number is hi + lo, two float64, about 106 bits) on numpy arrays, and
the rank-2 updates of a skew elimination in it: Dekker's splitting and Knuth's two-sum,
vectorised. Not a template: helper functions that the planar_pfaffian template renders into its
programs (through ``skew_elimination``)."""

from __future__ import annotations

import numpy as np

ROWS = 48                 # rows per block of the one-front update (temporaries in cache)
_SPLIT = 134217729.0      # 2^27 + 1: Dekker's splitter for float64


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_prod(a, b):
    p = a * b
    t = _SPLIT * a
    ah = t - (t - a)
    t = _SPLIT * b
    bh = t - (t - b)
    return p, ((ah * bh - p) + ah * (b - bh) + (a - ah) * bh) + (a - ah) * (b - bh)


def _dd_mul(ah, al, bh, bl):
    p, e = _two_prod(ah, bh)
    e = e + (ah * bl + al * bh)
    s = p + e
    return s, e - (s - p)


def _dd_add(ah, al, bh, bl):
    s, e = _two_sum(ah, bh)
    e = e + (al + bl)
    t = s + e
    return t, e - (t - s)


def _dd_div(ah, al, bh, bl):
    q = ah / bh
    ph, pl = _dd_mul(bh, bl, q, 0.0)
    rh, rl = _dd_add(ah, al, -ph, -pl)
    q2 = (rh + rl) / bh
    s = q + q2
    return s, q2 - (s - q)


def _dd_rank2_update(H, L, uh, ul, wh, wl):
    """(H + L) -= u w^T - w u^T in double-double, in place on the skew (views) H and L. The update
    is zero outside the rows and columns where u or w is nonzero: only those are gathered when
    they are few."""
    nz = np.flatnonzero((uh != 0.0) | (wh != 0.0))             # a dd number with hi = 0 is 0
    if len(nz) < 2:
        return
    if len(nz) < 0.75 * len(uh):
        sub = np.ix_(nz, nz)
        Hs, Ls = H[sub], L[sub]
        _dd_skew_update(Hs, Ls, uh[nz], ul[nz], wh[nz], wl[nz])
        H[sub], L[sub] = Hs, Ls
    else:
        _dd_skew_update(H, L, uh, ul, wh, wl)


def _dd_outer(ah, a1, a2, al, bh, b1, b2, bl, T):
    """The outer product of double-doubles a = ah + al and b = bh + bl as P + E, exact up to
    2^-106 (ah = a1 + a2 and bh = b1 + b2 split by Dekker; terms al bl of order 2^-106 dropped);
    T is scratch of the result's shape."""
    outer = np.multiply.outer
    P = outer(ah, bh)
    E = outer(a1, b1)
    E -= P
    for x, y in ((a1, b2), (a2, b1), (a2, b2), (ah, bl), (al, bh)):
        outer(x, y, out=T)
        E += T
    return P, E


def _dd_subtract(h, l, S, E, X, T, Q):
    """(h + l) -= (S + E) in place, all double-doubles of one shape, by a two-sum of the high
    parts, then renormalised; X, T, Q are scratch, and S is overwritten."""
    X = np.subtract(h, S, out=X)
    np.subtract(X, h, out=T)                                      # bb
    np.subtract(X, T, out=Q)
    np.subtract(h, Q, out=Q)                                      # h - (X - bb)
    S += T
    Q -= S                                                        # ... + (-S - bb)
    Q += l
    Q -= E
    np.add(X, Q, out=h)                                           # renormalise
    np.subtract(h, X, out=T)
    np.subtract(Q, T, out=l)


def _dd_skew_update(H, L, uh, ul, wh, wl):
    """(H + L) -= D, D = u w^T - w u^T, on blocks of ``ROWS`` rows from the diagonal on (the rest is
    mirrored: H stays skew, and the temporaries stay in cache). Each product is exact up to 2^-106
    (Dekker's splitting, each vector split once); D is formed as a double-double by a two-sum of
    the high parts, then added with a two-sum; in-place ufuncs, since temporaries dominate the cost."""
    m = len(uh)
    t = _SPLIT * uh
    u1 = t - (t - uh)
    t = _SPLIT * wh
    w1 = t - (t - wh)
    u2, w2 = uh - u1, wh - w1
    for a in range(0, m, ROWS):
        R, C = slice(a, min(a + ROWS, m)), slice(a, m)
        T = np.empty((R.stop - R.start, m - a))
        P, E = _dd_outer(uh[R], u1[R], u2[R], ul[R], wh[C], w1[C], w2[C], wl[C], T)   # u_i w_j = P + E
        Q, G = _dd_outer(wh[R], w1[R], w2[R], wl[R], uh[C], u1[C], u2[C], ul[C], T)   # w_i u_j = Q + G
        E -= G
        S = np.subtract(P, Q, out=G)                              # D = S + E: two-sum of P - Q
        np.subtract(S, P, out=T)                                  # bb
        np.negative(Q, out=Q)
        Q -= T                                                    # -Q - bb
        np.subtract(S, T, out=T)
        np.subtract(P, T, out=P)                                  # P - (S - bb)
        P += Q
        E += P
        _dd_subtract(H[R, C], L[R, C], S, E, P, T, Q)
        b = R.stop
        if b < m:
            H[b:, R] = -H[R, b:].T
            L[b:, R] = -L[R, b:].T


def _dd_skew_update_stack(H, L, uh, ul, wh, wl):
    """(H + L) -= u w^T - w u^T on a stack of skew fronts (H, L: (B, m, m) views; u, w: (B, m)), in
    place. The update is D = X - X^T with X = u w^T in double-double (each product exact up to
    2^-106 by Dekker's splitting), so every front stays exactly skew."""
    t = _SPLIT * uh
    u1 = t - (t - uh)
    t = _SPLIT * wh
    w1 = t - (t - wh)
    u2, w2 = uh - u1, wh - w1
    col, row = (lambda x: x[:, :, None]), (lambda x: x[:, None, :])
    P = col(uh) * row(wh)                                          # u_i w_j = P + E
    E = col(u1) * row(w1)
    E -= P
    T = np.multiply(col(u1), row(w2))
    E += T
    np.multiply(col(u2), row(w1), out=T)
    E += T
    np.multiply(col(u2), row(w2), out=T)
    E += T
    np.multiply(col(uh), row(wl), out=T)
    E += T
    np.multiply(col(ul), row(wh), out=T)
    E += T
    Pt = P.transpose(0, 2, 1)
    S = P - Pt                                                     # D = S + E: two-sum of P - P^T
    bb = S - P
    np.subtract(S, bb, out=T)
    np.subtract(P, T, out=T)                                       # P - (S - bb)
    V = np.negative(Pt)
    V -= bb                                                        # -P^T - bb
    T += V
    E = np.subtract(E, E.transpose(0, 2, 1), out=V)
    E += T
    _dd_subtract(H, L, S, E, P, T, np.empty_like(T))


def _dd_stack_rank2_update(H, L, uh, ul, wh, wl):
    """_dd_skew_update_stack on the rows and columns where u or w is nonzero (gathered per front,
    as many as the front with the most) when they are few: the rest of the update is zero."""
    nz = (uh != 0.0) | (wh != 0.0)                                # a dd number with hi = 0 is 0
    B, m = nz.shape
    k = int(nz.sum(axis=1).max())
    if k < 2:
        return
    if k >= 0.75 * m:
        _dd_skew_update_stack(H, L, uh, ul, wh, wl)
        return
    rows = np.argsort(~nz, axis=1, kind="stable")[:, :k]           # every nonzero row, distinct
    sub = (np.arange(B)[:, None, None], rows[:, :, None], rows[:, None, :])
    Hs, Ls = H[sub], L[sub]
    take = np.take_along_axis
    _dd_skew_update_stack(Hs, Ls, take(uh, rows, 1), take(ul, rows, 1), take(wh, rows, 1), take(wl, rows, 1))
    H[sub], L[sub] = Hs, Ls


#: rendered into a program that uses them (after ``import numpy as np``)
FUNCTIONS = (_two_sum, _two_prod, _dd_mul, _dd_add, _dd_div, _dd_rank2_update, _dd_outer, _dd_subtract,
             _dd_skew_update, _dd_skew_update_stack, _dd_stack_rank2_update)


def constants() -> str:
    """The module's constants as program text (their current values)."""
    return "".join(f"{name} = {globals()[name]!r}\n" for name in ("ROWS", "_SPLIT"))
