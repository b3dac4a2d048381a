"""The float64 contraction of a positive tensor network along a cotengra tree, checked for underflow.

Each pairwise contraction is one batched matmul (numpy, BLAS): the operands' axes are brought into
(batch, kept, summed) order by :func:`permute_binary` (only when their memory order does not already
allow a matmul, possibly of a transposed view), and the product stays in the order it comes out in
(batch, kept of one, kept of the other): intermediates carry their index labels in memory order, so
no output transpose is ever made. Products and permuted copies are written into reused buffers
(:class:`Buffers`, one pool per slice worker: after its first slice a worker allocates nothing).
Every product's smallest and largest entries are taken before it is used: an entry below
``J * TINY`` (J = terms summed into it) raises :class:`RangeExceeded` (the caller redoes the
contraction on logs); a largest entry outside [2^-64, 2^64] rescales the product by a power of
two (exact), the power kept aside. The check is made when the product is consumed, in the pass
of its permuted copy when it gets one (the tiled permute reads every entry anyway; nearly every
entry written on the P06 paths is permuted once), else in a pass of its own (numba): the separate
pass took 5-7% of a P06 n = 250 slice.

Why not cotengra's own ``tree.contract(..., strip_exponent=True)`` (the executor before, kept in
``oracle_bench`` as the baseline): numpy's copy of a transposed 2 x ... x 2 tensor is slow (see
:mod:`evaluators.oracles.contraction.binary_permute`), and stripping the exponent costs three more passes over
every intermediate (abs, max, divide) on top of the range check's. The exactness argument is
the one in :mod:`evaluators.oracles.contraction.log_contraction`: inputs are at most 1, every product that
underflows is below 2.3e-308, so an entry of at least J * TINY lost a relative 2.3e-308 / TINY at
most; the power-of-two rescaling changes no digit.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from evaluators.oracles.contraction.binary_permute import TILED, PermuteKernel, permute_binary_bounds
from evaluators.oracles.budget import check

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


def _checked_exponent(lo: float, hi: float, summed: int) -> int:
    """The e by which a tensor with smallest entry ``lo`` and largest ``hi`` is to be rescaled
    (by 2^-e; 0 when its largest entry is in range); RangeExceeded when its smallest entry (after
    rescaling) is below summed * TINY or not finite."""
    e = 0
    if not (2.0 ** -_RESCALE_ABOVE_BITS <= hi <= 2.0 ** _RESCALE_ABOVE_BITS):
        if not (math.isfinite(hi) and hi > 0.0):
            raise RangeExceeded
        e = math.frexp(hi)[1]
    if not (math.ldexp(lo, -e) >= summed * TINY):  # NaN fails too
        raise RangeExceeded
    return e


def _checked_scaled(x: np.ndarray, summed: int) -> tuple[np.ndarray, int]:
    """``x`` (C-contiguous) rescaled in place by 2^-e when its largest entry is out of range, and
    e; RangeExceeded when its smallest entry (after rescaling) is below summed * TINY or not finite."""
    if x.size == 0:
        return x, 0
    e = _checked_exponent(*_min_max(x.reshape(-1)), summed)
    if e:
        x *= math.ldexp(1.0, -e)
    return x, e


def _operand_recipe(ix: tuple, shape: tuple, batch: tuple, summed: tuple, summed_last: bool):
    """How an operand (axes labelled ``ix`` in memory order) becomes a 3-d (batch, kept, summed)
    matrix stack when summed_last, else (batch, summed, kept): (the permutation to copy it by,
    None for a view; the 3-d shape of the view or copy; whether to swap its last two axes, a
    transposed view), and its kept labels in order. A view when the memory order allows it."""
    kept = tuple(c for c in ix if c not in batch and c not in summed)
    size = dict(zip(ix, shape))
    nb, nk, ns = (math.prod(size[c] for c in g) for g in (batch, kept, summed))
    if ix == batch + kept + summed:
        return (None, (nb, nk, ns), not summed_last), kept
    if ix == batch + summed + kept:
        return (None, (nb, ns, nk), summed_last), kept
    order = batch + kept + summed if summed_last else batch + summed + kept
    return (tuple(ix.index(c) for c in order), (nb, nk, ns) if summed_last else (nb, ns, nk), False), kept


def _stack(x: np.ndarray, recipe: tuple, buffers: Buffers, summed: int | None, permute: PermuteKernel):
    """``x`` made a matrix stack by ``recipe`` (:func:`_operand_recipe`), the buffer taken from
    ``buffers`` for its copy (None for a view), and e: with ``summed`` (J of a product not yet
    checked) ``x`` is range-checked and rescaled by 2^-e as :func:`_checked_scaled` does, in the
    pass of its copy when the tiled permute makes one (e = 0 without ``summed``); the copy by ``permute``."""
    perm, shape, swap = recipe
    buffer, e, bounds = None, 0, (None, None)
    if perm is not None:
        buffer = buffers.take(x.size)
        copy, *bounds = permute_binary_bounds(x, perm, buffer, permute)
        if copy.base is not buffer:  # numpy's copy (off the blocked copy's domain): the buffer is unused
            buffers.give(buffer)
            buffer = None
    else:
        copy = x
    if summed is not None and x.size:
        lo, hi = bounds if bounds[0] is not None else _min_max(x.reshape(-1))
        e = _checked_exponent(lo, hi, summed)
        if e:
            copy *= math.ldexp(1.0, -e)
    m = copy.reshape(shape)
    return (m.swapaxes(1, 2) if swap else m), buffer, e


@functools.lru_cache(maxsize=4096)
def _pair_recipe(ia: tuple, shape_a: tuple, ib: tuple, shape_b: tuple, ip: tuple) -> tuple:
    """Everything :func:`contract_pair` decides from labels and shapes alone, cached: every slice of
    a contraction repeats the same pairs (this bookkeeping was most of the executor's Python time,
    which was 10-13% of a P06 slice). Returns (axes of a and of b summed alone first, whether the
    operands swap, the two operand recipes, the product's 3-d shape, its shape and labels, J)."""
    keep = set(ip)
    summed_alone = 1
    drops = []
    for ix, shape, other in ((ia, shape_a, ib), (ib, shape_b, ia)):  # in one operand only, not kept: summed first
        drop = tuple(k for k, c in enumerate(ix) if c not in other and c not in keep)
        summed_alone *= math.prod(shape[k] for k in drop)
        drops.append(drop)
    ia, shape_a = (tuple(c for k, c in enumerate(ia) if k not in drops[0]),
                   tuple(d for k, d in enumerate(shape_a) if k not in drops[0]))
    ib, shape_b = (tuple(c for k, c in enumerate(ib) if k not in drops[1]),
                   tuple(d for k, d in enumerate(shape_b) if k not in drops[1]))
    swap = math.prod(shape_b) > math.prod(shape_a)  # the larger operand sets the order of the shared labels
    if swap:
        ia, shape_a, ib, shape_b = ib, shape_b, ia, shape_a
    batch = tuple(c for c in ia if c in ib and c in keep)
    summed = tuple(c for c in ia if c in ib and c not in keep)
    recipe_a, kept_a = _operand_recipe(ia, shape_a, batch, summed, summed_last=True)
    recipe_b, kept_b = _operand_recipe(ib, shape_b, batch, summed, summed_last=False)
    size = dict(zip(ia, shape_a)) | dict(zip(ib, shape_b))
    out3 = tuple(math.prod(size[c] for c in g) for g in (batch, kept_a, kept_b))
    labels = batch + kept_a + kept_b
    return (tuple(drops), swap, recipe_a, recipe_b, out3, tuple(size[c] for c in labels), labels,
            summed_alone * math.prod(size[c] for c in summed))


def contract_pair(a: np.ndarray, ia: tuple, b: np.ndarray, ib: tuple, ip, buffers: Buffers | None = None,
                  permute: PermuteKernel = TILED) -> tuple[np.ndarray, tuple, int]:
    """The contraction of a (labels ia) with b (labels ib) keeping the labels in ``ip`` (any
    order): the product (C-contiguous, a view of a buffer from ``buffers`` when given), its
    labels in memory order, and J, the number of terms summed into each entry. An index in one
    operand only and not kept is summed within it first; the larger operand sets the order of
    the shared labels (it is copied least); operands permuted by ``permute``."""
    return _contract_checked(a, ia, None, b, ib, None, ip, buffers, permute)[:3]


def _contract_checked(a: np.ndarray, ia: tuple, summed_a: int | None, b: np.ndarray, ib: tuple,
                      summed_b: int | None, ip, buffers: Buffers | None = None, permute: PermuteKernel = TILED):
    """:func:`contract_pair`, each operand first range-checked (and rescaled) when its J is given
    (a product not checked yet; None: checked already, or an input), in the pass of its permuted
    copy when it has one: the product, its labels, its J, and the sum of the operands' e."""
    buffers = buffers if buffers is not None else Buffers()
    (drop_a, drop_b), swap, recipe_a, recipe_b, out3, shape, labels, summed = _pair_recipe(
        tuple(ia), a.shape, tuple(ib), b.shape, tuple(ip))
    e = 0
    if drop_a:  # checked before its lone axes are summed: the sums of entries in range are in range
        if summed_a is not None:
            a, e_a = _checked_scaled(a, summed_a)
            e, summed_a = e + e_a, None
        a = np.ascontiguousarray(a.sum(axis=drop_a))
    if drop_b:
        if summed_b is not None:
            b, e_b = _checked_scaled(b, summed_b)
            e, summed_b = e + e_b, None
        b = np.ascontiguousarray(b.sum(axis=drop_b))
    if swap:
        a, summed_a, b, summed_b = b, summed_b, a, summed_a
    A, buffer_a, e_a = _stack(a, recipe_a, buffers, summed_a, permute)
    B, buffer_b, e_b = _stack(b, recipe_b, buffers, summed_b, permute)
    out = buffers.take(math.prod(out3))
    np.matmul(A, B, out=out.reshape(out3))
    buffers.give(buffer_a)
    buffers.give(buffer_b)
    return out.reshape(shape), labels, summed, e + e_a + e_b


def _schedule(tree) -> tuple[list[tuple], list[tuple]]:
    """The tree's leaf labels (sliced ones removed) and its merges (parent, left, right, labels
    kept), listed once per contraction rather than per slice: cotengra's ``traverse`` and
    ``get_inds`` took 4.5 ms a slice on a 375-tensor P06 tree (a slice is 0.2-1 s)."""
    sliced = tree.sliced_inds
    leaves = [tuple(c for c in inp if c not in sliced) for inp in tree.inputs]
    return leaves, [(p, left, right, tuple(tree.get_inds(p))) for p, left, right in tree.traverse()]


def _contract_slice(tree, arrays: list[np.ndarray], i: int, buffers: Buffers | None = None,
                    schedule: tuple | None = None, permute: PermuteKernel = TILED) -> float:
    """Natural log of slice i's contraction (arrays: the inputs, not yet sliced); intermediates in
    buffers from ``buffers``, given back as they are consumed; ``schedule``: :func:`_schedule`
    of the tree (made here when not given); ``permute``: the copy kernel."""
    buffers = buffers if buffers is not None else Buffers()
    leaves, merges = schedule if schedule is not None else _schedule(tree)
    temps, exponent = {}, 0
    # (tensor, labels, its pooled buffer, J while not range-checked: products are checked when consumed)
    for leaf, arr in enumerate(tree.slice_arrays(arrays, i)):
        temps[leaf] = (np.ascontiguousarray(arr), leaves[leaf], None, None)
    for p, left, right, kept in merges:
        check("contracting the path")
        (a, ia, buffer_a, summed_a), (b, ib, buffer_b, summed_b) = temps.pop(left), temps.pop(right)
        out, labels, summed, e = _contract_checked(a, ia, summed_a, b, ib, summed_b, kept, buffers, permute)
        buffers.give(buffer_a)
        buffers.give(buffer_b)
        exponent += e
        temps[p] = (out, labels, out.base, summed)  # the product is a reshaped view of its buffer
    (x, ix, buffer, summed), = temps.values()
    if summed is not None:  # the root product
        x, e = _checked_scaled(x, summed)
        exponent += e
    total, e = _checked_scaled(np.asarray(x.sum(), dtype=float).reshape(1), x.size)  # a single tensor, or the root
    buffers.give(buffer)
    return math.log(float(total[0])) + (exponent + e) * math.log(2.0)


def log_sum(values: list[float]) -> float:
    """log sum exp(values), without overflow."""
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def linear_log(tree, arrays: list[np.ndarray], slice_workers: int = 1, permute: PermuteKernel = TILED) -> float:
    """Natural log of the full contraction of ``arrays`` (positive float64, every entry <= 1,
    axes in the order of ``tree.inputs``) along ``tree``, summing its slices, ``slice_workers``
    of them at once in threads (numpy and the numba kernels release the GIL). RangeExceeded when
    an entry of an input or intermediate is too small for float64 to be exact. ``permute``: how
    operands are copied into matrix order (:class:`evaluators.oracles.contraction.binary_permute.PermuteKernel`)."""
    for a in arrays:
        if a.size and not float(a.min()) >= TINY:
            raise RangeExceeded
    workers = max(1, min(slice_workers, tree.nslices))
    schedule = _schedule(tree)

    def worker_slices(w: int) -> list[float]:  # one buffer pool per worker, reused across its slices
        buffers = Buffers()
        return [_contract_slice(tree, arrays, i, buffers, schedule, permute) for i in range(w, tree.nslices, workers)]

    if workers == 1:
        return log_sum(worker_slices(0))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return log_sum([v for values in pool.map(worker_slices, range(workers)) for v in values])
