"""Fill-reducing orderings for the sparse skew Pfaffian: nested dissection by recursive
coordinate bisection, with cuts that never pass through a group of nodes (separators are the
nodes next to a cut, on the side with fewer of them).

Coordinates only steer the fill (any coordinates give the same Pfaffian, just slower); when a
model has no geometry, two BFS distance fields serve as a rough 2D layout. Optionally
(``even_remainder``, the cold layout of :mod:`evaluators.oracles.linalg.skew_pfaffian`) a separator takes
one more node of each group it would otherwise leave an odd number of nodes below it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit
from scipy.sparse import coo_array
from scipy.sparse.csgraph import shortest_path


@njit(cache=True)
def _even_remainders(seg_sorted, is_b, side, sep_side, group, indptr, nbr):
    """Separator nodes so that every group cut by the separator keeps an even number of nodes
    below it. Why: a group of the expanded dual is held together by weight-1 edges; an odd
    remainder leaves one node whose weight-1 entry points into the separator and whose other
    entries are weights exp(-2|K|), so the threshold test delays it (ratio exp(-2|K|) < u when
    cold) up the tree, growing every front above it. The node added is one next to the group's
    separator nodes (it takes the weight-1 entry along). Groups are runs of seg_sorted."""
    n = len(seg_sorted)
    a = 0
    while a < n:
        b = a
        nsep = 0
        while b < n and group[seg_sorted[b]] == group[seg_sorted[a]]:
            nsep += is_b[b]
            b += 1
        if nsep > 0 and (b - a - nsep) % 2 == 1 and side[seg_sorted[a]] == sep_side:
            pick = -1
            for i in range(a, b):
                if is_b[i]:
                    continue
                if pick < 0:
                    pick = i
                v = seg_sorted[i]
                for q in range(indptr[v], indptr[v + 1]):
                    for j in range(a, b):
                        if seg_sorted[j] == nbr[q] and is_b[j]:
                            pick = i
            is_b[pick] = True
        a = b


@njit(cache=True, nogil=True)
def stable_order(seg, rank):
    """seg sorted by rank[seg], ties in their order in seg: np.argsort(rank[seg], kind="stable")
    applied to seg, by counting sort when the ranks in seg span at most a few times len(seg)
    (a dissection level's sorts were most of its time: 80 ms per 425k nodes by mergesort)."""
    n = seg.shape[0]
    if n == 0:
        return seg.copy()
    r = rank[seg]
    r_lo = r.min()
    span = r.max() - r_lo + 1
    if span > 4 * n + 64:
        return seg[np.argsort(r, kind="mergesort")]
    start = np.zeros(span + 1, np.int64)
    for i in range(n):
        start[r[i] - r_lo + 1] += 1
    for b in range(span):
        start[b + 1] += start[b]
    out = np.empty(n, seg.dtype)
    for i in range(n):
        b = r[i] - r_lo
        out[start[b]] = seg[i]
        start[b] += 1
    return out


def coordinate_ranks(coords: np.ndarray) -> np.ndarray:
    """(N, 2) int64: each node's coordinate on each axis as its rank among the distinct values
    (the same order and ties as the coordinates themselves)."""
    return np.ascontiguousarray(np.stack([np.unique(coords[:, a], return_inverse=True)[1].reshape(-1)
                                          for a in range(2)], axis=1).astype(np.int64))


@njit(cache=True, nogil=True)
def bisect_segment(coords, ranks, group, indptr, nbr, leaf_size, even_remainder, perm, lo, hi, max_depth):
    """Recursive coordinate bisection of the nodes perm[lo:hi] (reordered in place); nodes of one
    group (same coordinates) land on the same side of every cut, and the separator is the
    smaller side's nodes with an edge across (with even_remainder, plus one more node of each
    group that would otherwise keep an odd number of nodes below the cut: see
    :func:`_even_remainders`). Segments max_depth levels down are left whole (max_depth < 0: no
    limit). Returns the tree (o_lo, o_hi, ch, n_nodes, whole): node 0 is the segment, node t
    owns perm[o_lo[t]:o_hi[t]] and has children ch[t] (-1: none); whole[t]: a segment of
    more than leaf_size nodes left unsplit at max_depth. Only perm[lo:hi] is touched, so
    disjoint segments can be bisected in threads."""
    N = coords.shape[0]
    side = np.full(N, -1, np.int64)
    cap = 2 * (hi - lo) + 2  # a safe bound, far above the usual count: uninitialised (untouched pages)
    sub_lo = np.empty(cap, np.int64)
    sub_hi = np.empty(cap, np.int64)
    depth = np.empty(cap, np.int64)
    o_lo = np.empty(cap, np.int64)
    o_hi = np.empty(cap, np.int64)
    ch = np.empty((cap, 2), np.int64)
    whole = np.empty(cap, np.bool_)
    n_nodes = 1
    sub_lo[0], sub_hi[0] = lo, hi
    depth[0] = 0
    ch[0, 0] = ch[0, 1] = -1
    whole[0] = False
    todo = np.empty(cap, np.int64)
    ntodo = 1
    todo[0] = 0
    tmp = np.empty(hi - lo, np.int64)
    while ntodo > 0:
        ntodo -= 1
        t = todo[ntodo]
        s_lo, s_hi = sub_lo[t], sub_hi[t]
        n = s_hi - s_lo
        if n <= leaf_size or depth[t] == max_depth:
            o_lo[t], o_hi[t] = s_lo, s_hi
            whole[t] = n > leaf_size
            continue
        seg = perm[s_lo:s_hi]
        ext0 = coords[seg, 0].max() - coords[seg, 0].min()
        ext1 = coords[seg, 1].max() - coords[seg, 1].min()
        axis = 0 if ext0 >= ext1 else 1
        # stable sort: a group (equal coordinates, contiguous from the start) stays contiguous
        seg_sorted = stable_order(seg, ranks[:, axis])
        mid = n // 2
        while 0 < mid < n and group[seg_sorted[mid]] == group[seg_sorted[mid - 1]]:
            mid += 1
        if mid == n:
            mid = n // 2
        for i in range(n):
            side[seg_sorted[i]] = 0 if i < mid else 1
        # boundary of each half; the smaller one becomes the separator
        nb0 = 0
        nb1 = 0
        is_b = np.zeros(n, np.bool_)
        for i in range(n):
            v = seg_sorted[i]
            s = side[v]
            for q in range(indptr[v], indptr[v + 1]):
                w = side[nbr[q]]
                if w >= 0 and w != s:
                    is_b[i] = True
                    break
            if is_b[i]:
                if s == 0:
                    nb0 += 1
                else:
                    nb1 += 1
        sep_side = 0 if nb0 <= nb1 else 1
        if even_remainder:
            _even_remainders(seg_sorted, is_b, side, sep_side, group, indptr, nbr)
        # new order: [side 0 minus sep][side 1 minus sep][sep]
        k = 0
        for pass_side in range(2):
            for i in range(n):
                v = seg_sorted[i]
                if side[v] == pass_side and not (is_b[i] and side[v] == sep_side):
                    tmp[k] = v
                    k += 1
        n0 = 0
        for i in range(k):
            if side[tmp[i]] == 0:
                n0 += 1
        n1 = k - n0
        for i in range(n):
            if is_b[i] and side[seg_sorted[i]] == sep_side:
                tmp[k] = seg_sorted[i]
                k += 1
        for i in range(n):
            perm[s_lo + i] = tmp[i]
            side[tmp[i]] = -1
        o_lo[t], o_hi[t] = s_lo + n0 + n1, s_hi
        for c in range(2):
            clo = s_lo if c == 0 else s_lo + n0
            chi = s_lo + n0 if c == 0 else s_lo + n0 + n1
            if chi > clo:
                sub_lo[n_nodes], sub_hi[n_nodes] = clo, chi
                depth[n_nodes] = depth[t] + 1
                ch[n_nodes, 0] = ch[n_nodes, 1] = -1
                whole[n_nodes] = False
                ch[t, c] = n_nodes
                todo[ntodo] = n_nodes
                ntodo += 1
                n_nodes += 1
    return o_lo[:n_nodes], o_hi[:n_nodes], ch[:n_nodes], n_nodes, whole[:n_nodes]


@njit(cache=True)
def postordered(o_lo, o_hi, ch):
    """(own_lo, own_hi, n_child) of the tree (node 0 the root) with its nodes in postorder."""
    n_nodes = o_lo.shape[0]
    post = np.empty(n_nodes, np.int64)
    stack = np.empty(2 * n_nodes + 2, np.int64)
    expanded = np.zeros(n_nodes, np.bool_)
    sp = 1
    stack[0] = 0
    k = 0
    while sp > 0:
        t = stack[sp - 1]
        if expanded[t]:
            sp -= 1
            post[k] = t
            k += 1
            continue
        expanded[t] = True
        for c in range(2):
            if ch[t, c] >= 0:
                stack[sp] = ch[t, c]
                sp += 1
    n_child = np.zeros(n_nodes, np.int64)
    for t in range(n_nodes):
        n_child[t] = (ch[t, 0] >= 0) + (ch[t, 1] >= 0)
    return o_lo[post], o_hi[post], n_child[post]


#: with threads, the levels bisected before the segments below are handed to the threads
THREADED_TOP_LEVELS = 3


def nested_dissection(coords, group, indptr, nbr, leaf_size: int, even_remainder: bool, threads: int = 1,
                      ranks: np.ndarray | None = None):
    """Nested dissection by :func:`bisect_segment` of all nodes. Returns (perm, own_lo, own_hi,
    n_child) with tree nodes in postorder; tree node t owns perm[own_lo[t]:own_hi[t]], its
    subtree is contiguous in perm. threads > 1: the segments THREADED_TOP_LEVELS levels down are
    bisected in threads and grafted in; the same tree (each segment is cut alone either way).
    ranks: :func:`coordinate_ranks` of coords when known."""
    N = coords.shape[0]
    perm = np.arange(N)
    ranks = coordinate_ranks(coords) if ranks is None else ranks
    args = (coords, ranks, group, indptr, nbr, leaf_size, even_remainder, perm)
    o_lo, o_hi, ch, _, whole = bisect_segment(*args, 0, N, THREADED_TOP_LEVELS if threads > 1 else -1)
    segments = np.flatnonzero(whole)
    if len(segments):
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="dissection") as pool:
            subtrees = list(pool.map(lambda t: bisect_segment(*args, o_lo[t], o_hi[t], -1), segments))
        o_lo, o_hi, ch = _graft(o_lo, o_hi, ch, segments, subtrees)
    return (perm, *postordered(o_lo, o_hi, ch))


