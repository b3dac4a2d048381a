"""The float64 contraction of a positive tensor network along a cotengra tree, checked for underflow.

Each pairwise contraction is one batched matmul (numpy, BLAS): the operands' axes are brought into
(batch, kept, summed) order by :func:`permute_binary` (only when their memory order does not already
allow a matmul, possibly of a transposed view), and the product stays in the order it comes out in
(batch, kept of one, kept of the other): intermediates carry their index labels in memory order, so
no output transpose is ever made. Then one pass over the product (numba) takes its smallest and
largest entries: an entry below ``J * TINY`` (J = terms summed into it) raises
:class:`RangeExceeded` (the caller redoes the contraction on logs); a largest entry outside
[2^-64, 2^64] rescales the product by a power of two (exact), the power kept aside.

Why not cotengra's own ``tree.contract(..., strip_exponent=True)`` (the executor before, kept in
``oracle_bench`` as the baseline): numpy's copy of a transposed 2 x ... x 2 tensor is slow (see
:mod:`evaluators.oracles.binary_permute`), and stripping the exponent costs three more passes over
every intermediate (abs, max, divide) on top of the range check's. The exactness argument is
the one in :mod:`evaluators.oracles.log_contraction`: inputs are at most 1, every product that
underflows is below 2.3e-308, so an entry of at least J * TINY lost a relative 2.3e-308 / TINY at
most; the power-of-two rescaling changes no digit.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from evaluators.oracles.binary_permute import permute_binary

#: an entry >= J * TINY (J terms summed) cannot have lost anything significant to underflow
TINY = 1e-290
_RESCALE_ABOVE_BITS = 64  # the largest entry kept within [2^-64, 2^64]: products stay far from overflow


class RangeExceeded(ArithmeticError):
    """An intermediate of the linear contraction has an entry too small to be exact."""


@njit(cache=True, nogil=True)
def _min_max(x):
    lo, hi = np.inf, -np.inf
    for v in x:
        lo = min(lo, v)
        hi = max(hi, v)
    return lo, hi


def _checked_scaled(x: np.ndarray, summed: int) -> tuple[np.ndarray, int]:
    """``x`` (C-contiguous) rescaled in place by 2^-e when its largest entry is out of range, and
    e; RangeExceeded when its smallest entry (after rescaling) is below summed * TINY or not finite."""
    if x.size == 0:
        return x, 0
    lo, hi = _min_max(x.reshape(-1))
    e = 0
    if not (2.0 ** -_RESCALE_ABOVE_BITS <= hi <= 2.0 ** _RESCALE_ABOVE_BITS):
        if not (math.isfinite(hi) and hi > 0.0):
            raise RangeExceeded
        e = math.frexp(hi)[1]
    if not (math.ldexp(lo, -e) >= summed * TINY):  # NaN fails too
        raise RangeExceeded
    if e:
        x *= math.ldexp(1.0, -e)
    return x, e


def _operand(x: np.ndarray, ix: tuple, batch: tuple, summed: tuple, summed_last: bool):
    """``x`` (axes labelled ``ix`` in memory order) as a 3-d (batch, kept, summed) matrix stack when
    summed_last, else (batch, summed, kept), and the kept labels in order; a view when the memory
    order allows it (a transposed view included), else a blocked copy."""
    kept = tuple(c for c in ix if c not in batch and c not in summed)
    size = dict(zip(ix, x.shape))
    nb, nk, ns = (math.prod(size[c] for c in g) for g in (batch, kept, summed))
    if ix == batch + kept + summed:
        m = x.reshape(nb, nk, ns)
        return (m if summed_last else m.swapaxes(1, 2)), kept
    if ix == batch + summed + kept:
        m = x.reshape(nb, ns, nk)
        return (m.swapaxes(1, 2) if summed_last else m), kept
    order = batch + kept + summed if summed_last else batch + summed + kept
    m = permute_binary(x, tuple(ix.index(c) for c in order))
    return (m.reshape(nb, nk, ns) if summed_last else m.reshape(nb, ns, nk)), kept


def contract_pair(a: np.ndarray, ia: tuple, b: np.ndarray, ib: tuple, ip) -> tuple[np.ndarray, tuple, int]:
    """The contraction of a (labels ia) with b (labels ib) keeping the labels in ``ip`` (any
    order): the product (C-contiguous), its labels in memory order, and J, the number of terms
    summed into each entry."""
    keep = set(ip)
    summed_alone = 1
    for which in (0, 1):  # an index in one operand only and not kept is summed within it first
        x, ix, other = (a, ia, ib) if which == 0 else (b, ib, ia)
        drop = tuple(k for k, c in enumerate(ix) if c not in other and c not in keep)
        if drop:
            summed_alone *= math.prod(x.shape[k] for k in drop)
            x = np.ascontiguousarray(x.sum(axis=drop))
            ix = tuple(c for c in ix if c in other or c in keep)
            a, ia = (x, ix) if which == 0 else (a, ia)
            b, ib = (x, ix) if which == 1 else (b, ib)
    if b.size > a.size:  # the larger operand sets the order of the shared labels: it is copied least
        a, ia, b, ib = b, ib, a, ia
    batch = tuple(c for c in ia if c in ib and c in keep)
    summed = tuple(c for c in ia if c in ib and c not in keep)
    A, kept_a = _operand(a, ia, batch, summed, summed_last=True)
    B, kept_b = _operand(b, ib, batch, summed, summed_last=False)
    size = dict(zip(ia, a.shape)) | dict(zip(ib, b.shape))
    out = np.matmul(A, B)
    labels = batch + kept_a + kept_b
    return out.reshape([size[c] for c in labels]), labels, summed_alone * math.prod(size[c] for c in summed)


def _contract_slice(tree, arrays: list[np.ndarray], i: int) -> float:
    """Natural log of slice i's contraction (arrays: the inputs, not yet sliced)."""
    sliced = tree.sliced_inds
    temps, exponent = {}, 0
    for leaf, arr in enumerate(tree.slice_arrays(arrays, i)):
        temps[leaf] = (np.ascontiguousarray(arr), tuple(c for c in tree.inputs[leaf] if c not in sliced))
    for p, left, right in tree.traverse():
        (a, ia), (b, ib) = temps.pop(left), temps.pop(right)
        out, labels, summed = contract_pair(a, ia, b, ib, tree.get_inds(p))
        out, e = _checked_scaled(out, summed)
        exponent += e
        temps[p] = (out, labels)
    (x, ix), = temps.values()
    total, e = _checked_scaled(np.asarray(x.sum(), dtype=float).reshape(1), x.size)  # a single tensor, or the root
    return math.log(float(total[0])) + (exponent + e) * math.log(2.0)


def log_sum(values: list[float]) -> float:
    """log sum exp(values), without overflow."""
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def linear_log(tree, arrays: list[np.ndarray], slice_workers: int = 1) -> float:
    """Natural log of the full contraction of ``arrays`` (positive float64, every entry <= 1,
    axes in the order of ``tree.inputs``) along ``tree``, summing its slices, ``slice_workers``
    of them at once in threads (numpy and the numba kernels release the GIL). RangeExceeded when
    an entry of an input or intermediate is too small for float64 to be exact."""
    for a in arrays:
        if a.size and not float(a.min()) >= TINY:
            raise RangeExceeded
    if tree.nslices == 1 or slice_workers <= 1:
        return log_sum([_contract_slice(tree, arrays, i) for i in range(tree.nslices)])
    with ThreadPoolExecutor(max_workers=min(slice_workers, tree.nslices)) as pool:
        return log_sum(list(pool.map(lambda i: _contract_slice(tree, arrays, i), range(tree.nslices))))
