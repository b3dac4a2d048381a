"""The float64 contraction of a positive tensor network along a cotengra tree, checked for underflow.

Each pairwise contraction is one batched matmul (numpy, BLAS): the operands' axes are brought into
(batch, kept, summed) order by :func:`permute_binary` (only when their memory order does not already
allow a matmul, possibly of a transposed view), and the product stays in the order it comes out in
(batch, kept of one, kept of the other): intermediates carry their index labels in memory order, so
no output transpose is ever made. Products and permuted copies are written into reused buffers
(:class:`Buffers`, one pool per slice worker: after its first slice a worker allocates nothing).
Then one pass over the product (numba) takes its smallest and largest entries: an entry below
``J * TINY`` (J = terms summed into it) raises :class:`RangeExceeded` (the caller redoes the
contraction on logs); a largest entry outside [2^-64, 2^64] rescales the product by a power of
two (exact), the power kept aside.

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
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from evaluators.oracles.binary_permute import permute_binary

#: an entry >= J * TINY (J terms summed) cannot have lost anything significant to underflow
TINY = 1e-290
_RESCALE_ABOVE_BITS = 64  # the largest entry kept within [2^-64, 2^64]: products stay far from overflow


class RangeExceeded(ArithmeticError):
    """An intermediate of the linear contraction has an entry too small to be exact."""


class Buffers:
    """Flat float64 buffers handed out by size and taken back when their tensor is consumed, so
    the matmul products and permuted copies of one slice reuse the memory of the ones before, and
    every slice after the first reuses the first's (a slice worker's slices have the same shapes).

    Why: memory the process has not touched yet costs far more than the arithmetic on it. Each
    intermediate of 2^26 entries was a fresh allocation (glibc maps, and unmaps on free, any
    block this large), and writing into fresh pages took 1.5 s against 0.07 s for the matmul
    into a buffer already written (P06 n = 250, seed 1, the slice's largest product; on this
    machine a fresh page is also a fault in the virtual machine's host). Kept for one contraction
    only (:func:`linear_log`): the pool holds at most the buffers live at once per size."""

    def __init__(self) -> None:
        self._free: dict[int, list[np.ndarray]] = defaultdict(list)

    def take(self, size: int) -> np.ndarray:
        free = self._free[size]
        return free.pop() if free else np.empty(size)

    def give(self, buffer: np.ndarray | None) -> None:
        if buffer is not None:
            self._free[buffer.size].append(buffer)


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


def _operand(x: np.ndarray, ix: tuple, batch: tuple, summed: tuple, summed_last: bool, buffers: Buffers):
    """``x`` (axes labelled ``ix`` in memory order) as a 3-d (batch, kept, summed) matrix stack when
    summed_last, else (batch, summed, kept), the kept labels in order, and the buffer taken from
    ``buffers`` for it (None for a view): a view when the memory order allows it (a transposed view
    included), else a blocked copy."""
    kept = tuple(c for c in ix if c not in batch and c not in summed)
    size = dict(zip(ix, x.shape))
    nb, nk, ns = (math.prod(size[c] for c in g) for g in (batch, kept, summed))
    if ix == batch + kept + summed:
        m = x.reshape(nb, nk, ns)
        return (m if summed_last else m.swapaxes(1, 2)), kept, None
    if ix == batch + summed + kept:
        m = x.reshape(nb, ns, nk)
        return (m.swapaxes(1, 2) if summed_last else m), kept, None
    order = batch + kept + summed if summed_last else batch + summed + kept
    buffer = buffers.take(x.size)
    m = permute_binary(x, tuple(ix.index(c) for c in order), out=buffer)
    if m.base is not buffer:  # numpy's copy (off the blocked copy's domain): the buffer is unused
        buffers.give(buffer)
        buffer = None
    return (m.reshape(nb, nk, ns) if summed_last else m.reshape(nb, ns, nk)), kept, buffer


def contract_pair(a: np.ndarray, ia: tuple, b: np.ndarray, ib: tuple, ip,
                  buffers: Buffers | None = None) -> tuple[np.ndarray, tuple, int]:
    """The contraction of a (labels ia) with b (labels ib) keeping the labels in ``ip`` (any
    order): the product (C-contiguous, a view of a buffer from ``buffers`` when given), its
    labels in memory order, and J, the number of terms summed into each entry."""
    buffers = buffers if buffers is not None else Buffers()
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
    A, kept_a, buffer_a = _operand(a, ia, batch, summed, summed_last=True, buffers=buffers)
    B, kept_b, buffer_b = _operand(b, ib, batch, summed, summed_last=False, buffers=buffers)
    size = dict(zip(ia, a.shape)) | dict(zip(ib, b.shape))
    out = buffers.take(A.shape[0] * A.shape[1] * B.shape[2])
    np.matmul(A, B, out=out.reshape(A.shape[0], A.shape[1], B.shape[2]))
    buffers.give(buffer_a)
    buffers.give(buffer_b)
    labels = batch + kept_a + kept_b
    return out.reshape([size[c] for c in labels]), labels, summed_alone * math.prod(size[c] for c in summed)


def _contract_slice(tree, arrays: list[np.ndarray], i: int, buffers: Buffers | None = None) -> float:
    """Natural log of slice i's contraction (arrays: the inputs, not yet sliced); intermediates in
    buffers from ``buffers``, given back as they are consumed."""
    buffers = buffers if buffers is not None else Buffers()
    sliced = tree.sliced_inds
    temps, exponent = {}, 0
    for leaf, arr in enumerate(tree.slice_arrays(arrays, i)):  # (tensor, labels, its pooled buffer)
        temps[leaf] = (np.ascontiguousarray(arr), tuple(c for c in tree.inputs[leaf] if c not in sliced), None)
    for p, left, right in tree.traverse():
        (a, ia, buffer_a), (b, ib, buffer_b) = temps.pop(left), temps.pop(right)
        out, labels, summed = contract_pair(a, ia, b, ib, tree.get_inds(p), buffers)
        buffers.give(buffer_a)
        buffers.give(buffer_b)
        out, e = _checked_scaled(out, summed)
        exponent += e
        temps[p] = (out, labels, out.base)  # the product is a reshaped view of its buffer
    (x, ix, buffer), = temps.values()
    total, e = _checked_scaled(np.asarray(x.sum(), dtype=float).reshape(1), x.size)  # a single tensor, or the root
    buffers.give(buffer)
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
    workers = max(1, min(slice_workers, tree.nslices))

    def worker_slices(w: int) -> list[float]:  # one buffer pool per worker, reused across its slices
        buffers = Buffers()
        return [_contract_slice(tree, arrays, i, buffers) for i in range(w, tree.nslices, workers)]

    if workers == 1:
        return log_sum(worker_slices(0))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return log_sum([v for values in pool.map(worker_slices, range(workers)) for v in values])
