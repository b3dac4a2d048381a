"""Contracting a network of tensors whose indices all have dimension 2 (spins) along a path.

cotengra finds the path and the slicing; this module executes it. Why not cotengra's own numpy
executor: the intermediates of an Ising network have 20-28 axes of size 2, and numpy permutes
such arrays element by element through its general iterator (measured 30-100 ns per entry
here), then multiplies matrices of shape (2^20, 4) x (4, 2) or batches of 2 x 2 blocks, where
BLAS reaches 0.04-0.06 GFlop/s. Here an axis permutation of a 2^k array is a permutation of the
bits of the flat index, done by table lookups in numba (a few ns per entry), each intermediate
keeps the axis order its product produced (batch, left, right) so most permutations vanish,
and the product is a numba loop unless the matrices are large enough for BLAS.

Every intermediate is divided by its largest entry and the natural log of that factor is
accumulated, so nothing overflows or underflows at any scale (entries stay in (0, 1]).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

BLAS_MIN = 32  # matrices with all of M, K, N at least this go to numpy.matmul (BLAS)


@njit(cache=True, parallel=True)
def _permute_bits(src, table, out):
    """out[j] = src[sum_c table[c, byte c of j]] for every flat index j (len(out) = 256 x blocks)."""
    n_chunks = table.shape[0]
    for blk in prange(out.shape[0] >> 8):
        base = 0
        for c in range(1, n_chunks):
            base += table[c, (blk >> (8 * (c - 1))) & 255]
        o = blk << 8
        for lo in range(256):
            out[o + lo] = src[base + table[0, lo]]


def permuted(x: np.ndarray, order: list[int]) -> np.ndarray:
    """np.ascontiguousarray(x.transpose(order)).ravel() for an array of 2 x 2 x ... x 2, by bit
    permutation (x may be any strided view with non-negative strides)."""
    k = x.ndim
    if k < 8:
        return np.ascontiguousarray(np.transpose(x, order)).reshape(-1)
    if list(order) == list(range(k)) and x.flags.c_contiguous:
        return x.reshape(-1)
    strides = [s // x.itemsize for s in x.strides]
    # output bit b (from the least significant) is output axis k - 1 - b = source axis order[...]
    src_stride = np.array([strides[order[k - 1 - b]] for b in range(k)], dtype=np.int64)
    n_chunks = (k + 7) // 8
    table = np.zeros((n_chunks, 256), np.int64)
    v = np.arange(256)
    for c in range(n_chunks):
        for b in range(8):
            if 8 * c + b < k:
                table[c] += ((v >> b) & 1) * src_stride[8 * c + b]
    span = int(sum(s for s in strides)) + 1  # largest offset + 1 (all strides are >= 0)
    flat = np.lib.stride_tricks.as_strided(x, shape=(span,), strides=(x.itemsize,))
    out = np.empty(1 << k)
    _permute_bits(flat, table, out)
    return out


@njit(cache=True, parallel=True)
def _small_bmm(a, b, out):
    """out[i, m, n] = sum_k a[i, m, k] b[i, k, n] (batches of small matrices)."""
    B, M, K = a.shape
    N = b.shape[2]
    if B >= M:
        for i in prange(B):
            for m in range(M):
                for n in range(N):
                    s = 0.0
                    for q in range(K):
                        s += a[i, m, q] * b[i, q, n]
                    out[i, m, n] = s
    else:
        for m in prange(M):
            for i in range(B):
                for n in range(N):
                    s = 0.0
                    for q in range(K):
                        s += a[i, m, q] * b[i, q, n]
                    out[i, m, n] = s


def _product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    B, M, K = a.shape
    N = b.shape[2]
    if min(M, K, N) >= BLAS_MIN:
        return np.matmul(a, b)
    out = np.empty((B, M, N))
    _small_bmm(a, b, out)
    return out


def contract_path(inputs: list[tuple[str, ...]], arrays: list[np.ndarray], ssa_path, output=()) -> tuple[float, float]:
    """(mantissa, natural log scale) with sum over all indices of the product of the arrays =
    mantissa * exp(scale); ``inputs`` names each array's axes (every axis of dimension 2),
    ``ssa_path`` is a contraction order in static single assignment form (cotengra's
    ``tree.get_ssa_path()``). Only a scalar output (output = ()) is supported."""
    if output:
        raise ValueError("only full contractions (a scalar) are supported")
    live = {i: (tuple(ix), np.asarray(a, dtype=np.float64)) for i, (ix, a) in enumerate(zip(inputs, arrays))}
    count: dict[str, int] = {}
    for ix in inputs:
        for x in ix:
            count[x] = count.get(x, 0) + 1
    log_scale = 0.0
    next_id = len(inputs)
    for i, j in ssa_path:
        (ia, a), (ib, b) = live.pop(i), live.pop(j)
        ia, a, log_scale = _sum_private(ia, a, count, log_scale)
        ib, b, log_scale = _sum_private(ib, b, count, log_scale)
        in_b = set(ib)
        in_a = set(ia)
        shared = [x for x in ia if x in in_b]
        batch = [x for x in shared if count[x] > 2]
        con = [x for x in shared if count[x] == 2]
        ka = [x for x in ia if x not in in_b]
        kb = [x for x in ib if x not in in_a]
        pa = permuted(a.reshape((2,) * len(ia)), [ia.index(x) for x in batch + ka + con])
        pb = permuted(b.reshape((2,) * len(ib)), [ib.index(x) for x in batch + con + kb])
        nB, nM, nK, nN = 1 << len(batch), 1 << len(ka), 1 << len(con), 1 << len(kb)
        c = _product(pa.reshape(nB, nM, nK), pb.reshape(nB, nK, nN)).reshape(-1)
        for x in con:
            count[x] -= 2
        for x in batch:
            count[x] -= 1
        top = float(c.max())
        if not top > 0.0:
            raise ArithmeticError("an intermediate tensor of the contraction is zero")
        c /= top
        log_scale += math.log(top)
        live[next_id] = (tuple(batch + ka + kb), c)
        next_id += 1
    mantissa = 1.0
    for ix, a in live.values():  # disconnected pieces: each sums to a scalar
        ix, a, log_scale = _sum_private(ix, a, count, log_scale)
        mantissa *= float(np.sum(a))
    return mantissa, log_scale


def _sum_private(ix, a, count, log_scale):
    """Sum out the axes that no other tensor holds (count 1)."""
    private = [k for k, x in enumerate(ix) if count[x] == 1]
    if not private:
        return ix, a, log_scale
    a = a.reshape((2,) * len(ix)).sum(axis=tuple(private)).reshape(-1)
    for k in private:
        count[ix[k]] -= 1
    return tuple(x for k, x in enumerate(ix) if k not in private), a, log_scale
