"""Greedy elimination orders (min-fill, min-degree) for variable elimination, with their widths.

Eliminating a vertex joins its remaining neighbours into a clique; the width of an order is the
largest number of neighbours a vertex has when it is eliminated (an upper bound on the
treewidth, exact for forests). Min-degree picks the vertex with fewest neighbours, min-fill the
one whose elimination adds the fewest edges (ties by degree, then by index), each recomputed as
the graph changes.

Why not networkx's ``treewidth_min_degree`` / ``treewidth_min_fill_in``: they are the same
heuristics but return only a decomposition and take 29 s / 240 s on a complete binary tree of
32767 vertices here (their cost grows much faster than n); these numba versions take
milliseconds. The tests compare their widths with networkx's on small graphs.

An order search stops as soon as a vertex with more than ``max_width`` neighbours would have to
be eliminated, so a graph of large treewidth (a big grid, an expander) is refused quickly.
"""

from __future__ import annotations

import heapq

import numpy as np
from numba import njit

from tasks.model import IsingModel

MIN_DEGREE, MIN_FILL = 0, 1


def interaction_graph(model: IsingModel) -> tuple[np.ndarray, np.ndarray]:
    """CSR adjacency (indptr, indices) of the spins: two spins are adjacent when a term (or a
    rank-one block, expanded) contains both."""
    n = model.n
    pairs = []
    by_order: dict[int, list] = {}
    for t in model.terms:
        if len(t) >= 2:
            by_order.setdefault(len(t), []).append(t)
    for k, ts in by_order.items():
        arr = np.asarray(ts, dtype=np.int64).reshape(-1, k)
        for a in range(k):
            for b in range(a + 1, k):
                pairs.append(arr[:, [a, b]])
    if model.rank_one:
        edges, _ = model.couplings  # dense: callers allow rank-one blocks only for small n
        pairs.append(edges)
    if pairs:
        e = np.concatenate(pairs)
        e = np.concatenate([e, e[:, ::-1]])
        key = np.unique(e[:, 0] * n + e[:, 1])
        rows, cols = key // n, key % n
    else:
        rows = cols = np.zeros(0, np.int64)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return indptr, cols.astype(np.int64)


@njit(cache=True)
def _fill(v, start, deg, adj, mark, stamp):
    """Number of missing edges among the neighbours of v (mark/stamp: scratch marker array)."""
    missing = 0
    dv = deg[v]
    for x in range(dv):
        a = adj[start[v] + x]
        stamp[0] += 1
        s = stamp[0]
        for y in range(deg[a]):
            mark[adj[start[a] + y]] = s
        for y in range(x + 1, dv):
            if mark[adj[start[v] + y]] != s:
                missing += 1
    return missing


@njit(cache=True)
def _score(v, criterion, start, deg, adj, mark, stamp, n, fill_limit):
    """Heap key: (primary score, degree, vertex) packed in one int64. A vertex with more than
    fill_limit neighbours scores by degree above every fill (its fill is not worth counting:
    eliminating it now would be wider than allowed anyway)."""
    d = deg[v]
    if criterion == 0:
        primary = d
    elif d > fill_limit:
        primary = 1_000_000 + min(d, 1_000_000)
    else:
        primary = _fill(v, start, deg, adj, mark, stamp)
    return (primary * 4096 + min(d, 4095)) * n + v


