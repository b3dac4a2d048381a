"""Greedy elimination orders (min-fill, min-degree) and the width of bucket elimination along an
order: helper functions that the ``tensor_contraction`` template renders into its programs (not a
template itself; numpy and scipy only, since they run in the sandbox).

The greedy orders keep queues of spins per (fill, degree) key, heaps with lazy updates (``heapq``
is not on the sandbox's import allowlist, so the two heap operations are written here):
near-linear on sparse graphs, where a scan of every remaining spin per step was quadratic (35 s
for a chain of 10^4 spins).
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
    """One greedy elimination order (min-fill or min-degree, ties broken by ``tie``, a permutation
    of range(n)) and its width; with ``cap``, stops (order incomplete) as soon as the width exceeds it.
    Each step takes the spin of least (fill, degree, tie). Spins wait in one queue per key
    (fill, degree), a heap of tie-breaks, and the keys in use wait in a heap of their own: on a
    sparse graph a step pops from and pushes to a short queue (a chain's (0, 1)) instead of sifting
    n tuples. Updates are lazy: only spins whose key the step changed are queued again (stale
    entries are skipped when popped). A spin's fill (missing edges among its neighbours) is
    recomputed only for the eliminated spin's neighbours; any other spin loses one per new edge
    between two of its neighbours."""
    nbrs = [set(x) for x in nbrs]

    def fill(x):
        ns = nbrs[x]
        d = len(ns)
        if d < 2:                      # no pair of neighbours to miss
            return 0
        return d * (d - 1) // 2 - sum(len(nbrs[u] & ns) for u in ns) // 2

    min_fill = how == "min_fill"
    score = [fill(x) if min_fill else 0 for x in range(n)]
    key = [(score[x], len(nbrs[x])) for x in range(n)]
    spin_of = [0] * n                  # the spin whose tie-break is t
    for x in range(n):
        spin_of[tie[x]] = x
    queues = {}
    for t in range(n):                 # ascending tie-breaks: each queue starts sorted, a heap
        queues.setdefault(key[spin_of[t]], []).append(t)
    keys = sorted(queues)              # a sorted list is a heap
    live = set(keys)                   # the keys now in ``keys``
    done = [False] * n
    order, width = [], 0
    while len(order) < n:
        k = keys[0]
        queue = queues[k]
        if not queue:
            _heap_pop(keys)
            live.discard(k)
            continue
        v = spin_of[_heap_pop(queue)]
        if done[v] or key[v] != k:
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
        changed = set(ns)
        if min_fill:
            for x in ns:
                score[x] = fill(x)
            ns_set = set(ns) if added else None
            for a, b in added:
                for x in nbrs[a] & nbrs[b]:
                    if x not in ns_set:
                        score[x] -= 1
                        changed.add(x)
        for x in changed:
            k = (score[x], len(nbrs[x]))
            key[x] = k
            if k not in queues:
                queues[k] = []
            _heap_push(queues[k], tie[x])
            if k not in live:
                live.add(k)
                _heap_push(keys, k)
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
    best = None
    for restart in range(restarts):    # tie-breaks drawn as needed, in the same sequence
        tie = rng.permutation(n).tolist() if restart else list(range(n))
        order, width = _greedy_order(n, nbrs, how, tie, cap)
        if best is None or width < best[1]:
            best = (order, width)
        if best[1] <= 1:   # no order of a graph with an edge is narrower: the restarts cannot win
            break
    return best[0]


def _bucket_plan(scopes, n):
    """The symbolic pass of bucket elimination, on spins relabelled by when the order eliminates
    them (0 .. n-1): ``scopes`` are the given factors' spins, each a sorted tuple of positions.
    Returns (steps, scopes, widest): a step (k, ids, keep) for each non-empty bucket k, in order,
    where ``ids`` index the factors that hold spin k when it is summed out (the given factors are
    0 .. len(scopes) - 1, step j makes factor len(scopes) + j) and ``keep`` is the spins of the
    factor it makes; ``scopes`` extended by the made factors; the largest factor made, in spins.
    A factor waits in the bucket of its first-eliminated spin (its smallest position), which holds
    exactly the factors that contain that spin when it is summed out; within a bucket the factors
    keep their creation order, the given factors first."""
    scopes = list(scopes)
    waiting = [[] for _ in range(n)]
    for i, sc in enumerate(scopes):
        if sc:
            waiting[sc[0]].append(i)
    steps, widest = [], 0
    for k in range(n):
        ids = waiting[k]
        if not ids:
            continue
        waiting[k] = None
        # every factor here holds k, its smallest spin: the made factor holds the others
        keep = scopes[ids[0]][1:] if len(ids) == 1 else tuple(sorted(set().union(*[scopes[i] for i in ids])))[1:]
        if len(keep) > widest:
            widest = len(keep)
        if keep:
            waiting[keep[0]].append(len(scopes))
        scopes.append(keep)
        steps.append((k, ids, keep))
    return steps, scopes, widest


def _positions(order, n):
    """pos[spin]: when ``order`` eliminates it."""
    pos = [0] * n
    for k, v in enumerate(order):
        pos[v] = k
    return pos


def _widest_factor(scopes, order):
    """The largest factor (in spins) that bucket elimination along ``order`` creates from factors
    over ``scopes`` (sets of spins): a dry run on the spin sets alone."""
    pos = _positions(order, len(order))
    return _bucket_plan([tuple(sorted(pos[u] for u in sc)) for sc in scopes], len(order))[2]


FUNCTIONS = (_heap_push, _heap_pop, _greedy_order, _elimination_order, _bucket_plan, _positions, _widest_factor)
