"""Greedy elimination orders (min-fill, min-degree) and the width of bucket elimination along an
order: helper functions that the ``tensor_contraction`` template renders into its programs (not a
template itself; numpy and scipy only, since they run in the sandbox).

The greedy orders keep a heap with lazy updates (``heapq`` is not on the sandbox's import
allowlist, so the two heap operations are written here): near-linear on sparse graphs, where a
scan of every remaining spin per step was quadratic (35 s for a chain of 10^4 spins).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import reverse_cuthill_mckee


def _heap_push(heap, item):
    """heapq.heappush (heapq is not on the sandbox's import allowlist)."""
    heap.append(item)
    i = len(heap) - 1
    while i:
        parent = (i - 1) >> 1
        if heap[parent] <= item:
            break
        heap[i] = heap[parent]
        i = parent
    heap[i] = item


def _heap_pop(heap):
    """heapq.heappop: the smallest item of a non-empty heap."""
    last = heap.pop()
    if not heap:
        return last
    top, i, size = heap[0], 0, len(heap)
    while 2 * i + 1 < size:
        c = 2 * i + 1
        if c + 1 < size and heap[c + 1] < heap[c]:
            c += 1
        if last <= heap[c]:
            break
        heap[i] = heap[c]
        i = c
    heap[i] = last
    return top


def _greedy_order(n, nbrs, how, tie, cap=None):
    """One greedy elimination order (min-fill or min-degree, ties broken by ``tie``) and its width;
    with ``cap``, stops (order incomplete) as soon as the width exceeds it.
    Each step takes the spin of least (fill, degree, tie) from a heap with lazy updates: only spins
    whose key the step changed are pushed again (stale entries are skipped when popped). A spin's
    fill (missing edges among its neighbours) is recomputed only for the eliminated spin's
    neighbours; any other spin loses one per new edge between two of its neighbours."""
    nbrs = [set(x) for x in nbrs]

    def fill(x):
        ns = nbrs[x]
        d = len(ns)
        return d * (d - 1) // 2 - sum(len(nbrs[u] & ns) for u in ns) // 2

    min_fill = how == "min_fill"
    score = [fill(x) if min_fill else 0 for x in range(n)]
    current = [(score[x], len(nbrs[x]), tie[x], x) for x in range(n)]
    heap = sorted(current)             # a sorted list is a heap
    done = [False] * n
    order, width = [], 0
    while len(order) < n:
        item = _heap_pop(heap)
        v = item[3]
        if done[v] or item != current[v]:
            continue
        ns = list(nbrs[v])
        width = max(width, len(ns))
        if cap is not None and width > cap:
            return order, width
        added = []
        for i in range(len(ns)):
            nbrs[ns[i]].discard(v)
            for j in range(i + 1, len(ns)):
                if ns[j] not in nbrs[ns[i]]:
                    nbrs[ns[i]].add(ns[j])
                    nbrs[ns[j]].add(ns[i])
                    added.append((ns[i], ns[j]))
        done[v] = True
        order.append(v)
        ns_set = set(ns)
        changed = set(ns)
        if min_fill:
            for x in ns:
                score[x] = fill(x)
            for a, b in added:
                for x in nbrs[a] & nbrs[b]:
                    if x not in ns_set:
                        score[x] -= 1
                        changed.add(x)
        for x in changed:
            current[x] = (score[x], len(nbrs[x]), tie[x], x)
            _heap_push(heap, current[x])
    return order, width


def _elimination_order(n, edges, how, restarts=4, cap=None):
    """An elimination order of the spins: greedy min-fill / min-degree (the narrowest of a few
    seeded tie-breaks), natural, or reverse Cuthill-McKee. With ``cap``, a greedy order wider than
    it may come back incomplete (shorter than n): the caller cannot use it anyway."""
    if how == "natural" or len(edges) == 0:
        return list(range(n))
    if how == "reverse_cuthill_mckee":
        adj = coo_matrix((np.ones(2 * len(edges)), (np.r_[edges[:, 0], edges[:, 1]], np.r_[edges[:, 1], edges[:, 0]])),
                         shape=(n, n)).tocsr()
        return [int(v) for v in reverse_cuthill_mckee(adj, symmetric_mode=True)]
    nbrs = [set() for _ in range(n)]
    for a, b in edges.tolist():
        nbrs[a].add(b)
        nbrs[b].add(a)
    rng = np.random.default_rng(0)
    ties = [list(range(n))] + [rng.permutation(n).tolist() for _ in range(restarts - 1)]
    best = None
    for tie in ties:
        order, width = _greedy_order(n, nbrs, how, tie, cap)
        if best is None or width < best[1]:
            best = (order, width)
        if best[1] <= 1:   # no order of a graph with an edge is narrower: the restarts cannot win
            break
    return best[0]


def _first_eliminated(spins, pos):
    """The bucket a factor over ``spins`` belongs to: its spin eliminated first (-1 for a scalar)."""
    return min((pos[u] for u in spins), default=-1)


def _widest_factor(scopes, order):
    """The largest factor (in spins) that bucket elimination along ``order`` creates: a dry run on
    the factors' spin sets alone. Each factor sits in the bucket of its first-eliminated spin, which
    holds exactly the factors that contain that spin when it is summed out."""
    pos = {v: k for k, v in enumerate(order)}
    buckets = [[] for _ in order]
    for sc in scopes:
        buckets[_first_eliminated(sc, pos)].append(sc)
    widest = 0
    for k, v in enumerate(order):
        if buckets[k]:
            joined = set().union(*buckets[k]) - {v}
            widest = max(widest, len(joined))
            if joined:
                buckets[_first_eliminated(joined, pos)].append(joined)
        buckets[k] = None
    return widest


FUNCTIONS = (_heap_push, _heap_pop, _greedy_order, _elimination_order, _first_eliminated, _widest_factor)
