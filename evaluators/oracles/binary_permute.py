"""Axis permutation of 2 x 2 x ... x 2 tensors (the spin networks' intermediates), cache-blocked.

Why not ``np.ascontiguousarray(x.transpose(perm))``: numpy copies a transposed array element by
element along its innermost axis, here of length 2, and with a random permutation of k binary axes
nearly every read lands on another cache line. Measured on 2^24 entries: 1.9 s against 0.06 s for a
plain copy. These copies (the transposes before each batched matmul of a contraction) took as long
as the matmuls themselves on the P06 paths (``evolve perf tn``).

Here the copy goes in blocks: the lowest ``BLOCK_BITS`` axes of the source and of the destination
together span a block of at most 2^(2 BLOCK_BITS) entries, read and written a cache line at a time;
the remaining ("outer") axes are walked in destination order, their offsets looked up in two small
tables. Pure data movement: the output equals numpy's transpose entry for entry.
"""

from __future__ import annotations

import numpy as np
from numba import njit

BLOCK_BITS = 6  # blocks of up to 2^12 float64 (32 KiB): 2^6 was 2-3x faster than 2^3 on the P06 paths, and 2^12
# than 2^10 on P06 n = 250 seed 1 (3 slices in one thread: 0.86-0.99 s against 1.06-1.14 s) and seed 0 (the
# whole contraction 6.7-7.4 s against 7.8-9.4 s); 2^14 measured no faster than 2^12
_TABLE_BITS = 12  # the outer axes' offsets: two tables of at most 2^12 entries


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


def permute_binary(x: np.ndarray, perm: tuple[int, ...], out: np.ndarray | None = None) -> np.ndarray:
    """C-contiguous ``x.transpose(perm)`` for a C-contiguous float64 ``x`` whose axes all have
    length 2 (anything else: numpy's copy). A view when ``perm`` is the identity. ``out``: a flat
    float64 buffer of ``x.size`` entries to write the blocked copy into (the result is a view of
    it); unused by the numpy fallback and the identity."""
    k = x.ndim
    perm = tuple(perm)
    if perm == tuple(range(k)):
        return x
    if k <= 2 * BLOCK_BITS or x.dtype != np.float64 or not x.flags.c_contiguous or any(d != 2 for d in x.shape):
        return np.ascontiguousarray(x.transpose(perm))
    src_stride = [1 << (k - 1 - a) for a in range(k)]
    dst_pos = [0] * k
    for j, a in enumerate(perm):
        dst_pos[a] = j
    dst_stride = [1 << (k - 1 - dst_pos[a]) for a in range(k)]
    # the block: the fastest BLOCK_BITS axes of the source and of the destination
    block = sorted(set(range(k - BLOCK_BITS, k)) | set(perm[k - BLOCK_BITS:]))
    outer = [a for a in perm if a not in block]  # in destination order: writes go forward
    n_lo = min(_TABLE_BITS, len(outer))
    hi, lo = outer[: len(outer) - n_lo], outer[len(outer) - n_lo:]
    tables = [_offsets([src_stride[a] for a in axes], [dst_stride[a] for a in axes]) for axes in (hi, lo, block)]
    out = np.empty(x.size) if out is None else out
    _blocked_copy(x.reshape(-1), out, *tables[0], *tables[1], *tables[2])
    return out.reshape((2,) * k)
