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

Hubs. Each step touches the eliminated vertex's neighbours only, never a whole neighbour's list:
lists longer than MARK_MAX_DEGREE are indexed by a hash table (edge -> place in the list), so
removing a leaf from its hub and testing two neighbours for adjacency cost O(1). A star of n
spins is O(n log n) (the heap), where scanning the hub's list per leaf made it O(n^2).
"""

from __future__ import annotations

import heapq
from itertools import chain

import numpy as np
from numba import njit

from tasks.model import IsingModel

MIN_DEGREE, MIN_FILL = 0, 1
#: a vertex with at most this many neighbours has its list scanned and marked whole (cheapest on
#: sparse graphs); one with more (a hub) has its adjacency in a hash table, looked up pair by pair
MARK_MAX_DEGREE = 64


def term_groups(model: IsingModel) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The model's terms by number of spins: k -> (spins (m, k) int64, weights (m,)), each group in
    the order of ``model.terms``. One pass over the tuples (np.fromiter), no per-term numpy call."""
    terms = model.terms
    if not terms:
        return {}
    lens = np.fromiter(map(len, terms), np.int64, len(terms))
    flat = np.fromiter(chain.from_iterable(terms), np.int64, int(lens.sum()))
    first = np.concatenate([[0], np.cumsum(lens)[:-1]])
    groups = {}
    for k in np.unique(lens).tolist():
        rows = np.flatnonzero(lens == k)
        groups[k] = (flat[first[rows][:, None] + np.arange(k)], model.weights[rows])
    return groups


