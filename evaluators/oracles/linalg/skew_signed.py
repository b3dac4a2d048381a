"""(ln |Pf A|, sign of Pf A) of a sparse real skew-symmetric matrix by the multifrontal skew
elimination of :mod:`evaluators.oracles.linalg.skew_pfaffian`, with the sign tracked: the torus's
four-Pfaffian formula (:mod:`evaluators.oracles.torus_pfaffian`) adds its sectors with signs.

Why the sign comes for free. Eliminating the pivot pairs (p_1, q_1), (p_2, q_2), ... of matrix
nodes in that order (each pair's Schur complement taken before the next) gives

    Pf A = sgn(sigma) * prod_k S_k[p_k, q_k],    sigma = (p_1 q_1 p_2 q_2 ...),

S_k the Schur complement when pair k is eliminated (Pf(P A P^T) = det P Pf A, and a leading
2 x 2 block [[0, a], [-a, 0]] factors out of the Pfaffian as a times the Pfaffian of its Schur
complement, which is the update the front kernels make: S_ij += (S_qi S_pj - S_pi S_qj) / S_pq).
Exchanging two whole pairs is an even permutation, so the order in which the fronts (or threads)
run does not matter: only the set of ordered pairs and the signs of their pivots. The planar
oracle's own elimination records the pairs and their pivots as it goes
(:func:`evaluators.oracles.linalg.skew_pfaffian.record_pairs`, one front kernel for both).

Ordering, threshold pivoting, double-double and threads as in the planar oracle; no running
error bound (the torus oracle estimates its rounding by a second elimination along another
ordering). Cost O(N^1.5) for a mesh-like graph with separators of O(sqrt N) nodes: the torus is
not planar, but it is cut like a grid (its first separators, across both seams, are twice as
long).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from numba import njit

from evaluators.oracles.linalg.double_double import dd_mul
from evaluators.oracles.linalg.skew_pfaffian import PfaffianSettings, SkewSystem, multifrontal_log_pf


@njit(cache=True)
def pairing_sign(partner, pivot_hi):
    """sgn(sigma) * prod of the pivots' signs, sigma = the pairs (p, q) in any order of pairs;
    0 when some node was not eliminated."""
    N = partner.shape[0]
    seq = np.empty(N, np.int64)
    k = 0
    sign = 1
    for v in range(N):
        if partner[v] >= 0:
            if k + 2 > N:
                return 0
            seq[k] = v
            seq[k + 1] = partner[v]
            k += 2
            sign *= 1 if pivot_hi[v] > 0.0 else -1
    if k != N:
        return 0
    seen = np.zeros(N, np.bool_)
    cycles = 0
    for s in range(N):
        if not seen[s]:
            cycles += 1
            x = s
            while not seen[x]:
                seen[x] = True
                x = seq[x]
    return sign if (N - cycles) % 2 == 0 else -sign


@njit(cache=True)
def pivot_product(partner, pivot_hi, pivot_lo):
    """(hi, lo, e): |prod of the pivots| = (hi + lo) 2^e in double-double, hi in [0.5, 1) (renormalised
    after every factor, so no exponent range is left)."""
    mh, ml, e = 1.0, 0.0, 0
    for v in range(partner.shape[0]):
        if partner[v] >= 0:
            ph, pl = pivot_hi[v], pivot_lo[v]
            if ph < 0.0:
                ph, pl = -ph, -pl
            mh, ml = dd_mul(mh, ml, ph, pl)
            mh, k = math.frexp(mh)
            ml = math.ldexp(ml, -k)
            e += k
    return mh, ml, e


def _eliminate(A, group_ptr, coords, settings: PfaffianSettings):
    """(partner, pivot_hi, pivot_lo, ln |Pf A|) of the elimination of A with its pivot pairs recorded
    (:func:`evaluators.oracles.linalg.skew_pfaffian.multifrontal_log_pf`); None when singular."""
    N = A.shape[0]
    threads = settings.threads_for(N)
    system = SkewSystem.of(A, group_ptr, coords, replace(settings, even_separators=False), threads)
    pairs = (np.full(N, -2, np.int64), np.zeros(N), np.zeros(N))
    logabs, _ = multifrontal_log_pf(system, settings, threads, pairs=pairs)
    return None if logabs == -np.inf else (*pairs, logabs)


def signed_log_pfaffian(A, group_ptr: np.ndarray | None = None, coords: np.ndarray | None = None,
                        settings: PfaffianSettings = PfaffianSettings(threads=1)) -> tuple[float, float]:
    """(ln |Pf A|, sign) of a sparse real skew-symmetric matrix (scipy sparse); (-inf, 0.0) when A is
    (numerically) singular. group_ptr keeps groups of nodes together in the dissection, coords (one
    (x, y) per group) steer it; ``settings`` as for
    :func:`evaluators.oracles.linalg.skew_pfaffian.log_abs_pfaffian` (its ``even_separators`` unused
    here); the value does not depend on threads."""
    sign, _, _, _, logabs = signed_pfaffian_dd(A, group_ptr, coords, settings)
    return logabs, sign


def signed_pfaffian_dd(A, group_ptr: np.ndarray | None = None, coords: np.ndarray | None = None,
                       settings: PfaffianSettings = PfaffianSettings(extended=True, threads=1)):
    """(sign, hi, lo, e, ln |Pf A|) with Pf A = sign (hi + lo) 2^e, the product of the pivots in
    double-double (more digits than ln |Pf A| in a double carries when |ln Pf| is large: its ulp is
    1e-13 at 1000), arguments as :func:`signed_log_pfaffian`; (0.0, 0.0, 0.0, 0, -inf) when singular."""
    N = A.shape[0]
    if N == 0:
        return 1.0, 0.5, 0.0, 1, 0.0
    if N % 2 == 1:
        return 0.0, 0.0, 0.0, 0, -np.inf
    out = _eliminate(A, group_ptr, coords, settings)
    sign = 0 if out is None else int(pairing_sign(out[0], out[1]))
    if sign == 0:
        return 0.0, 0.0, 0.0, 0, -np.inf
    partner, pivot_hi, pivot_lo, logabs = out
    hi, lo, e = pivot_product(partner, pivot_hi, pivot_lo)
    return float(sign), float(hi), float(lo), int(e), logabs
