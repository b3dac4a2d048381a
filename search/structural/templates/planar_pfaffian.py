"""Planar zero-field Ising by Fisher's dimer mapping and a Kasteleyn Pfaffian.

Construction (written from the textbook statements of Fisher 1966 and Kasteleyn 1963, not from
the project's oracles):

1. The straight-line embedding gives a rotation system (darts sorted by angle around each spin)
   and so the faces of the plane graph (cycles of phi(d) = rho(reverse(d))).
2. Z as a sum over subgraphs with weights, in one of three forms (the plan's ``form``):
   ``low_temperature`` (default): a configuration is fixed, up to a global flip, by the set of
   bonds it cuts, and a cut of a plane graph is an even subgraph of the dual, so
   Z = 2^c exp(beta sum J) sum_{C even in G*} prod_{e in C} exp(-2 beta J_e), c the number of
   connected components. The weights are positive for either sign of J: no cancellation.
   ``domain_walls``: the unsatisfied bonds, weights exp(-2 beta |J_e|) <= 1, form a subgraph of
   the dual that is odd exactly at the frustrated faces (a pendant node per frustrated face).
   ``high_temperature``: Z = 2^n prod cosh(beta J) sum_{C even in G} prod tanh(beta J_e); signed
   weights, exact but cancelling for frustrated samples at low temperature.
   Bridges of G are loops of G* (a factor 1 + w each) and are never in an even subgraph of G.
3. Even subgraphs of a graph with a rotation system = perfect matchings of a decorated graph:
   a vertex of degree k is split along a path into k - 2 vertices of degree 3 (internal edges of
   weight 1 keep the bijection), each replaced by the gadget {t0, t1, t2, x} with edges t0-x,
   t1-x, t2-x, t0-t1 (one internal completion for every even set of used terminals, none for odd);
   a vertex of degree 2 becomes the edge t0-t1.
4. A Kasteleyn orientation of the decorated plane graph (on every face but one per component an
   odd number of edges agrees with the face's traversal) from a spanning tree of its faces: the
   edges off the tree are oriented arbitrarily and each tree edge's orientation is the parity of
   its subtree, one sparse unit-triangular solve. Then |Pf A| = sum over matchings, and
   log |Pf A| = 1/2 log |det A| from the diagonal of a sparse LU with a minimum-degree ordering
   of A^T A (``MMD_AT_PLUS_A`` is useless here: A^T + A = 0 for a skew matrix, and it runs ~100x slower).

Exact at every temperature. Step 4 in float64 is exact only while it is warm: on +-J grids the
sparse LU (any form) lost 4.1 in log Z on 8 x 8 at beta = 12 (8e-4 at beta = 8 in the domain-wall
form), because an elimination that perturbs the zero entries of A by eps |A| is not accurate for a
matrix whose entries span exp(-2 beta |J|) .. 1: log Pf is well conditioned in the nonzero
entries (d log Pf / d log A_ij is the probability that edge ij is matched) but a Schur complement
entry of order x^(k+1) computed as a difference of terms of order x^k keeps an error eps x^k. So:

- beta max|J| <= WARM_BETA_J (3): the plan's form and solver in float64 (measured <= 1e-11).
- colder, up to TRUSTED_BETA_J (12; TRUSTED_DISTINCT_BETA_J = 25 when most magnitudes differ,
  so no exact cancellation): the domain-wall form (every weight in (0, 1], a sum of positive
  terms), eliminated by ``skew_elimination``: nested dissection that keeps a face's gadgets
  together, 2 x 2 pivots chosen by size among each front's fully summed nodes, double-double
  (106-bit) arithmetic. Measured against the transfer matrix on +-J grids up to 20 x 20 and the
  triangular antiferromagnet (relative error <= 2e-16 in log Z for beta |J| = 4 .. 25), and equal
  to the planar oracle's certified value on 64 x 64 +-J at beta |J| = 6 .. 10.
- colder still: a value only with a bound that vouches for it (``cold_line``): the same
  elimination with a running error analysis (``skew_bounds``) at the requested beta, else the
  ground-state line of couplings that are integer multiples of one unit, certified from two
  vouched references (E0 fixed on its lattice, the remaining excitations bracketed rigorously),
  else ArithmeticError naming the limit. Fixed precision does run out: 106 bits no longer hold
  the Schur complements' exp(-2 beta |J|)^k terms (64 x 64 +-J drifts from beta |J| ~ 18), and
  a large model may not reach its ground-state line while the elimination still resolves it
  (a 32 x 32 triangular antiferromagnet has states 2|J| .. 14|J| above its two ground states whose
  number outweighs exp(-2 beta |J| k) until beta |J| is well past 12). An earlier version read
  E0 and log g0 off unbounded runs at beta |J| = 10 and 12 and was wrong there by 60 in log Z at
  beta |J| = 20 (issue 36).

The cold route costs more: about 0.4 s at n = 1024 and 1.9 s at n = 4096 for beta |J| in [6, 12]
(one core, the small fronts eliminated stacked); the bounded elimination about 1.5 times that,
and the line up to seven bounded runs.
"""