def interaction_graph(model: IsingModel, groups: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """CSR adjacency (indptr, indices) of the spins: two spins are adjacent when a term (or a
    rank-one block, expanded) contains both. ``groups``: the model's ``term_groups``, if known."""
    n = model.n
    groups = term_groups(model) if groups is None else groups
    pairs = []
    for k, (arr, _) in groups.items():
        for a in range(k):
            for b in range(a + 1, k):
                pairs.append(arr[:, [a, b]])
    if model.rank_one:
        edges, _ = model.couplings  # dense: callers allow rank-one blocks only for small n
        pairs.append(edges)
    if pairs:
        e = np.concatenate(pairs)
        key = np.sort(np.concatenate([e[:, 0] * n + e[:, 1], e[:, 1] * n + e[:, 0]]))
        key = key[np.r_[True, key[1:] != key[:-1]]]      # distinct (np.unique hashes: 5x slower here)
        rows, cols = key // n, key % n
    else:
        rows = cols = np.zeros(0, np.int64)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return indptr, cols.astype(np.int64)


@njit(cache=True)
def _slot(keys, key, shift):
    """Where ``key`` sits in the open-addressing table ``keys`` (2^(64 - shift) slots, -1 empty),
    or the empty slot where it would go (Fibonacci hashing, linear probing)."""
    mask = keys.shape[0] - 1
    h = np.int64((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(shift))
    while keys[h] != -1 and keys[h] != key:
        h = (h + 1) & mask
    return h


@njit(cache=True)
def _put(keys, vals, shift, count, key, val, n, eliminated):
    """Sets key -> val; returns the table (keys, vals, shift, count), rebuilt when it is half full:
    pairs with an eliminated vertex are dropped (never looked up again), the rest get at least
    four slots each."""
    s = _slot(keys, key, shift)
    if keys[s] != key:
        keys[s] = key
        count += 1
    vals[s] = val
    if 2 * count <= keys.shape[0]:
        return keys, vals, shift, count
    live = 0
    for k in keys:
        if k >= 0 and not eliminated[k // n] and not eliminated[k % n]:
            live += 1
    bits = 4
    while (np.int64(1) << bits) < 4 * live + 16:
        bits += 1
    new_keys = np.full(np.int64(1) << bits, -1, np.int64)
    new_vals = np.empty(np.int64(1) << bits, np.int64)
    for s in range(keys.shape[0]):
        k = keys[s]
        if k >= 0 and not eliminated[k // n] and not eliminated[k % n]:
            t = _slot(new_keys, k, 64 - bits)
            new_keys[t] = k
            new_vals[t] = vals[s]
    return new_keys, new_vals, 64 - bits, live


@njit(cache=True)
def _mark_looked_up(a, v, x, start, deg, adj, keys, shift, n, mark, stamp):
    """Sets mark[b] = stamp for the neighbours b = adj[start[v] + y], y > x, of v that the hub a
    (its entries are in the table) is adjacent to: one look-up per b, not a pass over a's list."""
    for y in range(x + 1, deg[v]):
        b = adj[start[v] + y]
        if keys[_slot(keys, a * n + b, shift)] == a * n + b:
            mark[b] = stamp


@njit(cache=True)
def _fill(v, start, deg, adj, hashed, keys, shift, n, mark, stamp):
    """Number of missing edges among the neighbours of v (mark/stamp: scratch marker array)."""
    missing = 0
    dv = deg[v]
    for x in range(dv):
        a = adj[start[v] + x]
        stamp[0] += 1
        s = stamp[0]
        if hashed[a]:
            _mark_looked_up(a, v, x, start, deg, adj, keys, shift, n, mark, s)
        else:
            for y in range(deg[a]):
                mark[adj[start[a] + y]] = s
        for y in range(x + 1, dv):
            if mark[adj[start[v] + y]] != s:
                missing += 1
    return missing


@njit(cache=True)
def _score(v, criterion, start, deg, adj, hashed, keys, shift, n, mark, stamp, fill_limit):
    """Heap key: (primary score, degree, vertex) packed in one int64. A vertex with more than
    fill_limit neighbours scores by degree above every fill (its fill is not worth counting:
    eliminating it now would be wider than allowed anyway)."""
    d = deg[v]
    if criterion == 0:
        primary = d
    elif d > fill_limit:
        primary = 1_000_000 + min(d, 1_000_000)
    else:
        primary = _fill(v, start, deg, adj, hashed, keys, shift, n, mark, stamp)
    return (primary * 4096 + min(d, 4095)) * n + v


@njit(cache=True)
def _greedy_order(n, indptr, indices, criterion, max_width):
    """(order, clique sizes, width); width = -1 when it would exceed max_width (order partial).

    No step costs O(degree) of a hub. A vertex whose list grows longer than MARK_MAX_DEGREE
    becomes ``hashed`` for good: a table maps each of its entries (a, b) to where b sits in a's
    list, so removing an eliminated neighbour is a look-up and a swap with the list's last entry,
    and "is b adjacent to a?" one look-up. (Scanning a hub's list to remove each leaf, and
    marking it whole to join a leaf's single neighbour, made a star of n spins cost O(n^2): 22 s
    at 10^5.) Short lists are scanned and marked as before. The order itself does not depend on
    any of this: ties are broken by the packed key (score, degree, vertex) alone."""
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
    eliminated = np.zeros(n, np.bool_)
    hashed = np.zeros(n, np.bool_)
    keys = np.full(16, -1, np.int64)
    vals = np.empty(16, np.int64)
    shift, count = 60, 0
    for v in range(n):
        if deg[v] > MARK_MAX_DEGREE:
            hashed[v] = True
            for y in range(deg[v]):
                keys, vals, shift, count = _put(keys, vals, shift, count, v * n + adj[start[v] + y], y, n, eliminated)
    mark = np.zeros(n, np.int64)
    stamp = np.zeros(1, np.int64)
    fill_limit = min(max_width + 1, 256)
    grew = np.zeros(n, np.bool_)
    key = np.empty(n, np.int64)
    heap = [np.int64(0)]
    heap.pop()
    for v in range(n):
        key[v] = _score(v, criterion, start, deg, adj, hashed, keys, shift, n, mark, stamp, fill_limit)
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
        # remove v from its neighbours' lists: its place takes the list's last entry
        for x in range(d):
            a = nbrs[x]
            if hashed[a]:
                p = vals[_slot(keys, a * n + v, shift)]
            else:
                p = 0
                while adj[start[a] + p] != v:
                    p += 1
            last = adj[start[a] + deg[a] - 1]
            adj[start[a] + p] = last
            if hashed[a] and last != v:
                vals[_slot(keys, a * n + last, shift)] = p
            deg[a] -= 1
        # join the neighbours pairwise (one neighbour: nothing to join)
        for x in range(d if d > 1 else 0):
            a = nbrs[x]
            stamp[0] += 1
            s = stamp[0]
            if hashed[a]:   # a hub: look its adjacency up (marking its list would cost O(deg a))
                _mark_looked_up(a, v, x, start, deg, adj, keys, shift, n, mark, s)
            else:
                for y in range(deg[a]):
                    mark[adj[start[a] + y]] = s
            for y in range(x + 1, d):
                b = nbrs[y]
                if mark[b] == s:
                    continue
                for side in range(2):
                    u, w = (a, b) if side == 0 else (b, a)
                    if deg[u] == cap[u]:  # move u's list to the end of the pool with room to grow
                        new_cap = 2 * cap[u] + 4
                        if used + new_cap > adj.shape[0]:
                            bigger = np.empty(2 * (used + new_cap), np.int64)
                            bigger[:used] = adj[:used]
                            adj = bigger
                        adj[used:used + deg[u]] = adj[start[u]:start[u] + deg[u]]
                        start[u] = used
                        cap[u] = new_cap
                        used += new_cap
                    adj[start[u] + deg[u]] = w
                    if hashed[u]:
                        keys, vals, shift, count = _put(keys, vals, shift, count, u * n + w, deg[u], n, eliminated)
                    deg[u] += 1
                    grew[u] = True
                    if not hashed[u] and deg[u] > MARK_MAX_DEGREE:
                        hashed[u] = True
                        for y2 in range(deg[u]):
                            keys, vals, shift, count = _put(keys, vals, shift, count, u * n + adj[start[u] + y2], y2,
                                                            n, eliminated)
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
                for y in range(deg[a]):
                    b = adj[start[a] + y]
                    if seen[b] != seen_stamp:
                        seen[b] = seen_stamp
                        affected[na] = b
                        na += 1
            grew[a] = False
        for x in range(na):
            a = affected[x]
            new = _score(a, criterion, start, deg, adj, hashed, keys, shift, n, mark, stamp, fill_limit)
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
