"""Planar embeddings as rotation systems on darts, their faces, and the graph kernels the
planar oracles share (face tracing, BFS spanning forests, tree parity sums).

Darts. A graph with m edges ``edges[e] = (u, v)`` has 2m darts: dart e is u -> v, dart e + m is
v -> u, so ``reverse(a) = (a + m) % 2m``. A rotation system ``sigma`` maps each dart to the next
dart counter-clockwise around its tail. Faces are the cycles of ``phi(a) = sigma^-1(reverse(a))``:
arriving at v along a, leave along the neighbour just clockwise of the way back, so the face
lies on the LEFT of every dart of its walk (bounded faces are walked counter-clockwise).

A rotation system is planar exactly when Euler's formula holds on every component:
V - E + F = 2 per component with at least one edge. That check is cheap and exact, so given
positions are only trusted after it; without positions (or when it fails) networkx's planarity
test supplies a combinatorial embedding. Only the rotation system matters for the dual
Pfaffian; the Kac-Ward matrix also needs straight-line positions (its phases are turning angles).
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np
from numba import njit
from scipy.sparse import coo_array
from scipy.sparse.csgraph import connected_components

from evaluators.oracles.base import NotApplicable


# -- numba kernels ------------------------------------------------------------------------------

@njit(cache=True)
def trace_cycles(perm):
    """Cycles of a permutation: (cycle id per element, position in its cycle, number of cycles)."""
    n = perm.shape[0]
    cid = np.full(n, -1, np.int64)
    pos = np.zeros(n, np.int64)
    k = 0
    for s in range(n):
        if cid[s] >= 0:
            continue
        a, p = s, 0
        while cid[a] < 0:
            cid[a] = k
            pos[a] = p
            p += 1
            a = perm[a]
        k += 1
    return cid, pos, k


@njit(cache=True)
def bfs_forest(n, indptr, nbr, nbr_edge):
    """BFS spanning forest of a graph in CSR form (nbr_edge: edge id of each adjacency entry).

    Returns (order, parent, parent_edge, component): every node in BFS order (roots are the
    lowest-numbered node of each component), its parent node and tree edge (-1 at roots).
    """
    order = np.empty(n, np.int64)
    parent = np.full(n, -1, np.int64)
    parent_edge = np.full(n, -1, np.int64)
    comp = np.full(n, -1, np.int64)
    head = 0
    tail = 0
    c = 0
    for r in range(n):
        if comp[r] >= 0:
            continue
        comp[r] = c
        order[tail] = r
        tail += 1
        while head < tail:
            v = order[head]
            head += 1
            for q in range(indptr[v], indptr[v + 1]):
                w = nbr[q]
                if comp[w] < 0:
                    comp[w] = c
                    parent[w] = v
                    parent_edge[w] = nbr_edge[q]
                    order[tail] = w
                    tail += 1
        c += 1
    return order, parent, parent_edge, comp


@njit(cache=True)
def tree_parity_edges(order, parent, parent_edge, demand, n_edges):
    """Tree edges to select so every non-root node meets ``demand`` (parity of selected incident
    tree edges); the edge above v is selected iff the demand summed over v's subtree is odd."""
    acc = demand.copy()
    chosen = np.zeros(n_edges, np.bool_)
    for i in range(order.shape[0] - 1, -1, -1):
        v = order[i]
        p = parent[v]
        if p >= 0 and acc[v]:
            chosen[parent_edge[v]] = True
            acc[p] ^= 1
    return chosen


# -- rotation systems ---------------------------------------------------------------------------

@njit(cache=True)
def _bucket_order(tail, n):
    """Positions 0 .. len(tail) - 1 sorted by tail (stable: a counting sort), and where each
    tail's run starts (n + 1 entries)."""
    start = np.zeros(n + 1, np.int64)
    for i in range(tail.shape[0]):
        start[tail[i] + 1] += 1
    for v in range(n):
        start[v + 1] += start[v]
    fill = start[:n].copy()
    order = np.empty(tail.shape[0], np.int64)
    for i in range(tail.shape[0]):
        order[fill[tail[i]]] = i
        fill[tail[i]] += 1
    return order, start


@njit(cache=True)
def _rotation(tail, key, n):
    order, start = _bucket_order(tail, n)
    for v in range(n):  # each tail's darts by key, stable (a degree is small: insertion sort)
        lo, hi = start[v], start[v + 1]
        if hi - lo > 32:
            order[lo:hi] = order[lo:hi][np.argsort(key[order[lo:hi]], kind="mergesort")]
            continue
        for i in range(lo + 1, hi):
            x = order[i]
            j = i - 1
            while j >= lo and key[order[j]] > key[x]:
                order[j + 1] = order[j]
                j -= 1
            order[j + 1] = x
    sigma = np.empty_like(order)
    for v in range(n):
        lo, hi = start[v], start[v + 1]
        for i in range(lo, hi):
            sigma[order[i]] = order[i + 1] if i + 1 < hi else order[lo]
    return sigma


def rotation_from_keys(tail: np.ndarray, key: np.ndarray) -> np.ndarray:
    """sigma: next dart counter-clockwise around the tail, darts ordered around each tail by key
    (ties in dart order)."""
    tail = np.ascontiguousarray(tail, dtype=np.int64)
    if len(tail) == 0:
        return np.zeros(0, np.int64)
    return _rotation(tail, np.ascontiguousarray(key), int(tail.max()) + 1)


@njit(cache=True)
def _csr(n, a, b):
    src = np.concatenate((a, b))
    order, indptr = _bucket_order(src, n)
    m = a.shape[0]
    nbr = np.empty(2 * m, np.int64)
    eid = np.empty(2 * m, np.int64)
    for i in range(2 * m):
        d = order[i]
        nbr[i] = b[d] if d < m else a[d - m]
        eid[i] = d if d < m else d - m
    return indptr, nbr, eid


