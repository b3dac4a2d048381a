"""The plane graph behind the planar Pfaffian template, as Fisher and Kasteleyn use it: the faces of
a straight-line drawing (a rotation system), the Fisher gadgets that turn even subgraphs into perfect
matchings, and a Kasteleyn orientation. Not a template: helper functions that the planar_pfaffian
template renders into its programs (written from the textbook statements of Fisher 1966 and Kasteleyn
1963; the construction is described in that template's docstring, steps 1, 3 and 4)."""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components
from scipy.sparse.linalg import spsolve_triangular

# gadget of a degree-3 vertex: (node a, node b, rank at a, rank at b); nodes 0..2 = t0..t2, 3 = x.
# A terminal's own slot 0 is its outside edge; ranks are the counter-clockwise order at each node.
_GADGET = ((0, 3, 2, 0), (1, 3, 1, 1), (2, 3, 1, 2), (0, 1, 1, 2))


def _cycles(perm):
    """Cycle label, position from the cycle's smallest element, and cycle length of every element."""
    size = len(perm)
    if size == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z
    idx = np.arange(size)
    g = coo_matrix((np.ones(size), (idx, perm)), shape=(size, size))
    n_cyc, label = connected_components(g, directed=True, connection="weak")
    start = np.full(n_cyc, size, dtype=np.int64)
    np.minimum.at(start, label, idx)
    length = np.bincount(label, minlength=n_cyc)
    # list ranking by pointer doubling on the path that ends just before the cycle's start
    nxt = np.where(perm == start[label], idx, perm)
    dist = (nxt != idx).astype(np.int64)
    while True:
        moved = nxt[nxt]
        if np.array_equal(moved, nxt):
            break
        dist = dist + dist[nxt]
        nxt = moved
    return label, length[label] - 1 - dist, length[label]


def _rotation(tail, key):
    """rho: the next dart counter-clockwise around the same tail (darts sorted by ``key``)."""
    size = len(tail)
    order = np.lexsort((key, tail))
    st = tail[order]
    first = np.r_[True, st[1:] != st[:-1]]
    last = np.r_[st[1:] != st[:-1], True]
    group_start = np.maximum.accumulate(np.where(first, np.arange(size), 0))
    succ = np.where(last, group_start, np.arange(size) + 1)
    rho = np.empty(size, dtype=np.int64)
    rho[order] = order[succ]
    return rho


def _decorate(vertex, position, degree, mate, weight):
    """The decorated graph of a graph with rotation system: (number of nodes, edges (E, 2), weights, ranks (E, 2)).

    One entry per dart d: ``vertex[d]``, its cyclic ``position`` among the ``degree[d]`` darts of
    that vertex, and ``mate[d]`` the other dart of its edge (edge weight ``weight[d]``). A vertex
    of degree 1 is one node (its edge is forced into every matching), degree 2 the edge t0-t1,
    degree k >= 3 a path of k - 2 gadgets."""
    n_vert = int(vertex.max()) + 1 if len(vertex) else 0
    deg3 = degree >= 3
    sub_count = np.zeros(n_vert, dtype=np.int64)
    sub_count[vertex[deg3]] = degree[deg3] - 2
    sub_base = np.cumsum(sub_count) - sub_count
    n_sub = int(sub_count.sum())
    small = np.zeros(n_vert, dtype=np.int64)            # nodes of vertices of degree 1 and 2
    small[vertex[~deg3]] = degree[~deg3]
    small_base = 4 * n_sub + np.cumsum(small) - small
    v2 = np.flatnonzero(small == 2)

    # the terminal node of every dart
    p, k, v = position, degree, vertex
    sub = np.where(p == 0, 0, np.where(p == k - 1, k - 3, p - 1))
    slot = np.where(p == 0, 0, np.where(p == k - 1, 2, 1))
    term = np.where(deg3, 4 * (sub_base[v] + sub) + slot, small_base[v] + p)

    edges, weights, ranks = [], [], []
    half = np.flatnonzero(np.arange(len(mate)) < mate)          # one dart per edge
    edges.append(np.stack([term[half], term[mate[half]]], 1))
    weights.append(weight[half])
    ranks.append(np.zeros((len(half), 2), dtype=np.int64))
    if n_sub:
        s = np.arange(n_sub)
        for a, b, ra, rb in _GADGET:
            edges.append(np.stack([4 * s + a, 4 * s + b], 1))
            ranks.append(np.tile([ra, rb], (n_sub, 1)))
            weights.append(np.ones(n_sub))
        # path links: slot t2 of sub-vertex j to slot t0 of sub-vertex j + 1 of the same vertex
        owner = np.repeat(np.arange(n_vert), sub_count)
        link = np.flatnonzero(owner[:-1] == owner[1:])
        edges.append(np.stack([4 * link + 2, 4 * (link + 1)], 1))
        ranks.append(np.zeros((len(link), 2), dtype=np.int64))
        weights.append(np.ones(len(link)))
    if len(v2):
        b2 = small_base[v2]
        edges.append(np.stack([b2, b2 + 1], 1))
        ranks.append(np.ones((len(v2), 2), dtype=np.int64))
        weights.append(np.ones(len(v2)))
    n_nodes = 4 * n_sub + int(small.sum())
    return n_nodes, np.concatenate(edges), np.concatenate(weights), np.concatenate(ranks)