@njit(cache=True)
def _greedy_order(n, indptr, indices, criterion, max_width):
    """(order, clique sizes, width); width = -1 when it would exceed max_width (order partial)."""
    # adjacency lists in one pool; a list that outgrows its slot moves to the end of the pool
    cap = np.empty(n, np.int64)
    start = np.empty(n, np.int64)
    deg = np.empty(n, np.int64)
    total = 0
    for v in range(n):
        deg[v] = indptr[v + 1] - indptr[v]
        cap[v] = deg[v] + 4
        start[v] = total
        total += cap[v]
    adj = np.empty(max(total, 1) * 2, np.int64)
    used = total
    for v in range(n):
        for q in range(indptr[v], indptr[v + 1]):
            adj[start[v] + q - indptr[v]] = indices[q]
    mark = np.zeros(n, np.int64)
    stamp = np.zeros(1, np.int64)
    fill_limit = min(max_width + 1, 256)
    grew = np.zeros(n, np.bool_)
    eliminated = np.zeros(n, np.bool_)
    key = np.empty(n, np.int64)
    heap = [np.int64(0)]
    heap.pop()
    for v in range(n):
        key[v] = _score(v, criterion, start, deg, adj, mark, stamp, n, fill_limit)
        heap.append(key[v])
    heapq.heapify(heap)
    order = np.empty(n, np.int64)
    clique = np.empty(n, np.int64)
    width = 0
    nbrs = np.empty(n, np.int64)
    affected = np.empty(n, np.int64)
    seen = np.zeros(n, np.int64)
    seen_stamp = 0
    for step in range(n):
        while True:
            k = heapq.heappop(heap)
            v = k % n
            if not eliminated[v] and key[v] == k:
                break
        d = deg[v]
        if d > max_width:
            return order[:step], clique[:step], -1
        order[step] = v
        clique[step] = d + 1
        width = max(width, d)
        eliminated[v] = True
        for x in range(d):
            nbrs[x] = adj[start[v] + x]
        # remove v from its neighbours' lists, then join the neighbours pairwise
        for x in range(d):
            a = nbrs[x]
            for y in range(deg[a]):
                if adj[start[a] + y] == v:
                    adj[start[a] + y] = adj[start[a] + deg[a] - 1]
                    deg[a] -= 1
                    break
        for x in range(d):
            a = nbrs[x]
            stamp[0] += 1
            s = stamp[0]
            for y in range(deg[a]):
                mark[adj[start[a] + y]] = s
            for y in range(d):
                b = nbrs[y]
                if b == a or mark[b] == s:
                    continue
                if deg[a] == cap[a]:  # move a's list to the end of the pool with room to grow
                    new_cap = 2 * cap[a] + 4
                    if used + new_cap > adj.shape[0]:
                        bigger = np.empty(2 * (used + new_cap), np.int64)
                        bigger[:used] = adj[:used]
                        adj = bigger
                    adj[used:used + deg[a]] = adj[start[a]:start[a] + deg[a]]
                    start[a] = used
                    cap[a] = new_cap
                    used += new_cap
                adj[start[a] + deg[a]] = b
                deg[a] += 1
                mark[b] = s
                grew[a] = True
        # rescore the neighbours; for min-fill also the neighbours of a vertex that gained an
        # edge (the fill among their neighbours changed); nothing else changed
        seen_stamp += 1
        na = 0
        for x in range(d):
            a = nbrs[x]
            if seen[a] != seen_stamp:
                seen[a] = seen_stamp
                affected[na] = a
                na += 1
        for x in range(d):
            a = nbrs[x]
            if criterion == 1 and grew[a]:
                grew[a] = False
                for y in range(deg[a]):
                    b = adj[start[a] + y]
                    if seen[b] != seen_stamp:
                        seen[b] = seen_stamp
                        affected[na] = b
                        na += 1
        for x in range(na):
            a = affected[x]
            new = _score(a, criterion, start, deg, adj, mark, stamp, n, fill_limit)
            if new != key[a]:
                key[a] = new
                heapq.heappush(heap, new)
    return order, clique, width


def greedy_order(indptr: np.ndarray, indices: np.ndarray, criterion: int = MIN_FILL,
                 max_width: int = 1 << 30) -> tuple[np.ndarray, np.ndarray, int]:
    """(order, clique sizes, width) of the min-fill (criterion MIN_FILL) or min-degree
    (MIN_DEGREE) order of the graph in CSR form; width -1 (and a partial order) when some vertex
    would be eliminated with more than ``max_width`` neighbours."""
    n = len(indptr) - 1
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), 0
    return _greedy_order(n, indptr.astype(np.int64), indices.astype(np.int64), int(criterion), int(max_width))