def graph_csr(n: int, a: np.ndarray, b: np.ndarray):
    """Undirected adjacency (indptr, neighbour, edge id) of edges a[j] - b[j]: each node's
    entries in the order of the darts a -> b, then b -> a."""
    return _csr(int(n), np.ascontiguousarray(a, dtype=np.int64), np.ascontiguousarray(b, dtype=np.int64))


@dataclass(frozen=True)
class Embedding:
    """A planar rotation system of the graph (n, edges) with its faces.

    face[a] is the face on the left of dart a, face_pos[a] its place in that face's walk.
    positions: a straight-line drawing consistent with the rotation, or None if only the
    combinatorial embedding is known.
    """

    n: int
    edges: np.ndarray
    sigma: np.ndarray
    face: np.ndarray
    face_pos: np.ndarray
    n_faces: int
    positions: np.ndarray | None

    @property
    def m(self) -> int:
        return len(self.edges)

    @property
    def tail(self) -> np.ndarray:
        return np.concatenate([self.edges[:, 0], self.edges[:, 1]])

    @property
    def head(self) -> np.ndarray:
        return np.concatenate([self.edges[:, 1], self.edges[:, 0]])


def faces_of(sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Faces (left of each dart) of a rotation system on 2m darts."""
    m2 = len(sigma)
    if m2 == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), 0
    sigma_inv = np.empty_like(sigma)
    sigma_inv[sigma] = np.arange(m2)
    rev = (np.arange(m2) + m2 // 2) % m2
    return trace_cycles(sigma_inv[rev].astype(np.int64))


def euler_holds(n: int, a: np.ndarray, b: np.ndarray, n_faces: int, component: np.ndarray | None = None) -> bool:
    """V - E + F == 2 on every component with an edge (summed): the rotation system is planar.
    component: each node's component label when already known (e.g. from :func:`bfs_forest`)."""
    if len(a) == 0:
        return True
    if component is None:
        g = coo_array((np.ones(len(a)), (a, b)), shape=(n, n)).tocsr()
        component = connected_components(g, directed=False)[1]
    touched = np.zeros(n, bool)
    touched[a] = touched[b] = True
    n_nonisolated_comps = len(np.unique(component[touched]))
    return int(touched.sum()) - len(a) + n_faces == 2 * n_nonisolated_comps


def _rotation_from_positions(edges: np.ndarray, pos: np.ndarray) -> np.ndarray:
    tail = np.concatenate([edges[:, 0], edges[:, 1]])
    head = np.concatenate([edges[:, 1], edges[:, 0]])
    d = pos[head] - pos[tail]
    return rotation_from_keys(tail, np.arctan2(d[:, 1], d[:, 0]))


def _networkx_embedding(n: int, edges: np.ndarray):
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges.tolist())
    planar, emb = nx.check_planarity(g)
    return (emb if planar else None), g


def _rotation_from_networkx(emb, edges: np.ndarray) -> np.ndarray:
    rank = {}
    for v in emb.nodes():
        for k, w in enumerate(emb.neighbors_cw_order(v)):
            rank[(v, w)] = -k  # clockwise list -> counter-clockwise keys
    tail = np.concatenate([edges[:, 0], edges[:, 1]])
    head = np.concatenate([edges[:, 1], edges[:, 0]])
    key = np.array([rank[(int(u), int(v))] for u, v in zip(tail, head)], dtype=np.int64)
    return rotation_from_keys(tail, key)


def _embedding(n, edges, sigma, positions) -> Embedding | None:
    face, face_pos, n_faces = faces_of(sigma)
    if not euler_holds(n, edges[:, 0], edges[:, 1], n_faces):
        return None
    return Embedding(n, edges, sigma, face, face_pos, n_faces, positions)


def planar_embedding(n: int, edges: np.ndarray, positions: np.ndarray | None,
                     need_positions: bool = False) -> Embedding:
    """A planar embedding of (n, edges): from ``positions`` when their rotation system is planar,
    else from networkx (with a straight-line drawing only if ``need_positions``).
    Raises NotApplicable when the graph is not planar."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if positions is not None:
        pos = np.asarray(positions, dtype=float)
        if pos.shape == (n, 2) and np.all(np.isfinite(pos)):
            emb = _embedding(n, edges, _rotation_from_positions(edges, pos), pos)
            if emb is not None:
                return emb
    nx_emb, _ = _networkx_embedding(n, edges)
    if nx_emb is None:
        raise NotApplicable("the interaction graph is not planar")
    if need_positions:
        layout = nx.combinatorial_embedding_to_pos(nx_emb)
        pos = np.array([layout[i] for i in range(n)], dtype=float)
        emb = _embedding(n, edges, _rotation_from_positions(edges, pos), pos)
    else:
        emb = _embedding(n, edges, _rotation_from_networkx(nx_emb, edges), None)
    if emb is None:  # networkx said planar: a failure here is a bug, not a property of the model
        raise RuntimeError("networkx embedding failed the Euler check")
    return emb


def planarity_reason(n: int, edges: np.ndarray, positions: np.ndarray | None) -> str | None:
    """None when (n, edges) has a planar embedding (trying ``positions`` first), else why not."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if positions is not None:
        pos = np.asarray(positions, dtype=float)
        if pos.shape == (n, 2) and np.all(np.isfinite(pos)):
            face_count = faces_of(_rotation_from_positions(edges, pos))[2]
            if euler_holds(n, edges[:, 0], edges[:, 1], face_count):
                return None
    if _networkx_embedding(n, edges)[0] is None:
        return "the interaction graph is not planar"
    return None