from __future__ import annotations

import sys

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components, reverse_cuthill_mckee
from scipy.sparse.linalg import spsolve_triangular, splu

from search.structural.templates import Claims, render, register
from search.structural.templates import cold_line, cold_sweep, ground_state, skew_elimination
from search.structural.templates.cold_line import _cold_log_z
from search.structural.templates.cold_sweep import _narrow_sweep_log_z
from search.structural.templates.ground_state import _frustrated_faces, _ground_walls
from search.structural.templates.skew_elimination import _node_positions, skew_log_abs_pfaffian

NAME = "planar_pfaffian"
#: the order in which the structural proposer tries templates when no plan is preferred by structure
ORDER = 30
OPTION_SPACE = {
    "form": ("low_temperature", "domain_walls", "high_temperature"),
    "permc_spec": ("MMD_ATA", "COLAMD"),
    "solver": ("sparse_lu", "dense"),
}
IMPORTS = """\
import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix, csc_matrix, hstack
from scipy.sparse.csgraph import breadth_first_order, connected_components, reverse_cuthill_mckee
from scipy.sparse.linalg import spsolve_triangular, splu
"""

#: at or below this beta * max|J| the plan's float64 route is exact (measured: 1e-11 in log Z on 16 x 16)
WARM_BETA_J = 3.0
#: gadgets of one face that the cold route's ordering keeps together (as the planar oracle does)
FACE_GROUP_UNITS = 4
#: up to this beta * max|J| the double-double elimination is trusted without a bound (measured: <= 2e-16
#: relative in log Z against the transfer matrix on +-J grids to 20 x 20 and the triangular
#: antiferromagnet); with most magnitudes distinct (no exact cancellation) up to the second
TRUSTED_BETA_J = 12.0
TRUSTED_DISTINCT_BETA_J = 25.0

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


def _pfaffian_log(n_nodes, edges, weights, ranks, options, xy=None, bounded=False):
    """log |Pf A| = log (weighted number of perfect matchings) of the decorated plane graph. With
    ``xy`` (positions of the first nodes, for the ordering): the stable double-double elimination,
    and with ``bounded`` also a bound on its error: (log |Pf A|, bound)."""
    if n_nodes == 0:
        return (0.0, 0.0) if bounded else 0.0
    o = _kasteleyn_orientation(n_nodes, edges, ranks)
    u = np.where(o == 0, edges[:, 0], edges[:, 1])
    v = np.where(o == 0, edges[:, 1], edges[:, 0])
    if xy is not None:
        A = coo_matrix((np.r_[weights, -weights], (np.r_[u, v], np.r_[v, u])), shape=(n_nodes, n_nodes)).tocsr()
        pattern = coo_matrix((np.ones(2 * len(u)), (np.r_[u, v], np.r_[v, u])), shape=(n_nodes, n_nodes)).tocsr()
        known, known_xy, group = xy
        return skew_log_abs_pfaffian(A, _node_positions(n_nodes, pattern, known, known_xy), group, bounded)
    if options.get("solver") == "dense":
        A = np.zeros((n_nodes, n_nodes))
        np.add.at(A, (u, v), weights)
        np.add.at(A, (v, u), -weights)
        return 0.5 * float(np.linalg.slogdet(A)[1])
    A = coo_matrix((np.r_[weights, -weights], (np.r_[u, v], np.r_[v, u])), shape=(n_nodes, n_nodes)).tocsc()
    lu = splu(A, permc_spec=options.get("permc_spec", "MMD_ATA"))
    return 0.5 * float(np.sum(np.log(np.abs(lu.U.diagonal()))))


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


