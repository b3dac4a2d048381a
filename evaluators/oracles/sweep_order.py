"""Spin orderings for the site-by-site transfer matrix, and the frontier each one leaves.

The frontier after step t is the set of placed spins that still couple to an unplaced one; its
largest size (the vertex separation of the order) is the sweep's state width W (cost 2^W * n).
The candidates are the natural order, the lattice's row/column-major orders, reverse
Cuthill-McKee and a greedy min-frontier order; :func:`sweep_order` keeps the narrowest.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import reverse_cuthill_mckee

from tasks.model import IsingModel

_GREEDY_MAX_N = 1500      # the greedy order costs Python time ~ n * width * degree


def neighbour_pairs(model: IsingModel) -> tuple[np.ndarray, np.ndarray]:
    """Endpoints (a, b) of every pair of spins that share a nonzero term (k-spin terms as cliques)."""
    edges, _ = model.couplings
    a, b = [edges[:, 0]], [edges[:, 1]]
    for t, w in model.higher_order:
        if w != 0.0:
            t = np.asarray(t, dtype=np.int64)
            i, j = np.triu_indices(len(t), 1)
            a.append(t[i])
            b.append(t[j])
    return np.concatenate(a).astype(np.int64), np.concatenate(b).astype(np.int64)


def frontier_spans(n: int, a: np.ndarray, b: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pos, last) and implicitly the frontier: spin u is on it after step t iff pos[u] <= t < last[u]."""
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    last = pos.copy()
    np.maximum.at(last, a, pos[b])
    np.maximum.at(last, b, pos[a])
    return pos, last


def vertex_separation(n: int, a: np.ndarray, b: np.ndarray, order: np.ndarray) -> int:
    pos, last = frontier_spans(n, a, b, order)
    diff = np.zeros(n + 1, dtype=np.int64)
    np.add.at(diff, pos, 1)
    np.add.at(diff, last, -1)
    return int(np.cumsum(diff).max(initial=0))


def _greedy_order(n: int, adj: list[list[int]], start: int) -> np.ndarray:
    """Grow the placed set one spin at a time, each time taking the spin that leaves the smallest frontier."""
    unplaced_deg = [len(nb) for nb in adj]
    placed = [False] * n
    frontier: set[int] = set()
    order: list[int] = []
    remaining = sorted(range(n), key=lambda v: (len(adj[v]), v))
    nxt = 0
    while len(order) < n:
        cands = {w for u in frontier for w in adj[u] if not placed[w]}
        if not cands:
            while placed[remaining[nxt]]:
                nxt += 1
            cands = {start if not placed[start] else remaining[nxt]}
        best, best_key = -1, None
        for v in cands:
            closes = sum(1 for u in adj[v] if placed[u] and unplaced_deg[u] == 1)
            stays = 1 if unplaced_deg[v] > 0 else 0
            key = (stays - closes, -sum(1 for u in adj[v] if placed[u]), len(adj[v]), v)
            if best_key is None or key < best_key:
                best, best_key = v, key
        v = best
        placed[v] = True
        order.append(v)
        for u in adj[v]:
            unplaced_deg[u] -= 1
        frontier = {u for u in frontier | {v} if unplaced_deg[u] > 0}
    return np.asarray(order, dtype=np.int64)


def _candidate_orders(model: IsingModel, a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    n = model.n
    cands = [np.arange(n, dtype=np.int64)]
    lat = model.lattice
    if lat is not None:  # row-major is the identity; column-major sweeps along the other side
        cands.append(np.arange(n, dtype=np.int64).reshape(lat.rows, lat.cols).T.ravel())
    if len(a):
        g = coo_matrix((np.ones(2 * len(a)), (np.r_[a, b], np.r_[b, a])), shape=(n, n)).tocsr()
        cands.append(np.asarray(reverse_cuthill_mckee(g, symmetric_mode=True), dtype=np.int64))
        if n <= _GREEDY_MAX_N:
            adj: list[list[int]] = [[] for _ in range(n)]
            for u, w in set(zip(a.tolist(), b.tolist())):
                adj[u].append(w)
                adj[w].append(u)
            deg = np.array([len(x) for x in adj])
            starts = {int(np.argmin(np.where(deg > 0, deg, n + 1))), int(cands[-1][0])}
            cands += [_greedy_order(n, adj, s) for s in sorted(starts)]
    return cands


def rank_one_width_bound(model: IsingModel) -> int:
    """Every spin of a rank-one block couples to every other: the frontier needs at least k-1 of them."""
    return max((int(np.count_nonzero(u)) - 1 for u, a in model.rank_one if a != 0.0), default=0)


def sweep_order(model: IsingModel) -> np.ndarray:
    """A spin ordering with a small frontier: the best of natural, lattice row/column-major,
    reverse Cuthill-McKee and a greedy min-frontier order (the last only for n <= 1500)."""
    a, b = neighbour_pairs(model)
    cands = _candidate_orders(model, a, b)
    widths = [vertex_separation(model.n, a, b, o) for o in cands]
    return cands[int(np.argmin(widths))]


def check_order(model: IsingModel, order) -> np.ndarray:
    order = np.asarray(order, dtype=np.int64).reshape(-1)
    if order.shape != (model.n,) or not np.array_equal(np.sort(order), np.arange(model.n)):
        raise ValueError(f"order must be a permutation of range({model.n})")
    return order


def frontier_width(model: IsingModel, order=None) -> int:
    """Largest frontier (number of state bits) of the sweep along ``order`` (default: sweep_order)."""
    order = sweep_order(model) if order is None else check_order(model, order)
    a, b = neighbour_pairs(model)
    return vertex_separation(model.n, a, b, order)
