"""The contribution stack of the multifrontal skew elimination
(:mod:`evaluators.oracles.linalg.skew_pfaffian`) and a front's way on and off it: a front is assembled
from its own rows of A and its children's blocks on top of the stack (:func:`assemble_front`,
extend-add, in double-double when asked), and what its elimination leaves is pushed back as its
block (:func:`push_block`). numba kernels without the GIL, so disjoint subtrees can use their own
stacks in threads; :func:`stack_of` and :func:`top_block` hand blocks between them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from evaluators.oracles.linalg.double_double import dd_add


@njit(cache=True)
def _grow(a, need):
    if need <= a.shape[0]:
        return a
    b = np.empty(2 * need, a.dtype)
    b[: a.shape[0]] = a
    return b


def empty_stack(ext: bool, track: bool):
    """A contribution stack with no block: (hi, lo, bound, node ids, and per block: offset of its
    values, offset of its ids, size n, delayed count nd; number of blocks). Block c holds an
    n x n dense Schur complement (row-major at hi[b_v[c]:], lo / bound alike when ext / track)
    over the nodes s_idx[b_i[c]:b_i[c] + n], the nd delayed (fully summed) ones first."""
    return (np.empty(1 << 16), np.empty(1 << 16 if ext else 0), np.empty(1 << 16 if track else 0),
            np.empty(1 << 12, np.int64), np.empty(8, np.int64), np.empty(8, np.int64), np.empty(8, np.int64),
            np.empty(8, np.int64), 0)


@njit(cache=True, nogil=True)
def assemble_front(indptr, nbr, val, perm, own_lo, own_hi, n_child, owner, t, stack, ext, track, eps, pos, idx):
    """Front t's dense matrix from its own rows of A and its children's blocks on top of the
    stack (popped). Returns (H, L, B, f, k, stack without the children's blocks): f positions,
    idx[:f] their matrix nodes (pos[idx[a]] = a), the first k fully summed (own, then delayed)."""
    s_hi, s_lo, s_bd, s_idx, b_v, b_i, b_n, b_nd, nb = stack
    first = nb - n_child[t]
    f = 0
    for i in range(own_lo[t], own_hi[t]):
        pos[perm[i]] = f
        idx[f] = perm[i]
        f += 1
    for c in range(first, nb):
        for a in range(b_nd[c]):
            v = s_idx[b_i[c] + a]
            pos[v] = f
            idx[f] = v
            f += 1
    k = f
    for c in range(first, nb):
        for a in range(b_nd[c], b_n[c]):
            v = s_idx[b_i[c] + a]
            if pos[v] < 0:
                pos[v] = f
                idx[f] = v
                f += 1
    for i in range(own_lo[t], own_hi[t]):
        for q in range(indptr[perm[i]], indptr[perm[i] + 1]):
            w = nbr[q]
            if owner[w] > t and pos[w] < 0:
                pos[w] = f
                idx[f] = w
                f += 1
    H = np.zeros((f, f))
    L = np.zeros((f, f) if ext else (1, 1))
    B = np.zeros((f, f) if track else (1, 1))
    for i in range(own_lo[t], own_hi[t]):
        pv = pos[perm[i]]
        for q in range(indptr[perm[i]], indptr[perm[i] + 1]):
            w = nbr[q]
            if owner[w] == t:  # the entries of A are exact (its bound starts at 0)
                H[pv, pos[w]] += val[q]
            elif owner[w] > t:  # w's own row is never assembled here: mirror the entry
                H[pv, pos[w]] += val[q]
                H[pos[w], pv] -= val[q]
    for c in range(first, nb):
        n = b_n[c]
        for a in range(n):
            pa = pos[s_idx[b_i[c] + a]]
            for b in range(n):
                pb = pos[s_idx[b_i[c] + b]]
                o = b_v[c] + a * n + b
                if ext:
                    H[pa, pb], L[pa, pb] = dd_add(H[pa, pb], L[pa, pb], s_hi[o], s_lo[o])
                else:
                    H[pa, pb] += s_hi[o]
                if track:
                    B[pa, pb] += s_bd[o] + eps * abs(H[pa, pb])
    return H, L, B, f, k, (s_hi, s_lo, s_bd, s_idx, b_v, b_i, b_n, b_nd, first)  # children popped; storage reused


@njit(cache=True, nogil=True)
def push_block(stack, H, L, B, n, loc, k, idx, f, pos, ext, track):
    """Push the n x n block H[:n, :n] (+ L, B) left of a front (loc[:n] its positions in the
    front; the delayed ones, loc < k, first) onto the stack, and clear pos of the front's nodes."""
    s_hi, s_lo, s_bd, s_idx, b_v, b_i, b_n, b_nd, nb = stack
    vtop = b_v[nb - 1] + b_n[nb - 1] ** 2 if nb > 0 else 0
    itop = b_i[nb - 1] + b_n[nb - 1] if nb > 0 else 0
    s_hi = _grow(s_hi, vtop + n * n)
    if ext:
        s_lo = _grow(s_lo, vtop + n * n)
    if track:
        s_bd = _grow(s_bd, vtop + n * n)
    s_idx = _grow(s_idx, itop + n)
    order = np.argsort(loc[:n] >= k, kind="mergesort")  # delayed (fully summed) first
    nd = 0
    for a in range(n):
        pa = order[a]
        nd += loc[pa] < k
        s_idx[itop + a] = idx[loc[pa]]
        for b in range(n):
            s_hi[vtop + a * n + b] = H[pa, order[b]]
            if track:
                s_bd[vtop + a * n + b] = B[pa, order[b]]
            if ext:
                s_lo[vtop + a * n + b] = L[pa, order[b]]
    b_v[nb], b_i[nb], b_n[nb], b_nd[nb] = vtop, itop, n, nd
    for a in range(f):
        pos[idx[a]] = -1
    return (s_hi, s_lo, s_bd, s_idx, b_v, b_i, b_n, b_nd, nb + 1), nd


@njit(cache=True)
def grown_stack(stack, fronts):
    """The stack with room for the blocks of `fronts` more fronts."""
    s_hi, s_lo, s_bd, s_idx, b_v, b_i, b_n, b_nd, nb = stack
    need = nb + fronts + 1
    return (s_hi, s_lo, s_bd, s_idx, _grow(b_v, need), _grow(b_i, need), _grow(b_n, need), _grow(b_nd, need), nb)


def stack_of(blocks: list, ext: bool, track: bool):
    """A contribution stack holding the given blocks (bottom first), as :func:`empty_stack` lays it out."""
    if not blocks:
        return empty_stack(ext, track)
    n = np.array([len(ids) for ids, _, _, _, _ in blocks], np.int64)
    b_i = np.concatenate(([0], np.cumsum(n)[:-1])).astype(np.int64)
    b_v = np.concatenate(([0], np.cumsum(n * n)[:-1])).astype(np.int64)
    nd = np.array([d for _, d, _, _, _ in blocks], np.int64)

    def flat(part, used):
        return np.concatenate([blk[part] for blk in blocks]) if used else np.empty(0)

    return (flat(2, True), flat(3, ext), flat(4, track), np.concatenate([blk[0] for blk in blocks]),
            b_v, b_i, n, nd, len(blocks))


def top_block(stack):
    """The top block of a stack: (node ids, delayed count, hi, lo, bound) with flat values."""
    s_hi, s_lo, s_bd, s_idx, b_v, b_i, b_n, b_nd, nb = stack
    c = nb - 1
    n, v = int(b_n[c]), int(b_v[c])

    def part(a):
        return a[v:v + n * n].copy() if a.shape[0] else a

    return s_idx[b_i[c]:b_i[c] + n].copy(), int(b_nd[c]), part(s_hi), part(s_lo), part(s_bd)