def _face_groups(vertex, degree, units):
    """A group label for every node of ``_decorate``'s graph (same numbering): runs of up to ``units``
    consecutive gadgets of one vertex, and the nodes of a vertex of degree 1 or 2. The ordering
    keeps a group together, so the weight-1 edges inside a face never cross a cut."""
    n_vert = int(vertex.max()) + 1 if len(vertex) else 0
    vdeg = np.zeros(n_vert, dtype=np.int64)
    vdeg[vertex] = degree
    sub_count = np.where(vdeg >= 3, vdeg - 2, 0)
    owner = np.repeat(np.arange(n_vert), sub_count)
    k = np.arange(len(owner)) - np.repeat(np.cumsum(sub_count) - sub_count, sub_count)
    small = np.where(vdeg < 3, vdeg, 0)
    key = np.r_[np.repeat(owner * (n_vert + 1) + k // units, 4), np.repeat(np.arange(n_vert) * (n_vert + 1), small)]
    return np.unique(key, return_inverse=True)[1].ravel()


def _kasteleyn_orientation(n_nodes, edges, ranks):
    """Orientation bits o (0: edge[0] -> edge[1]) with an odd number of edges agreeing with the
    traversal of every face except one per connected component."""
    m = len(edges)
    tail = edges.reshape(-1)                       # dart 2e: edge[e,0] -> edge[e,1]; dart 2e+1 reversed
    rho = _rotation(tail, ranks.reshape(-1))
    phi = rho[np.arange(2 * m) ^ 1]
    face, _, _ = _cycles(phi)
    n_faces = int(face.max()) + 1
    fa, fb = face[0::2], face[1::2]
    # spanning forest of the faces, rooted at a virtual face joined to one face per component
    adj = coo_matrix((np.ones(m), (fa, fb)), shape=(n_faces, n_faces))
    n_comp, comp = connected_components(adj, directed=False)
    roots = np.full(n_comp, n_faces, dtype=np.int64)         # the excluded face of each component
    np.minimum.at(roots, comp, np.arange(n_faces))
    rows = np.r_[fa, np.full(n_comp, n_faces)]
    cols = np.r_[fb, roots]
    big = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_faces + 1, n_faces + 1)).tocsr()
    order, pred = breadth_first_order(big, n_faces, directed=False, return_predecessors=True)
    child = np.flatnonzero((pred >= 0) & (pred != n_faces))
    child = child[child != n_faces]
    parent = pred[child]
    # the edge that realises each tree link (any edge between the two faces)
    lo, hi = np.minimum(fa, fb), np.maximum(fa, fb)
    key = lo * (n_faces + 1) + hi
    srt = np.argsort(key, kind="stable")
    want = np.minimum(child, parent) * (n_faces + 1) + np.maximum(child, parent)
    tree_edge = srt[np.searchsorted(key[srt], want)]
    in_tree = np.zeros(m, dtype=bool)
    in_tree[tree_edge] = True
    # s_F = 1 + (darts of F on non-tree edges that agree with o = 0) + (number of children of F)
    dart_edge = np.arange(2 * m) // 2
    agree0 = (~in_tree[dart_edge]) & (np.arange(2 * m) % 2 == 0)
    s = 1 + np.bincount(face, weights=agree0, minlength=n_faces).astype(np.int64)
    s += np.bincount(parent, minlength=n_faces)
    # a_F = sum of s over the subtree of F (mod 2): unit upper-triangular solve in BFS order
    rank = np.empty(n_faces + 1, dtype=np.int64)
    rank[order] = np.arange(len(order))
    size = n_faces + 1
    tri = coo_matrix((np.r_[np.ones(size), -np.ones(len(child))],
                      (np.r_[np.arange(size), rank[parent]], np.r_[np.arange(size), rank[child]])),
                     shape=(size, size)).tocsr()
    rhs = np.zeros(size)
    rhs[rank[:n_faces]] = s % 2
    a = np.rint(spsolve_triangular(tri, rhs, lower=False, unit_diagonal=True)).astype(np.int64) % 2
    a_child = a[rank[child]]
    # dart of the tree edge on the child's side: agreement a means o = that dart's direction bit
    side = np.where(face[2 * tree_edge] == child, 0, 1)
    o = np.zeros(m, dtype=np.int64)
    o[tree_edge] = np.where(a_child == 1, side, 1 - side)
    return o


def _plane_darts(n, eu, ev, positions):
    """Darts of the plane graph (dart 2e: eu -> ev, 2e+1 back): tail, rotation rho, face of each dart."""
    tail = np.stack([eu, ev], 1).reshape(-1)
    head = np.stack([ev, eu], 1).reshape(-1)
    pos = np.asarray(positions, dtype=np.float64)
    angle = np.arctan2(pos[head, 1] - pos[tail, 1], pos[head, 0] - pos[tail, 0])
    rho = _rotation(tail, angle)
    phi = rho[np.arange(len(tail)) ^ 1]
    return tail, angle, phi


def _positions_among(group, key, keep):
    """For the kept darts: cyclic position (by ``key``) within their ``group`` and the group's size."""
    idx = np.flatnonzero(keep)
    order = idx[np.lexsort((key[idx], group[idx]))]
    g = group[order]
    first = np.r_[True, g[1:] != g[:-1]] if len(g) else np.zeros(0, dtype=bool)
    start = np.maximum.accumulate(np.where(first, np.arange(len(g)), 0)) if len(g) else g
    position = np.empty(len(group), dtype=np.int64)
    position[order] = np.arange(len(g)) - start
    counts = np.bincount(g, minlength=int(group.max()) + 1 if len(group) else 0)
    return position, counts[group]


FUNCTIONS = (_cycles, _rotation, _decorate, _face_groups, _kasteleyn_orientation, _plane_darts, _positions_among)


def constants() -> str:
    """The module's constants as program text."""
    return f"_GADGET = {_GADGET!r}\n"