def _graft(o_lo, o_hi, ch, segments, subtrees):
    """The tree with each node segments[i] replaced by the root of subtrees[i] (the rest of each
    subtree appended, its node ids shifted)."""
    parts_lo, parts_hi, parts_ch = [o_lo.copy()], [o_hi.copy()], [ch.copy()]
    n = len(o_lo)
    for t, (s_lo, s_hi, s_ch, s_n, _) in zip(segments, subtrees):
        shift = np.where(s_ch >= 0, s_ch - 1 + n, -1)  # sub node j > 0 becomes n + j - 1
        parts_lo[0][t], parts_hi[0][t], parts_ch[0][t] = s_lo[0], s_hi[0], shift[0]
        parts_lo.append(s_lo[1:])
        parts_hi.append(s_hi[1:])
        parts_ch.append(shift[1:])
        n += s_n - 1
    return np.concatenate(parts_lo), np.concatenate(parts_hi), np.concatenate(parts_ch)


def bfs_coordinates(G) -> np.ndarray:
    """A rough 2D layout of a mesh-like graph (sparse adjacency G): BFS distances from a far
    node a, and from a node about equally far from a and from a's antipode b."""
    pattern = G.copy()
    pattern.data = np.ones_like(pattern.data)

    def dist(src):
        d = shortest_path(pattern, unweighted=True, directed=False, indices=int(src))
        return np.where(np.isfinite(d), d, -1.0)

    da = dist(np.argmax(dist(0)))
    db = dist(np.argmax(da))
    dc = dist(np.argmax(np.minimum(da, db)))
    return np.stack([da, dc], axis=1)


