"""The low-temperature form of the planar zero-field Ising model: a Kasteleyn Pfaffian on an
expanded dual graph whose weights exp(-2|K_e|) are all in (0, 1].

Domain walls. Write exp(K s_u s_v) = exp(|K|) * exp(-2|K| [edge unsatisfied]). On a connected
plane graph a spin configuration up to a global flip is the same as its cut (edges with
s_u != s_v), and cuts are exactly the even subgraphs of the dual graph. The unsatisfied edges
are the cut XOR the antiferromagnetic edges, so as a dual edge set they have odd degree exactly
at the frustrated faces T (faces whose boundary walk has an odd number of K < 0). Hence

    Z = 2^{components} exp(sum_e |K_e|) * sum_{T-joins U of the dual} prod_{e in U} exp(-2|K_e|),

a sum of POSITIVE terms. A primal bridge is a dual loop: it only contributes (1 + w_e).

Dimers. Each dual vertex (a primal face) with d >= 3 incident dual edges, taken in the cyclic
order of the face walk, becomes a chain of d - 2 three-port units joined by link edges (a
single unit, some ports unused, when d <= 2). Ports of different faces on the same primal edge
are joined by an external edge of weight w_e; external edge in the matching <=> dual edge in U.
A triangle unit (3 nodes) is perfectly matchable after removing exactly the odd subsets of its
ports that are matched outside; the 'even' unit (ports a0 a1 a2, centre x, edges x-a0 x-a1 x-a2
a1-a2) after removing exactly the even subsets; each in a unique way. Using one even unit in a
chain where the parity must flip makes perfect matchings of the expanded graph H correspond one
to one to T-joins, with the same weight. All internal and link weights are 1.

H is built with its rotation system (units drawn in the face's cyclic order), checked planar by
Euler's formula, given a Kasteleyn orientation (every face but one per component has an odd
number of clockwise edges: orient a spanning tree arbitrarily, fix the rest leaf-first on the
dual tree), and then sum_matchings = |Pf A| = sqrt|det A| for the oriented weighted adjacency A.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_array, csc_array
from scipy.sparse.csgraph import connected_components

from evaluators.oracles.planar_embedding import (
    Embedding,
    bfs_forest,
    euler_holds,
    faces_of,
    graph_csr,
    rotation_from_keys,
    tree_parity_edges,
)

# internal edges of the units: (node i, node j, rotation key at i, rotation key at j); port p is
# node p, the even unit's centre is node 3; key 0 at a port is its outside (external or link) edge
_TRIANGLE = np.array([[0, 1, 1, 2], [1, 2, 1, 2], [2, 0, 1, 2]], dtype=np.int64)
_EVEN_UNIT = np.array([[3, 0, 0, 1], [3, 1, 1, 2], [3, 2, 2, 1], [1, 2, 1, 2]], dtype=np.int64)
#: units of one face kept together by the dissection: the weight-1 link edges between them then
#: never cross a cut, so a front rarely has to delay a node whose big entries lie outside it
#: (measured P04 L = 128: delayed pivots 13.7k -> 3.0k at beta = 1, 52k -> 29k at beta = 8;
#: float64 0.60 -> 0.27 s, double-double at beta = 8 4.5 -> 1.7 s). Larger runs gave no more.
FACE_GROUP_UNITS = 4


def primal_components(n: int, edges: np.ndarray) -> int:
    if len(edges) == 0:
        return n
    g = coo_array((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n)).tocsr()
    return int(connected_components(g, directed=False)[0])


def frustrated_faces(emb: Embedding, K: np.ndarray) -> np.ndarray:
    """(n_faces,) bool: faces whose boundary walk crosses an odd number of negative couplings."""
    neg = np.concatenate([K < 0, K < 0]).astype(np.int64)
    return (np.bincount(emb.face, weights=neg, minlength=emb.n_faces).astype(np.int64) % 2) == 1


def _expanded_dual(emb: Embedding, K: np.ndarray, group_units: int):
    """Edges (a, b, key_a, key_b, weight) of the expanded dual H and its node count."""
    m, F = emb.m, emb.n_faces
    w = np.exp(-2.0 * np.abs(K))
    t = frustrated_faces(emb, K).astype(np.int64)
    bridge = emb.face[:m] == emb.face[m:]
    # slots: non-bridge darts of each face in walk order
    darts = np.flatnonzero(~np.concatenate([bridge, bridge]))
    darts = darts[np.lexsort((emb.face_pos[darts], emb.face[darts]))]
    d = np.bincount(emb.face[darts], minlength=F)
    if np.any(t[d == 0]):
        raise RuntimeError("a frustrated face without dual edges: the embedding is inconsistent")
    slot_start = np.cumsum(d) - d
    u = np.where(d > 0, np.maximum(d - 2, 1), 0)
    unit_face = np.repeat(np.arange(F), u)
    unit_k = np.arange(len(unit_face)) - np.repeat(np.cumsum(u) - u, u)
    uf, df = u[unit_face], d[unit_face]
    is_even = (unit_k == 0) & ((uf - t[unit_face]) % 2 == 1)
    size = 3 + is_even.astype(np.int64)
    base = np.cumsum(size) - size
    n_nodes = int(size.sum())

    node_of_dart = np.full(2 * m, -1, np.int64)
    rows = []  # blocks of (a, b, key_a, key_b) and weights
    weights = []
    for p in range(3):
        slot_port = (p == 1) | ((p == 0) & (unit_k == 0)) | ((p == 2) & (unit_k == uf - 1))
        used = slot_port & (unit_k + p < df)
        node_of_dart[darts[slot_start[unit_face[used]] + unit_k[used] + p]] = base[used] + p
    if np.any(node_of_dart[np.concatenate([~bridge, ~bridge])] < 0):
        raise RuntimeError("a dual edge end was not given a port")
    ext = np.flatnonzero(~bridge)
    zeros = np.zeros(len(ext), np.int64)
    rows.append(np.stack([node_of_dart[ext], node_of_dart[ext + m], zeros, zeros], 1))
    weights.append(w[ext])
    link = np.flatnonzero(unit_k < uf - 1)
    zeros = np.zeros(len(link), np.int64)
    rows.append(np.stack([base[link] + 2, base[link + 1], zeros, zeros], 1))
    weights.append(np.ones(len(link)))
    for pattern, sel in ((_TRIANGLE, ~is_even), (_EVEN_UNIT, is_even)):
        b = base[sel]
        for i, j, ki, kj in pattern:
            rows.append(np.stack([b + i, b + j, np.full(len(b), ki), np.full(len(b), kj)], 1))
            weights.append(np.ones(len(b)))
    edges = np.concatenate(rows)
    coords = None
    if emb.positions is not None:  # each unit at the midpoint of one of its primal edges
        j = np.where(unit_k + 1 < df, unit_k + 1, unit_k)
        e = darts[slot_start[unit_face] + j] % m
        coords = 0.5 * (emb.positions[emb.edges[e, 0]] + emb.positions[emb.edges[e, 1]])
    unit_ptr = np.concatenate([[0], np.cumsum(size)])
    group_ptr, coords = _face_groups(unit_face, unit_k, unit_ptr, coords, group_units)
    return edges, np.concatenate(weights), n_nodes, group_ptr, coords


def _face_groups(unit_face, unit_k, unit_ptr, coords, max_units: int):
    """Node groups for the dissection: runs of up to max_units consecutive units of one face
    (joined by weight-1 link edges), with the mean of their units' coordinates."""
    starts = np.flatnonzero(unit_k % max_units == 0)  # a face's units are contiguous, k from 0
    group_ptr = np.concatenate([unit_ptr[starts], unit_ptr[-1:]])
    if coords is not None:
        counts = np.diff(np.concatenate([starts, [len(unit_face)]]))
        coords = np.add.reduceat(coords, starts, axis=0) / counts[:, None]
    return group_ptr, coords


