"""Fermionic Gaussian states of m modes in pair-amplitude (Thouless) form relative to a reference
configuration, and the updates a free-fermion transfer needs.

The state. psi(x), x in {0,1}^m, with non-negative amplitudes (here: sums of probabilities) and a
reference x* with psi(x*) > 0. Jordan-Wigner makes |x> the ordered product of creation
operators, so a Gaussian psi with psi(x*) != 0 is psi(x*) exp(1/2 sum A_ij c_i^+ c_j^+) |x*> (c_i the
particle-hole transform that makes |x*> the vacuum) and, for every set S = {s_1 < s_2 < ...},

    F(S) = psi(x* + S) / psi(x*) = Pf(A[S])                    (x* + S: x* with the bits in S flipped)

with A real antisymmetric, A_ij = F({i, j}) for i < j: the relative weight of flipping two bits.
The state is held as (x*, log psi(x*), A); every number in A is a ratio of probabilities, kept with
relative precision at any scale (no normalisation to 1 where small entries would lose their digits).

Updates (all exact formulas on Pfaffians; derivations in docs/threshold.md):

- D = prod_r diag(w_r(0), w_r(1)): log psi(x*) += sum_r log w_r(x*_r), A_ij *= f_i f_j with f_r =
  w_r(1 - x*_r) / w_r(x*_r). A multiplication: exact.
- X_r (flip bit r): x* -> x* + e_r, A unchanged.
- 1 + t X_r X_(r+1) (t >= 0; s = r + 1): psi(x*) *= 1 + t A_rs and, with u = A[r, :], v = A[s, :],
  A_ij += t (v_i u_j - u_i v_j) / (1 + t A_rs) (i, j not r, s; four-point Pfaffian, the pair (r, s)
  adjacent so no reordering sign), A_rj = (u_j + t v_j) / (1 + t A_rs), A_sj = (v_j + t u_j) /
  (1 + t A_rs), A_rs = (A_rs + t) / (1 + t A_rs).
- pivot on (i, j), i < j: the reference moves to x* + {i, j} (g = A_ij > 0): psi(x*) *= g,
  A_kl = tau_k tau_l (A_kl - (u_k v_l - u_l v_k) / g) with u = A[i, :], v = A[j, :] and tau_x = -1
  for i < x < j, +1 otherwise (the sign of sorting {i, j, k, l}); A_il = tau_l v_l / g, A_jl =
  tau_l u_l / g, A_ij = 1 / g. A Schur complement on the largest entry: entries stay <= 1.

Precision. In float64 this is exact to ~1e-12 in log psi for the planar code at every p tested
down to 1e-15 on L <= 16, and for p >= 1e-3 up to L = 32; colder and larger, the Schur
complements cancel (equal weights make leading orders cancel, as in any low-temperature Pfaffian
elimination; see evaluators/oracles/planar.py) and the double-double twins (``*_dd``, unit
roundoff 5e-32) take over (:mod:`evaluators.decoding.planar_code` says where).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from evaluators.oracles.linalg.double_double import dd_add, dd_axpy2, dd_div, dd_mul


@njit(cache=True)
def pair_gate(A, r, t, u, v):
    """Apply 1 + t X_r X_(r+1) (t >= 0) in place; return log(1 + t A_(r, r+1)). u, v: scratch."""
    m = A.shape[0]
    s = r + 1
    ars = A[r, s]
    den = 1.0 + t * ars
    for j in range(m):
        u[j] = A[r, j]
        v[j] = A[s, j]
    f = t / den
    for i in range(m):
        fu = f * u[i]
        fv = f * v[i]
        row = A[i]
        for j in range(m):
            # the whole square (rows and columns r, s are rewritten below): fv u_j and fu v_j round
            # alike for (i, j) and (j, i), so A stays exactly antisymmetric, and the loop vectorises
            row[j] += fv * u[j] - fu * v[j]
    for j in range(m):
        A[r, j] = (u[j] + t * v[j]) / den
        A[j, r] = -A[r, j]
        A[s, j] = (v[j] + t * u[j]) / den
        A[j, s] = -A[s, j]
    A[r, r] = 0.0
    A[s, s] = 0.0
    A[r, s] = (ars + t) / den
    A[s, r] = -A[r, s]
    return math.log(den)


@njit(cache=True)
def scale(A, f):
    """A_ij *= f_i f_j (a diagonal weight)."""
    m = A.shape[0]
    for i in range(m):
        fi = f[i]
        row = A[i]
        for j in range(m):
            row[j] *= fi * f[j]


@njit(cache=True)
def largest(A):
    """(A_ij, i, j) of the largest |A_ij|, i < j."""
    m = A.shape[0]
    best, bi, bj = 0.0, 0, 1
    for i in range(m):
        for j in range(i + 1, m):
            if abs(A[i, j]) > abs(best):
                best, bi, bj = A[i, j], i, j
    return best, bi, bj


@njit(cache=True)
def pivot(A, i, j, ref, u, v, tau):
    """Move the reference to ref + {i, j} (i < j) in place; return log A_ij (NaN if A_ij <= 0: a
    negative pair weight is a precision failure the caller must not hide)."""
    m = A.shape[0]
    g = A[i, j]
    if not g > 0.0:
        return np.nan
    for k in range(m):
        u[k] = A[i, k]
        v[k] = A[j, k]
        tau[k] = -1.0 if i < k < j else 1.0
    inv = 1.0 / g
    for k in range(m):
        tk = tau[k]
        uk = u[k] * inv
        vk = v[k] * inv
        row = A[k]
        for l in range(m):
            row[l] = tk * tau[l] * (row[l] - (uk * v[l] - vk * u[l]))
    for l in range(m):
        A[i, l] = tau[l] * v[l] * inv
        A[l, i] = -A[i, l]
        A[j, l] = tau[l] * u[l] * inv
        A[l, j] = -A[j, l]
    A[i, i] = 0.0
    A[j, j] = 0.0
    A[i, j] = inv
    A[j, i] = -inv
    ref[i] ^= 1
    ref[j] ^= 1
    return math.log(g)


# -- double-double twins: A = Ah + Al, unit roundoff 5e-32 ----------------------------------------

@njit(cache=True)
def pair_gate_dd(Ah, Al, r, th, tl, uh, ul, vh, vl):
    """:func:`pair_gate` in double-double; t = th + tl."""
    m = Ah.shape[0]
    s = r + 1
    ah, al = Ah[r, s], Al[r, s]
    xh, xl = dd_mul(th, tl, ah, al)
    dh, dl = dd_add(1.0, 0.0, xh, xl)
    for j in range(m):
        uh[j], ul[j] = Ah[r, j], Al[r, j]
        vh[j], vl[j] = Ah[s, j], Al[s, j]
    fh, fl = dd_div(th, tl, dh, dl)
    for i in range(m):
        fuh, ful = dd_mul(fh, fl, uh[i], ul[i])
        fvh, fvl = dd_mul(fh, fl, vh[i], vl[i])
        for j in range(m):
            Ah[i, j], Al[i, j] = dd_axpy2(Ah[i, j], Al[i, j], fvh, fvl, uh[j], ul[j], fuh, ful, vh[j], vl[j])
    for j in range(m):
        ph, pl = dd_mul(th, tl, vh[j], vl[j])
        ph, pl = dd_add(uh[j], ul[j], ph, pl)
        Ah[r, j], Al[r, j] = dd_div(ph, pl, dh, dl)
        Ah[j, r], Al[j, r] = -Ah[r, j], -Al[r, j]
        ph, pl = dd_mul(th, tl, uh[j], ul[j])
        ph, pl = dd_add(vh[j], vl[j], ph, pl)
        Ah[s, j], Al[s, j] = dd_div(ph, pl, dh, dl)
        Ah[j, s], Al[j, s] = -Ah[s, j], -Al[s, j]
    Ah[r, r] = Al[r, r] = Ah[s, s] = Al[s, s] = 0.0
    ph, pl = dd_add(ah, al, th, tl)
    Ah[r, s], Al[r, s] = dd_div(ph, pl, dh, dl)
    Ah[s, r], Al[s, r] = -Ah[r, s], -Al[r, s]
    return math.log(dh) + math.log1p(dl / dh)


@njit(cache=True)
def scale_dd(Ah, Al, fh, fl):
    m = Ah.shape[0]
    for i in range(m):
        for j in range(m):
            xh, xl = dd_mul(Ah[i, j], Al[i, j], fh[i], fl[i])
            Ah[i, j], Al[i, j] = dd_mul(xh, xl, fh[j], fl[j])


@njit(cache=True)
def pivot_dd(Ah, Al, i, j, ref, uh, ul, vh, vl, tau):
    """:func:`pivot` in double-double."""
    m = Ah.shape[0]
    gh, gl = Ah[i, j], Al[i, j]
    if not gh > 0.0:
        return np.nan
    for k in range(m):
        uh[k], ul[k] = Ah[i, k], Al[i, k]
        vh[k], vl[k] = Ah[j, k], Al[j, k]
        tau[k] = -1.0 if i < k < j else 1.0
    ih, il = dd_div(1.0, 0.0, gh, gl)
    for k in range(m):
        ukh, ukl = dd_mul(uh[k], ul[k], ih, il)
        vkh, vkl = dd_mul(vh[k], vl[k], ih, il)
        for l in range(m):
            # A_kl - uk v_l + vk u_l
            xh, xl = dd_axpy2(Ah[k, l], Al[k, l], vkh, vkl, uh[l], ul[l], ukh, ukl, vh[l], vl[l])
            c = tau[k] * tau[l]
            Ah[k, l], Al[k, l] = c * xh, c * xl
    for l in range(m):
        xh, xl = dd_mul(vh[l], vl[l], ih, il)
        Ah[i, l], Al[i, l] = tau[l] * xh, tau[l] * xl
        Ah[l, i], Al[l, i] = -Ah[i, l], -Al[i, l]
        xh, xl = dd_mul(uh[l], ul[l], ih, il)
        Ah[j, l], Al[j, l] = tau[l] * xh, tau[l] * xl
        Ah[l, j], Al[l, j] = -Ah[j, l], -Al[j, l]
    Ah[i, i] = Al[i, i] = Ah[j, j] = Al[j, j] = 0.0
    Ah[i, j], Al[i, j] = ih, il
    Ah[j, i], Al[j, i] = -ih, -il
    ref[i] ^= 1
    ref[j] ^= 1
    return math.log(gh) + math.log1p(gl / gh)
