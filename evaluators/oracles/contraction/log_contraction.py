"""The natural log of a positive tensor network's full contraction, exact at any temperature.

Why not ``tree.contract(arrays, strip_exponent=True)`` alone. Stripping the exponent rescales
each intermediate by its largest entry, so the largest entry stays 1 but the smallest may not:
at low temperature a tensor holds weights from 1 down to exp(-2 beta sum |w|), and the products
inside one pairwise contraction leave the float64 range (below 1e-308) although their sum may
carry the ground states: a 12 x 12 +-J grid at beta = 100 came out 2.5 low in log Z, a 3-regular
graph with a plaquette at beta = 200 lost 680 (the configurations with the best total weight
were locally bad by more than 708 / beta), and colder the contraction returned NaN.

Here:

- the linear route (:mod:`evaluators.oracles.contraction.linear_contraction`) contracts in float64 and checks
  every intermediate as it is made: all entries are sums of positive products, and a product
  that underflows is below 2.3e-308, so an intermediate whose every entry is at least
  ``J * TINY`` (J = number of terms summed into each entry) lost less than 2.3e-308 / TINY of
  any entry: exact to rounding. The inputs are checked the same way.
- when a check fails (cold), the contraction is redone on logs: each entry is a log weight,
  each pairwise contraction is a batched matrix product of exp(A - max_j A) and exp(B - max_j B)
  (BLAS), and any output entry whose product fell below ``J * TINY`` is recomputed exactly by a
  two-pass log-sum-exp over its terms. Nothing can underflow, at some extra cost (several times
  the float64 route's, more the colder it is): under a time budget
  (:mod:`evaluators.oracles.budget`) it refuses before it starts when the float64 route's
  predicted time times LOG_ROUTE_SLOWDOWN does not fit, and before an exact recomputation that
  does not, and it checks the budget between pairwise contractions.

Both run with BLAS limited to one thread (threadpoolctl): the contractions are batched matrix
products of many small matrices, and OpenBLAS's threads synchronise per call; on the 2 shared
cores here that made P06 n = 200 3-5x slower than one thread (``evolve perf tn``). The slices
of a sliced tree are coarse-grained work instead: the linear route contracts ``SLICE_WORKERS``
of them at once in threads.
"""

from __future__ import annotations

import math
import time

import numpy as np
from numba import njit, prange
from threadpoolctl import threadpool_limits

from evaluators.oracles.budget import affordable, check
from evaluators.oracles.contraction.binary_permute import TILED, PermuteKernel
from evaluators.oracles.contraction.linear_contraction import TINY, RangeExceeded, linear_log, log_sum

#: slices contracted at once: one per core here; each holds its own intermediates (up to the budget)
SLICE_WORKERS = 2
#: the log-domain route's time over the float64 route's, at least (T12 n = 256: 17 s at beta 1, 90 s
#: in logs at beta 40; colder, more entries are recomputed term by term, each costing EXACT_TERM_S)
LOG_ROUTE_SLOWDOWN = 5.0
EXACT_TERM_S = 1e-8


@njit(cache=True, parallel=True)
def _exact_log_matmul_entries(A, B, bb, ii, kk, out):
    """out[t] = log sum_j exp(A[b, i, j] + B[b, j, k]) for (b, i, k) = (bb[t], ii[t], kk[t])."""
    nj = A.shape[2]
    for t in prange(bb.shape[0]):
        b, i, k = bb[t], ii[t], kk[t]
        m = -np.inf
        for j in range(nj):
            m = max(m, A[b, i, j] + B[b, j, k])
        s = 0.0
        for j in range(nj):
            s += math.exp(A[b, i, j] + B[b, j, k] - m)
        out[t] = m + math.log(s)


def log_matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """C[b, i, k] = log sum_j exp(A[b, i, j] + B[b, j, k]) for finite logs A (nb, ni, nj) and
    B (nb, nj, nk), exact to rounding: BLAS on shifted exponentials, exact recomputation of any
    entry whose shifted product fell below nj * TINY."""
    nj = A.shape[2]
    if nj == 0:
        return np.full((A.shape[0], A.shape[1], B.shape[2]), -np.inf)
    am = A.max(axis=2, keepdims=True)
    bm = B.max(axis=1, keepdims=True)
    E = np.matmul(np.exp(A - am), np.exp(B - bm))
    bad = ~(E >= nj * TINY)
    with np.errstate(divide="ignore"):
        C = np.log(E)
    C += am
    C += bm
    if bad.any():
        bb, ii, kk = np.nonzero(bad)
        affordable(len(bb) * nj * EXACT_TERM_S, f"the cold (log-domain) contraction recomputing "
                   f"{len(bb):.3g} entries of {nj} terms each exactly")
        vals = np.empty(len(bb))
        _exact_log_matmul_entries(np.ascontiguousarray(A), np.ascontiguousarray(B), bb, ii, kk, vals)
        C[bb, ii, kk] = vals
    return C