def kasteleyn_signs(n_nodes: int, a: np.ndarray, b: np.ndarray, key_a, key_b) -> np.ndarray:
    """+-1 per edge: orient a -> b times the sign gives a Kasteleyn (Pfaffian) orientation of
    the plane graph with this rotation system."""
    E = len(a)
    sigma = rotation_from_keys(np.concatenate([a, b]), np.concatenate([key_a, key_b]))
    face, _, n_faces = faces_of(sigma)
    _, _, tree_edge, component = bfs_forest(n_nodes, *graph_csr(n_nodes, a, b))
    if not euler_holds(n_nodes, a, b, n_faces, component):
        raise RuntimeError("the expanded dual is not drawn planar: gadget rotation bug")
    in_tree = np.zeros(E, bool)
    in_tree[tree_edge[tree_edge >= 0]] = True
    # darts a -> b lie in face[:E]; a face needs an odd number of them ("clockwise" edges)
    forward = np.bincount(face[:E], minlength=n_faces)
    demand = (forward % 2 == 0).astype(np.int64)
    cotree = np.flatnonzero(~in_tree)
    fa, fb = face[cotree], face[cotree + E]
    order, parent, parent_edge, _ = bfs_forest(n_faces, *graph_csr(n_faces, fa, fb))
    flip = tree_parity_edges(order, parent, parent_edge, demand, len(cotree))
    sign = np.ones(E)
    sign[cotree[flip]] = -1.0
    return sign


def dual_pfaffian_matrix(emb: Embedding, K: np.ndarray, group_units: int = FACE_GROUP_UNITS):
    """(real skew-symmetric Kasteleyn matrix A of the expanded dual, log prefactor, unit_ptr,
    group coordinates or None) with ln Z = prefactor + ln |Pf A| = prefactor + 1/2 ln |det A|.
    Group g is nodes unit_ptr[g]:unit_ptr[g+1] (up to FACE_GROUP_UNITS consecutive gadget units
    of one face, weight-1 pieces the dissection never splits)."""
    m = emb.m
    aK = np.abs(K)
    w = np.exp(-2.0 * aK)
    bridge = emb.face[:m] == emb.face[m:]
    prefactor = (primal_components(emb.n, emb.edges) * np.log(2.0) + float(aK.sum())
                 + float(np.log1p(w[bridge]).sum()))
    edges, weights, n_nodes, unit_ptr, coords = _expanded_dual(emb, K, group_units)
    if n_nodes == 0:
        return csc_array((0, 0)), prefactor, unit_ptr, None
    a, b, ka, kb = edges.T
    val = kasteleyn_signs(n_nodes, a, b, ka, kb) * weights
    A = coo_array((np.concatenate([val, -val]), (np.concatenate([a, b]), np.concatenate([b, a]))),
                  shape=(n_nodes, n_nodes))
    return A.tocsc(), prefactor, unit_ptr, coords
