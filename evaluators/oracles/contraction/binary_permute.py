"""Axis permutation of 2 x 2 x ... x 2 tensors (the spin networks' intermediates), cache-blocked.

Why not ``np.ascontiguousarray(x.transpose(perm))``: numpy copies a transposed array element by
element along its innermost axis, here of length 2, and with a random permutation of k binary axes
nearly every read lands on another cache line. Measured on 2^24 entries: 1.9 s against 0.06 s for a
plain copy. These copies (the transposes before each batched matmul of a contraction) took as long
as the matmuls themselves on the P06 paths (``evolve perf tn``).

The copy goes in tiles (:class:`PermuteKernel`'s ``run_bits``): the lowest ``run_bits`` axes of the
source are a contiguous run of 2^run_bits entries there, those of the destination a run there; a
tile spans both sets of axes. Each tile's source runs are read whole into a small buffer (at most 2^(2 run_bits) entries,
512 KiB: in the core's cache), and the destination runs are written whole from it; the remaining
("outer") axes are walked in destination order, their offsets looked up in two small tables.

Why whole runs of 2^8 (2 KiB): this machine's memory (a virtual machine's) is latency-bound.
Copying 2^24 entries in runs of 2^5 / 2^7 / 2^9 / 2^11 entries at scattered places ran at
1.1 / 2.1 / 3.9 / 4.9e8 entries/s, against 5e8 in order. The kernel before (:data:`GATHER`, run_bits = 0:
the baseline of ``evolve perf tn``) gathered every entry of a 2^12-entry block through two offset
tables, so both sides moved in runs of 2^6: 1.4-1.6e8 entries/s on random
permutations of 24 axes, against 2.0-2.5e8 for tiles of 2^7 and 2.7e8 for 2^8 (2^9: 1.5e8, the
tile outgrows the cache). On P06 n = 250 (one thread, same tree): the permutes of a slice 0.17 ->
0.10 s (seed 1) and 0.46 -> 0.28 s (seed 0), the slice 0.47 -> 0.39 s and 1.21 -> 1.03 s.
Pure data movement: the output equals numpy's transpose entry for entry.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

import numpy as np
from numba import njit

@dataclass(frozen=True)
class PermuteKernel:
    """How :func:`permute_binary` copies (module doc).

    run_bits: the tiled copy in runs of 2^run_bits entries; 0: the blocked gather of the round
    before (``evolve perf tn``'s baseline).
    block_bits: the gather's blocks of up to 2^(2 block_bits) entries; a tensor with at most
    2 block_bits axes goes to numpy's copy with either kernel.
    table_bits: the outer axes' offsets in two tables, the last ``table_bits`` axes in one.
    """

    run_bits: int = 8  # 2^8 entries (2 KiB) read and written whole: module docstring
    block_bits: int = 6  # 2^12 float64 (32 KiB): 2^6 was 2-3x faster than 2^3 on the P06 paths, and 2^12 than
    # 2^10 on P06 n = 250 seed 1 (3 slices in one thread: 0.86-0.99 s against 1.06-1.14 s) and seed 0 (the whole
    # contraction 6.7-7.4 s against 7.8-9.4 s); 2^14 measured no faster than 2^12
    table_bits: int = 12


TILED = PermuteKernel()  # the oracle's
GATHER = PermuteKernel(run_bits=0)  # the kernel before the tiles: the benchmark's baseline

def _offsets(strides_src: list[int], strides_dst: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Source and destination offsets of every combination of the given axes (the last axis
    varying fastest)."""
    src, dst = np.zeros(1, np.int64), np.zeros(1, np.int64)
    for s, d in zip(strides_src, strides_dst):
        src = (src[:, None] + np.array([0, s])).ravel()
        dst = (dst[:, None] + np.array([0, d])).ravel()
    return src, dst


@njit(cache=True, nogil=True)
def _blocked_copy(src, dst, hi_s, hi_d, lo_s, lo_d, blk_s, blk_d):
    for h in range(hi_s.shape[0]):
        for lo in range(lo_s.shape[0]):
            sb = hi_s[h] + lo_s[lo]
            db = hi_d[h] + lo_d[lo]
            for m in range(blk_s.shape[0]):
                dst[db + blk_d[m]] = src[sb + blk_s[m]]


@njit(cache=True, nogil=True)
def _tiled_copy(src, dst, hi_s, hi_d, lo_s, lo_d, run_s, tile_d, tile_t, run_t, tmp):
    """For every outer offset: the tile's source runs into ``tmp`` (run r at r * 2^run_bits), then
    each destination run from ``tmp`` (entry j of destination run a at tmp[tile_t[a] + run_t[j]]).
    Returns the smallest and largest entry read (the executor's range check, at no extra pass)."""
    run = run_t.shape[0]
    smallest, largest = np.inf, -np.inf
    for h in range(hi_s.shape[0]):
        for lo in range(lo_s.shape[0]):
            sb = hi_s[h] + lo_s[lo]
            db = hi_d[h] + lo_d[lo]
            for r in range(run_s.shape[0]):
                s0 = sb + run_s[r]
                t0 = r * run
                for i in range(run):
                    v = src[s0 + i]
                    smallest = min(smallest, v)
                    largest = max(largest, v)
                    tmp[t0 + i] = v
            for a in range(tile_d.shape[0]):
                d0 = db + tile_d[a]
                t0 = tile_t[a]
                for j in range(run):
                    dst[d0 + j] = tmp[t0 + run_t[j]]
    return smallest, largest


def _strides(k: int, perm: tuple[int, ...]) -> tuple[list[int], list[int]]:
    """Each source axis's stride in the source and in the destination (C order, axes of length 2)."""
    dst_pos = [0] * k
    for j, a in enumerate(perm):
        dst_pos[a] = j
    return [1 << (k - 1 - a) for a in range(k)], [1 << (k - 1 - dst_pos[a]) for a in range(k)]


def _outer_tables(outer, src_stride, dst_stride, table_bits: int):
    """The outer axes' offsets (source, destination) as two tables: the last ``table_bits`` axes
    in one, the rest in the other."""
    n_lo = min(table_bits, len(outer))
    hi, lo = outer[: len(outer) - n_lo], outer[len(outer) - n_lo:]
    return (*_offsets([src_stride[a] for a in hi], [dst_stride[a] for a in hi]),
            *_offsets([src_stride[a] for a in lo], [dst_stride[a] for a in lo]))


@functools.lru_cache(maxsize=256)
def _tiled_tables(k: int, perm: tuple[int, ...], bits: int, table_bits: int) -> tuple[np.ndarray, ...]:
    """The offset tables of the tiled copy of k axes by ``perm`` in runs of 2^bits: cached, since
    every slice of a contraction repeats the same permutations (building them cost about 3% of a
    P06 slice)."""
    src_stride, dst_stride = _strides(k, perm)
    src_low = list(range(k - bits, k))  # contiguous in the source
    dst_low = list(perm[k - bits:])  # contiguous in the destination, in its order
    rows = [a for a in dst_low if a not in src_low]  # the tile's source runs: one per combination
    cols = [a for a in src_low if a not in dst_low]  # the tile's destination runs: one per combination
    outer = [a for a in perm if a not in src_low and a not in rows]  # in destination order: writes go forward
    # where an entry of the tile sits in tmp: source run (rows) * 2^bits + offset within the run
    tmp_stride = {a: src_stride[a] for a in src_low} | {a: 1 << (bits + len(rows) - 1 - i) for i, a in enumerate(rows)}
    run_s, _ = _offsets([src_stride[a] for a in rows], [0] * len(rows))
    tile_d, tile_t = _offsets([dst_stride[a] for a in cols], [tmp_stride[a] for a in cols])
    run_t, _ = _offsets([tmp_stride[a] for a in dst_low], [0] * bits)
    return (*_outer_tables(outer, src_stride, dst_stride, table_bits), run_s, tile_d, tile_t, run_t)


_THREAD = threading.local()  # each thread's tile buffer (slice workers permute side by side)


def _tile_buffer(size: int) -> np.ndarray:
    """A scratch buffer of ``size`` entries for this thread, reused from call to call (a fresh
    one of 2^16 entries is fresh pages, page faults, on every call)."""
    buffer = getattr(_THREAD, "tile", None)
    if buffer is None or buffer.size < size:
        buffer = _THREAD.tile = np.empty(max(size, 1 << 16))
    return buffer


def _permute_tiled(x: np.ndarray, perm: tuple[int, ...], out: np.ndarray, bits: int,
                   table_bits: int) -> tuple[float, float]:
    tables = _tiled_tables(x.ndim, perm, bits, table_bits)
    run_s = tables[4]
    return _tiled_copy(x.reshape(-1), out, *tables, _tile_buffer(run_s.size << bits))


def permute_binary(x: np.ndarray, perm: tuple[int, ...], out: np.ndarray | None = None,
                   kernel: PermuteKernel = TILED) -> np.ndarray:
    """C-contiguous ``x.transpose(perm)`` for a C-contiguous float64 ``x`` whose axes all have
    length 2 (anything else: numpy's copy), copied by ``kernel``. A view when ``perm`` is the
    identity. ``out``: a flat float64 buffer of ``x.size`` entries to write the blocked copy into
    (the result is a view of it); unused by the numpy fallback and the identity."""
    return permute_binary_bounds(x, perm, out, kernel)[0]


def permute_binary_bounds(x: np.ndarray, perm: tuple[int, ...], out: np.ndarray | None = None,
                          kernel: PermuteKernel = TILED):
    """:func:`permute_binary`, and the smallest and largest entry of ``x`` when the tiled kernel
    made the copy (it reads every entry anyway), else None and None."""
    k = x.ndim
    perm = tuple(perm)
    if perm == tuple(range(k)):
        return x, None, None
    block_bits = kernel.block_bits
    if k <= 2 * block_bits or x.dtype != np.float64 or not x.flags.c_contiguous or any(d != 2 for d in x.shape):
        return np.ascontiguousarray(x.transpose(perm)), None, None
    out = np.empty(x.size) if out is None else out
    if kernel.run_bits:
        lo, hi = _permute_tiled(x, perm, out, min(kernel.run_bits, k), kernel.table_bits)
        return out.reshape((2,) * k), lo, hi
    src_stride, dst_stride = _strides(k, perm)
    # the block: the fastest block_bits axes of the source and of the destination
    block = sorted(set(range(k - block_bits, k)) | set(perm[k - block_bits:]))
    outer = [a for a in perm if a not in block]  # in destination order: writes go forward
    _blocked_copy(x.reshape(-1), out, *_outer_tables(outer, src_stride, dst_stride, kernel.table_bits),
                  *_offsets([src_stride[a] for a in block], [dst_stride[a] for a in block]))
    return out.reshape((2,) * k), None, None