def _method_log_z(edges, J, h, rank_one, positions, beta, n, options):
    """Natural log Z of a zero-field planar pair model with a straight-line embedding ``positions``.

    Warm (beta max|J| <= WARM_BETA_J): the plan's form and solver in float64. Colder, up to
    TRUSTED_BETA_J (TRUSTED_DISTINCT_BETA_J when most magnitudes differ): the domain-wall form by
    the double-double skew elimination. Colder still: only a value the running error bound vouches
    for, directly or through the certified ground-state line (``cold_line``); else ArithmeticError."""
    if rank_one or np.any(np.asarray(h) != 0.0):
        raise ValueError("the Pfaffian route needs zero fields and no rank-one blocks")
    if positions is None:
        raise ValueError("the Pfaffian route needs a planar straight-line embedding")
    edges, J = _merged(edges, J, n)
    aJ = np.abs(J)
    trusted = TRUSTED_BETA_J if len(np.unique(aJ)) < len(aJ) / 2 else TRUSTED_DISTINCT_BETA_J
    if beta * float(aJ.max(initial=0.0)) <= trusted:
        return _walls_log_z(edges, J, positions, beta, n, options, False)

    face = _cycles(_plane_darts(n, edges[:, 0], edges[:, 1], positions)[2])[0]
    negative = (J < 0).astype(np.float64)

    def ground(multiples):
        return _ground_walls(face, multiples, negative)

    try:
        return _cold_log_z(lambda b: _walls_log_z(edges, J, positions, b, n, options, True), ground, beta, aJ,
                           f"{n} spins ({len(aJ)} couplings)", trusted, bool(_frustrated_faces(face, negative).any()))
    except ArithmeticError as refused:           # a narrow model still has an exact route (cold_sweep)
        return _narrow_sweep_log_z(edges, J, positions, beta, n, refused)


