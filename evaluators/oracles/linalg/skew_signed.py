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
run does not matter: only the set of ordered pairs and the signs of their pivots. The front
kernel (:func:`evaluators.oracles.linalg.skew_front.eliminate_front`, or the one-triangle kernel of
:mod:`evaluators.oracles.linalg.skew_front_half` in double-double) leaves pair k at front positions
(r, r - 1), r = f - 1, f - 3, ..., with its pivot still at H[r, r - 1] (later swaps touch only
positions below the eliminated ones); :func:`record_pairs` reads them off after each front.

Ordering, threshold pivoting, double-double and threads as in the planar oracle; no running
error bound (the torus oracle estimates its rounding by a second elimination along another
ordering). Cost O(N^1.5) for a mesh-like graph with separators of O(sqrt N) nodes: the torus is
not planar, but it is cut like a grid (its first separators, across both seams, are twice as
long).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from evaluators.oracles.linalg.double_double import dd_mul
from evaluators.oracles.linalg.front_stack import assemble_front, grown_stack, push_block, stack_of, top_block
from evaluators.oracles.linalg.nested_dissection import grouped_dissection
from evaluators.oracles.linalg.skew_front import UNIT_ROUNDOFF, UNIT_ROUNDOFF_DD, eliminate_front
from evaluators.oracles.linalg.skew_front_half import eliminate_front_half
from evaluators.oracles.linalg.skew_pfaffian import PfaffianSettings, front_owner, sum_front_logs
from evaluators.oracles.linalg.subtree_threads import run_tree_in_threads, split_depth_for, split_tree


@njit(cache=True, nogil=True)
def record_pairs(H, L, ext, f, na, loc, idx, partner, pivot_hi, pivot_lo):
    """After a front's elimination: pair (r, r - 1) of front positions, r = f - 1, f - 3, ..., na + 1,
    is the pivot (p, q) = (node idx[loc[r]], node idx[loc[r - 1]]) with value H[r, r - 1] (+ L[r, r - 1]
    in double-double). Writes partner[p] = q, partner[q] = -1 - p (q is second) and the pivot at p."""
    for r in range(f - 1, na, -2):
        p = idx[loc[r]]
        q = idx[loc[r - 1]]
        partner[p] = q
        partner[q] = -1 - p
        pivot_hi[p] = H[r, r - 1]
        pivot_lo[p] = L[r, r - 1] if ext else 0.0


@njit(cache=True, nogil=True)
def eliminate_fronts_signed(indptr, nbr, val, perm, own_lo, own_hi, n_child, owner, t_lo, t_hi, stack, u, ext, half,
                            front_logs, partner, pivot_hi, pivot_lo):
    """:func:`evaluators.oracles.linalg.skew_pfaffian.eliminate_fronts` (no error bound, no statistics) with
    each front's pivot pairs recorded (:func:`record_pairs`). Returns (stack, singular)."""
    eps = UNIT_ROUNDOFF_DD if ext else UNIT_ROUNDOFF
    N = perm.shape[0]
    T = own_lo.shape[0]
    stack = grown_stack(stack, t_hi - t_lo)
    pos = np.full(N, -1, np.int64)
    idx = np.empty(N, np.int64)
    for t in range(t_lo, t_hi):
        H, L, B, f, k, stack = assemble_front(indptr, nbr, val, perm, own_lo, own_hi, n_child, owner, t, stack, ext,
                                              False, eps, pos, idx)
        if half:
            lp, n, loc = eliminate_front_half(H, L, ext, k, u if f > k else 0.0)
        else:
            lp, n, loc, _ = eliminate_front(H, L, ext, B, False, k, u if f > k else 0.0)
        front_logs[t] = lp
        record_pairs(H, L, ext, f, n, loc, idx, partner, pivot_hi, pivot_lo)
        if n > 0 and t == T - 1:
            return stack, True
        stack, _ = push_block(stack, H, L, B, n, loc, k, idx, f, pos, ext, False)
    return stack, False


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
    """(partner, pivot_hi, pivot_lo, front_logs) of the signed elimination of A; None when singular."""
    N = A.shape[0]
    extended, u, leaf_nodes, threads = settings.extended, settings.u, settings.leaf_nodes, settings.threads
    half = settings.half
    csr = A.tocsr()
    csr.sum_duplicates()
    group_ptr = np.arange(N + 1) if group_ptr is None else np.asarray(group_ptr, dtype=np.int64)
    threads = settings.threads_for(N)
    perm, own_lo, own_hi, n_child = grouped_dissection(csr, group_ptr, coords, leaf_nodes, False, threads)
    indptr, nbr, val = csr.indptr.astype(np.int64), csr.indices.astype(np.int64), csr.data.astype(np.float64)
    T = own_lo.shape[0]
    owner = front_owner(perm, own_lo, own_hi)
    front_logs = np.zeros(T)
    partner = np.full(N, -2, np.int64)
    pivot_hi, pivot_lo = np.zeros(N), np.zeros(N)
    ext = bool(extended)

    def run(t_lo: int, t_hi: int, child_blocks: list, alone=None):
        stack = stack_of(child_blocks, ext, False)
        stack, singular = eliminate_fronts_signed(indptr, nbr, val, perm, own_lo, own_hi, n_child, owner, t_lo, t_hi,
                                                  stack, float(u), ext, half, front_logs, partner, pivot_hi, pivot_lo)
        return None if singular else top_block(stack)

    if threads > 1:
        root = run_tree_in_threads(split_tree(n_child, own_lo, own_hi, split_depth_for(threads)), run, threads)
    else:
        root = run(0, T, [])
    return None if root is None else (partner, pivot_hi, pivot_lo, front_logs)


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
    partner, pivot_hi, pivot_lo, front_logs = out
    hi, lo, e = pivot_product(partner, pivot_hi, pivot_lo)
    logabs = float(sum_front_logs(front_logs, np.zeros(len(front_logs)))[0])
    return float(sign), float(hi), float(lo), int(e), logabs