def _log_sum_axes(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    if not axes:
        return x
    m = x.max(axis=axes, keepdims=True)
    return np.squeeze(m, axis=axes) + np.log(np.exp(x - m).sum(axis=axes))


def _log_pair(a: np.ndarray, ia: tuple, b: np.ndarray, ib: tuple, ip: tuple) -> np.ndarray:
    """Log-domain pairwise contraction of a (indices ia) and b (ib) onto the indices ip."""
    # an index in one operand only and not kept is summed within that operand first
    for x, ix, other in ((0, ia, ib), (1, ib, ia)):
        drop = tuple(k for k, c in enumerate(ix) if c not in other and c not in ip)
        if drop:
            arr = _log_sum_axes(a if x == 0 else b, drop)
            ix = tuple(c for c in ix if c in other or c in ip)
            if x == 0:
                a, ia = arr, ix
            else:
                b, ib = arr, ix
    batch = tuple(c for c in ia if c in ib and c in ip)
    summed = tuple(c for c in ia if c in ib and c not in ip)
    keep_a = tuple(c for c in ia if c not in ib)
    keep_b = tuple(c for c in ib if c not in ia)
    size = dict(zip(ia, a.shape)) | dict(zip(ib, b.shape))
    n = lambda cs: math.prod(size[c] for c in cs)  # noqa: E731
    A = np.transpose(a, [ia.index(c) for c in batch + keep_a + summed]).reshape(n(batch), n(keep_a), n(summed))
    B = np.transpose(b, [ib.index(c) for c in batch + summed + keep_b]).reshape(n(batch), n(summed), n(keep_b))
    C = log_matmul(A, B).reshape([size[c] for c in batch + keep_a + keep_b])
    order = batch + keep_a + keep_b
    return np.transpose(C, [order.index(c) for c in ip])


def _log_core(tree, log_arrays: list[np.ndarray]) -> float:
    """Natural log of the contraction of one slice (arrays already sliced), all in logs; every
    intermediate is kept relative to its largest entry, with the offset summed separately."""
    sliced = tree.sliced_inds
    temps = {}
    offset = 0.0
    for leaf, arr in enumerate(log_arrays):
        top = float(arr.max()) if arr.size else 0.0
        offset += top
        temps[leaf] = (arr - top, tuple(c for c in tree.inputs[leaf] if c not in sliced))
    root = None
    for p, l, r in tree.traverse():
        check("the cold (log-domain) contraction")
        (a, ia), (b, ib) = temps.pop(l), temps.pop(r)
        ip = tuple(tree.get_inds(p))
        c = _log_pair(a, ia, b, ib, ip)
        top = float(c.max())
        offset += top
        temps[p] = (c - top, ip)
        root = p
    if root is None:  # a single tensor
        (a, ia), = temps.values()
        return offset + float(_log_sum_axes(a, tuple(range(a.ndim))))
    c, ic = temps[root]
    return offset + float(_log_sum_axes(c, tuple(range(c.ndim))))


def _log_domain_log(tree, log_arrays: list[np.ndarray]) -> float:
    return log_sum([_log_core(tree, tree.slice_arrays(log_arrays, i)) for i in range(tree.nslices)])


def contract_log(tree, log_arrays: list[np.ndarray], force_log_domain: bool = False,
                 blas_threads: int | None = 1, slice_workers: int = SLICE_WORKERS,
                 linear_seconds: list | None = None, linear_predicted_s: float | None = None,
                 permute: PermuteKernel = TILED) -> float:
    """Natural log of the full contraction of exp(log_arrays) along ``tree`` (cotengra, sliced
    or not). ``log_arrays`` hold finite log weights; linear float64 where every intermediate
    passes the range check, else (or when forced) the log-domain contraction. ``blas_threads``:
    BLAS threads during the contraction (None: the library's default, the benchmark's baseline);
    ``slice_workers``: threads contracting the slices of a sliced tree side by side (linear route);
    ``linear_seconds``: a list that gets the wall seconds of the linear route when it gave the value;
    ``permute``: the linear route's copy kernel
    (:class:`evaluators.oracles.contraction.binary_permute.PermuteKernel`)."""
    with threadpool_limits(limits=blas_threads, user_api="blas"):
        if not force_log_domain:
            try:
                started = time.perf_counter()
                value = linear_log(tree, [np.exp(a) for a in log_arrays], slice_workers, permute)
                if linear_seconds is not None:
                    linear_seconds.append(time.perf_counter() - started)
                return value
            except RangeExceeded:
                pass
        if linear_predicted_s is not None:
            affordable(LOG_ROUTE_SLOWDOWN * linear_predicted_s, "the cold (log-domain) contraction",
                       "the float64 route underflows at this temperature")
        return _log_domain_log(tree, log_arrays)