def _merged(edges, J, n):
    """(edges (m, 2) with u < v, J) with repeated pairs summed and zero couplings dropped."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    J = np.asarray(J, dtype=np.float64).reshape(-1)
    lo, hi = np.minimum(edges[:, 0], edges[:, 1]), np.maximum(edges[:, 0], edges[:, 1])
    key, inv = np.unique(lo * n + hi, return_inverse=True)
    Jm = np.bincount(inv.ravel(), weights=J, minlength=len(key))
    keep = Jm != 0.0
    return np.stack([key[keep] // n, key[keep] % n], 1), Jm[keep]


def _walls_log_z(edges, J, positions, beta, n, options, bounded):
    """log Z (zero field) by the plan's route or, beyond WARM_BETA_J, the domain walls eliminated in
    double-double; with ``bounded``: (log Z, a bound on its absolute error), the elimination's
    running bound plus the rounding of the weights exp(-2 |K|) (d log Pf / d log w_e is a
    probability, so n_nodes / 2 of them at most, each (1 + 2|K|) 2^-52)."""
    edges, Jm = _merged(edges, J, n)
    eu, ev = edges[:, 0], edges[:, 1]
    K = beta * Jm
    m = len(K)
    n_comp = connected_components(coo_matrix((np.ones(m), (eu, ev)), shape=(n, n)), directed=False)[0]
    tail, angle, phi = _plane_darts(n, eu, ev, positions)
    face, fpos, _ = _cycles(phi)
    bridge = np.repeat(face[0::2] == face[1::2], 2) if m else np.zeros(0, dtype=bool)
    mate = np.arange(2 * m) ^ 1
    cold = bounded or beta * float(np.max(np.abs(Jm), initial=0.0)) > WARM_BETA_J
    form = "domain_walls" if cold else options.get("form", "low_temperature")
    pos = np.asarray(positions, dtype=np.float64)
    dart_xy = np.repeat(0.5 * (pos[eu] + pos[ev]), 2, axis=0)      # the midpoint of each dart's bond
    if form == "domain_walls":
        # domain walls: unsatisfied bonds form a subgraph of the dual, odd exactly at frustrated faces
        w = np.exp(-2.0 * np.abs(np.repeat(K, 2)))
        aK = np.abs(K)
        base = n_comp * np.log(2.0) + float(aK.sum()) + float(np.sum(np.log1p(np.exp(-2.0 * aK[bridge[0::2]]))))
        group, key2 = face, fpos
    elif form == "low_temperature":
        # cut sets relative to all spins up: even subgraphs of the dual with weights exp(-2 beta J_e)
        w = np.exp(-2.0 * np.repeat(K, 2))
        base = n_comp * np.log(2.0) + float(K.sum()) + float(np.sum(np.logaddexp(0.0, -2.0 * K[bridge[0::2]])))
        group, key2 = face, fpos
    else:
        w = np.tanh(np.repeat(K, 2))
        aK = np.abs(K)
        base = n * np.log(2.0) + float(np.sum(aK + np.log1p(np.exp(-2.0 * aK)) - np.log(2.0)))
        group, key2 = tail, angle
    keep = ~bridge
    if not np.any(keep):
        return (base, 0.0) if bounded else base
    position, degree = _positions_among(group, key2, keep)
    idx = np.flatnonzero(keep)
    new = np.full(2 * m, -1, dtype=np.int64)
    new[idx] = np.arange(len(idx))
    _, vertex = np.unique(group[idx], return_inverse=True)
    vertex, position, degree, mate, w = vertex.ravel(), position[idx], degree[idx], new[mate[idx]], w[idx]
    dart_xy = dart_xy[idx]
    if form == "domain_walls":
        # a frustrated face (odd number of negative bonds) gets one more half-edge, forced into every
        # matching by a pendant node, so an odd number of its walls must be unsatisfied
        n_vert = int(vertex.max()) + 1
        odd = np.bincount(vertex, weights=(np.repeat(K, 2)[idx] < 0), minlength=n_vert).astype(np.int64) % 2 == 1
        dv = np.flatnonzero(odd)
        size = np.bincount(vertex, minlength=n_vert)
        nd, D = len(dv), len(vertex)
        degree = degree + odd[vertex]
        vertex = np.r_[vertex, dv, n_vert + np.arange(nd)]
        position = np.r_[position, size[dv], np.zeros(nd, dtype=np.int64)]
        degree = np.r_[degree, size[dv] + 1, np.ones(nd, dtype=np.int64)]
        mate = np.r_[mate, D + nd + np.arange(nd), D + np.arange(nd)]
        w = np.r_[w, np.ones(2 * nd)]
        centre = np.stack([np.bincount(vertex[:D], weights=dart_xy[:, c], minlength=n_vert) for c in (0, 1)], 1)
        centre = centre[dv] / size[dv][:, None]                          # a pendant sits in its face
        dart_xy = np.r_[dart_xy, centre, centre]
    n_nodes, dedges, dweights, dranks = _decorate(vertex, position, degree, mate, w)
    xy = None
    if cold:
        half = np.flatnonzero(np.arange(len(mate)) < mate)           # _decorate's first edges, in order
        xy = (dedges[:len(half)].T.ravel(), np.r_[dart_xy[half], dart_xy[mate[half]]],
              _face_groups(vertex, degree, FACE_GROUP_UNITS))
    if not bounded:
        return base + _pfaffian_log(n_nodes, dedges, dweights, dranks, options, xy)
    value, bound = _pfaffian_log(n_nodes, dedges, dweights, dranks, options, xy, True)
    return base + value, bound + 0.5 * n_nodes * (1.0 + 2.0 * float(np.abs(K).max())) * 2.0 ** -52


FUNCTIONS = ((_cycles, _rotation, _decorate, _face_groups, _kasteleyn_orientation, _pfaffian_log, _plane_darts,
             _positions_among, _method_log_z, _merged, _walls_log_z) + skew_elimination.FUNCTIONS
             + cold_line.FUNCTIONS + ground_state.FUNCTIONS + cold_sweep.FUNCTIONS)


def source(options: dict) -> str:
    constants = (f"\n_GADGET = {_GADGET!r}\nWARM_BETA_J = {WARM_BETA_J!r}\nFACE_GROUP_UNITS = {FACE_GROUP_UNITS!r}\n"
                 f"TRUSTED_BETA_J = {TRUSTED_BETA_J!r}\nTRUSTED_DISTINCT_BETA_J = {TRUSTED_DISTINCT_BETA_J!r}\n"
                 + skew_elimination.constants() + cold_line.constants() + ground_state.constants()
                 + cold_sweep.constants())
    return render(IMPORTS + "import math\n" + constants, FUNCTIONS)


def applies(view) -> str | None:
    """None when the family is planar with zero fields and the reader gives an embedding."""
    if view.max_order > 2:
        return "terms on three or more spins: not an Ising pair model"
    if view.rank_one:
        return "the couplings come as an all-to-all rank-one block, which is not planar"
    if view.has_fields:
        return "non-zero fields break the dimer mapping of the zero-field planar model"
    if view.planar is not True:
        return "the interaction graph is not planar at every size"
    if not view.has_positions:
        return "the reader gives no straight-line planar embedding"
    return None


def claims(view, options: dict) -> Claims:
    dense = options.get("solver") == "dense"
    form = options.get("form", "low_temperature")
    expansion = {
        "low_temperature": "the low-temperature expansion: a configuration is its set of cut bonds, and cuts of a plane "
                           "graph are even subgraphs of the dual graph, weighted by exp(-2 beta J_e) > 0 (no "
                           "cancellation, even for frustrated couplings)",
        "domain_walls": "the domain-wall expansion: the unsatisfied bonds form a dual subgraph that is odd exactly at "
                        "the frustrated plaquettes, weighted by exp(-2 beta |J_e|)",
        "high_temperature": "the high-temperature expansion: Z = 2^n prod cosh(beta J) times a sum over even "
                            "subgraphs weighted by tanh(beta J_e)",
    }[form]
    cost = ("a dense determinant, O(n^3)" if dense else
            "a sparse LU with a minimum-degree ordering, about n^1.5 on a planar graph; at low temperature a "
            "nested-dissection skew elimination in double-double arithmetic, also about n^1.5, keeps it exact")
    return Claims(
        tractable_class="pfaffian",
        complexity_O="O(n^3)" if dense else "O(n^1.5)",
        confidence=0.9 if form == "low_temperature" else 0.75,
        justification=(f"The interaction graph is planar (a straight-line embedding is known) and there are no fields. "
                       f"Using {expansion}, Fisher's mapping turns these subgraphs into perfect matchings of a "
                       f"decorated planar graph. A Kasteleyn orientation (odd clockwise parity on every face) makes "
                       f"the weighted matching count a Pfaffian, and log Pf = 1/2 log|det A| from {cost}."),
        cost_rank=0,
    )


register(sys.modules[__name__])