def grouped_dissection(csr, group_ptr: np.ndarray, coords: np.ndarray | None, leaf_nodes: int,
                       even_remainder: bool = False, threads: int = 1):
    """Nested dissection of the graph of ``csr`` whose cuts never pass through a group
    group_ptr[g]:group_ptr[g+1] (separators are the nodes next to a cut, on one side).
    ``coords``: one (x, y) per group, or None for BFS distances on the group graph;
    ``even_remainder``: cut groups keep an even number of nodes below the separator;
    ``threads``: the lower levels bisected in threads (same result). Returns (perm, own_lo, own_hi, n_child) over nodes, tree nodes in postorder."""
    sizes = np.diff(group_ptr)
    group_of = np.repeat(np.arange(len(sizes)), sizes)
    if coords is None:
        coo = csr.tocoo()
        G = coo_array((np.ones(len(coo.row)), (group_of[coo.row], group_of[coo.col])),
                      shape=(len(sizes), len(sizes))).tocsr()
        coords = bfs_coordinates(G)
    coords = np.asarray(coords, dtype=np.float64)
    node_coords = np.ascontiguousarray(np.repeat(coords, sizes, axis=0))
    ranks = np.ascontiguousarray(np.repeat(coordinate_ranks(coords), sizes, axis=0))  # ranked per group: fewer values
    return nested_dissection(node_coords, group_of.astype(np.int64), csr.indptr.astype(np.int64),
                             csr.indices.astype(np.int64), int(leaf_nodes), bool(even_remainder), int(threads), ranks)
