"""Planarity from a drawing: the rotation system that vertex positions define, and Euler's formula.

Ordering each vertex's neighbours by angle gives a combinatorial embedding (a rotation system).
Tracing its faces and finding V - E + F = 1 + C (C connected components) proves that embedding
is planar, so the graph is planar; any other count means only that this drawing's rotation is not
a planar one (the graph may still be planar). Linear in the edges after one sort, so it serves
graphs far beyond what a general planarity test handles quickly.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components


def drawing_is_planar(n: int, edges: np.ndarray, positions: np.ndarray) -> bool:
    """True when the rotation system of the straight-line drawing ``positions`` (n, 2) of the
    simple graph ``edges`` (m, 2) satisfies Euler's formula (a proof of planarity); False too for a
    degenerate drawing (an edge of length zero, two edges leaving a vertex in the same direction),
    which a method that reads the embedding off the drawing cannot use. Self-contained (numpy and
    scipy only): the derivation engine renders it into candidate programs."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    m = len(edges)
    if m == 0:
        return True
    src = np.concatenate([edges[:, 0], edges[:, 1]])        # half-edge k: src[k] -> dst[k]
    dst = np.concatenate([edges[:, 1], edges[:, 0]])
    pos = np.asarray(positions, dtype=np.float64)
    d = pos[dst] - pos[src]
    if np.any(np.all(d == 0.0, axis=1)):
        return False                                         # an edge of length zero: no drawing
    angle = np.arctan2(d[:, 1], d[:, 0])
    order = np.lexsort((angle, src))                         # around each vertex, counter-clockwise
    ranked = angle[order]
    if np.any((src[order][1:] == src[order][:-1]) & (ranked[1:] == ranked[:-1])):
        return False                                         # two edges leave a vertex in the same direction
    rank = np.empty(2 * m, dtype=np.int64)
    rank[order] = np.arange(2 * m)
    first = np.searchsorted(src[order], np.arange(n))         # where each vertex's block starts
    degree = np.bincount(src, minlength=n)
    reverse = np.concatenate([np.arange(m, 2 * m), np.arange(m)])
    # face tracing: after arriving at v along u -> v, leave along the edge clockwise-next to v -> u
    r = rank[reverse]
    v = dst
    nxt_rank = first[v] + (r - first[v] - 1) % degree[v]
    nxt = order[nxt_rank]
    seen = np.zeros(2 * m, dtype=bool)
    faces = 0
    for k in range(2 * m):
        if seen[k]:
            continue
        faces += 1
        while not seen[k]:
            seen[k] = True
            k = nxt[k]
    adj = coo_matrix((np.ones(m), (edges[:, 0], edges[:, 1])), shape=(n, n))
    components = connected_components(adj, directed=False)[0]
    isolated = int(np.sum(degree == 0))
    # Euler per component with edges: V - E + F = 2; faces of different components are traced separately
    return (n - isolated) - m + faces == 2 * (components - isolated)
