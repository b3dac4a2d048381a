"""A parity-constrained sum as an Ising model on the faces of the constraint graph, from its planar
embedding: the solutions of the conditions are one solution plus the cycles of a graph, and the cycles of
a plane graph are sums of its faces (any planar layout, no drawing needed; chains and rings included).

The sum runs over 0/1 variables x with a weight W(s) = c + sum_k w_k prod_{b in S_k} s_b, s_b = 2 x_b - 1,
restricted to the solutions of parity conditions A x = r (mod 2). Conditions in which every variable
appears at most twice form a graph: one vertex per condition, one edge per variable (a variable in one
condition only is joined to a virtual vertex, a variable in none is a loop there). The other conditions
(a logical class, say) are the "extra" rows. Then:

1. one solution x1: the graph's conditions by peeling a spanning forest from its leaves (linear time; the
   virtual vertex absorbs any parity), the extra rows by adding faces (a small system over GF(2));
2. the faces of a planar embedding (networkx's left-right test on the graph with every edge subdivided,
   so parallel edges and loops are simple) span its cycles; a face whose extra rows are odd is combined
   with a pivot face (elimination over GF(2) on the few extra rows), and the pivots are dropped;
3. every solution is x1 + sum_g sigma_g g over the remaining generators g, each one reached
   2^(F - dim) times (F faces, dim the dimension of the solutions of the homogeneous conditions); with
   t_g = (-1)^(sigma_g) and eta_b = (-1)^(x1_b), s_b = -eta_b prod_{g containing b} t_g, so every
   monomial of W becomes a monomial in the t's and

       log Q = c + log sum_t exp(sum_k w'_k prod t) - (F - dim) log 2.

For independent weights on the edges of a planar graph every edge borders two faces: a random-bond
Ising model on the dual graph, zero field (a face outside the graph plays the ghost spin), which the
planar Pfaffian solves after a drawing. A condition graph that is not planar (a torus) is refused here;
``dual_rbim`` handles a torus drawn on a grid.

These functions are plain numpy, scipy and networkx: the derivation step of the same name
(search/derivation/actions/face_dual.py) renders them into its programs, and a task whose formula is a
constrained sum gets its model IR from them (``Task.to_model``). They call ``_merge_terms``, the compiled
reader's helper (tasks/formula_runtime.py), which every program carries with its reader.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components

from tasks.formula_runtime import _merge_terms

def _fd_rows(problem):
    """(graph rows (R, 2 lists per variable as an (N, 2) array of row ids, -1 for none), their rhs, the
    extra conditions as a list of (variable array, rhs) rows). Families are taken into the graph,
    largest first, while every variable stays in at most two of its rows."""
    N = int(problem["n_vars"])
    fams = sorted(problem["constraints"], key=lambda c: -len(c["var"]))
    count = np.zeros(N, dtype=np.int64)
    ends = np.full((N, 2), -1, dtype=np.int64)
    rhs, extra, base = [], [], 0
    for c in fams:
        var, row_of, r = np.asarray(c["var"]), np.asarray(c["row_of"]), np.asarray(c["rhs"]) % 2
        add = np.bincount(var, minlength=N)
        if np.all(count + add <= 2) and np.all(np.bincount(row_of * N + var, minlength=len(r) * N) <= 1):
            order = np.argsort(var, kind="stable")
            for v, row in zip(var[order], row_of[order]):
                ends[v, count[v]] = base + row
                count[v] += 1
            rhs.append(r)
            base += len(r)
        else:
            for k in range(len(r)):
                members = var[row_of == k]
                odd = np.flatnonzero(np.bincount(members, minlength=N) % 2)
                extra.append((odd, int(r[k])))
    return ends, (np.concatenate(rhs) if rhs else np.zeros(0, dtype=np.int64)), extra


def _fd_graph(ends, n_rows):
    """(vertex count, u, v) of the constraint graph: edge b joins its two rows; a free end goes to the
    virtual vertex n_rows."""
    u = np.where(ends[:, 0] < 0, n_rows, ends[:, 0])
    v = np.where(ends[:, 1] < 0, n_rows, ends[:, 1])
    return n_rows + 1, u, v


def _fd_faces(n_vertices, u, v):
    """(face on each side of every edge (N, 2), number of faces); ValueError when the graph is not planar.
    Each edge b is subdivided by node n_vertices + 2b (and + 2b + 1 for a loop), so the graph is simple."""
    N = len(u)
    mid = n_vertices + 2 * np.arange(N)
    loop = u == v
    g = nx.Graph()
    g.add_nodes_from(range(n_vertices + 2 * N))
    g.add_edges_from(zip(u.tolist(), mid.tolist()))
    g.add_edges_from(zip(np.where(loop, mid + 1, v).tolist(), np.where(loop, v, mid).tolist()))
    g.add_edges_from(zip(mid[loop].tolist(), (mid[loop] + 1).tolist()))
    planar, embedding = nx.check_planarity(g)
    if not planar:
        raise ValueError("the graph of the parity conditions is not planar (networkx's planarity test)")
    rotation = embedding.get_data()                     # node -> neighbours in clockwise order
    dart = {}
    tails, heads = [], []
    for a, nbrs in rotation.items():
        for b in nbrs:
            dart[(a, b)] = len(tails)
            tails.append(a)
            heads.append(b)
    nxt = np.empty(len(tails), dtype=np.int64)
    for d, (a, b) in enumerate(zip(tails, heads)):       # leave b along the neighbour after a (clockwise)
        around = rotation[b]
        nxt[d] = dart[(b, around[(around.index(a) + 1) % len(around)])]
    face = np.full(len(tails), -1, dtype=np.int64)
    count = 0
    for start in range(len(tails)):
        if face[start] >= 0:
            continue
        k = start
        while face[k] < 0:
            face[k] = count
            k = nxt[k]
        count += 1
    sides = np.array([[face[dart[(int(a), int(m))]], face[dart[(int(m), int(a))]]] for a, m in zip(u, mid)],
                     dtype=np.int64).reshape(N, 2)
    return sides, count


def _fd_solution(n_vertices, u, v, rhs):
    """x1 solving the graph's conditions (rhs per real row; the last vertex is virtual, absorbing any
    parity): leaves of a BFS forest first, each flipping the edge to its parent when its parity is off."""
    N = len(u)
    need = np.zeros(n_vertices, dtype=np.int64)
    need[:len(rhs)] = rhs
    adj = coo_matrix((np.ones(N), (u, v)), shape=(n_vertices, n_vertices)).tocsr()
    pair = {}                                           # an edge of each joined pair (parallel edges: any)
    for b in range(N):
        if u[b] != v[b]:
            pair.setdefault((min(u[b], v[b]), max(u[b], v[b])), b)
    x1 = np.zeros(N, dtype=np.int64)
    seen = np.zeros(n_vertices, dtype=bool)
    for root in [n_vertices - 1] + list(range(n_vertices - 1)):
        if seen[root]:
            continue
        order, pred = breadth_first_order(adj, root, directed=False, return_predecessors=True)
        seen[order] = True
        for w in order[::-1][:-1]:
            if need[w]:
                p = pred[w]
                x1[pair[(min(w, p), max(w, p))]] ^= 1
                need[w] = 0
                need[p] ^= 1
        if need[root] and root != n_vertices - 1:
            raise ValueError("no assignment satisfies the parity conditions (a component's parities are odd)")
    return x1


def _fd_eliminate(S, target):
    """Over GF(2), with S (k, F) the extra rows' parity on each face: (y with S y = target or None,
    generators as lists of faces spanning the faces whose extra parities vanish, and the pivots dropped)."""
    k, F = S.shape
    comp = {f: {f} for f in range(F)}
    S = S.copy() % 2
    y_rows = np.concatenate([S, np.asarray(target).reshape(-1, 1) % 2], 1)
    pivots = []
    for i in range(k):
        cols = [f for f in np.flatnonzero(S[i]) if f not in pivots]
        if not cols:
            continue
        p = int(cols[0])
        for q in np.flatnonzero(S[i]):
            q = int(q)
            if q != p:
                S[:, q] ^= S[:, p]
                comp[q] = comp[q] ^ comp[p]
        pivots.append(p)
    # y: a combination of faces with the target extra parities (the same elimination on the system)
    M, where, r = y_rows.copy(), [], 0
    for c in range(F):
        if r == k:
            break
        rows = np.flatnonzero(M[r:, c]) + r
        if not len(rows):
            continue
        M[[r, rows[0]]] = M[[rows[0], r]]
        for j in np.flatnonzero(M[:, c]):
            if j != r:
                M[j] ^= M[r]
        where.append(c)
        r += 1
    if np.any(M[r:, -1]):
        return None, [], pivots
    y = np.zeros(F, dtype=np.int64)
    y[where] = M[:r, -1]
    return y, [sorted(comp[f]) for f in range(F) if f not in pivots], pivots


def _fd_model(problem):
    """The Ising model on the generators (faces) whose log Z plus log_shift is the constrained sum's log."""
    if problem.get("kind") != "constrained":
        raise ValueError("the face dual takes a parity-constrained sum")
    N = int(problem["n_vars"])
    ends, rhs, extra = _fd_rows(problem)
    n_vertices, u, v = _fd_graph(ends, len(rhs))
    sides, F = _fd_faces(n_vertices, u, v)
    x1 = _fd_solution(n_vertices, u, v, rhs)
    members = [[] for _ in range(F)]                       # face -> its edges (each side counted)
    for b in range(N):
        if sides[b, 0] != sides[b, 1]:
            members[sides[b, 0]].append(b)
            members[sides[b, 1]].append(b)
    S = np.zeros((len(extra), F), dtype=np.int64)
    target = np.zeros(len(extra), dtype=np.int64)
    for i, (vars_, r) in enumerate(extra):
        inside = np.zeros(N, dtype=np.int64)
        inside[vars_] = 1
        for f in range(F):
            S[i, f] = int(inside[members[f]].sum()) % 2 if members[f] else 0
        target[i] = (r - int(inside @ x1)) % 2
    y, gens, pivots = _fd_eliminate(S, target)
    if y is None:
        raise ValueError("no assignment satisfies the parity conditions (the extra conditions conflict)")
    for f in np.flatnonzero(y):
        x1[members[f]] ^= 1
    of_face = [[] for _ in range(F)]                       # face -> generators that contain it
    for g, faces in enumerate(gens):
        for f in faces:
            of_face[f].append(g)
    incidence = []                                         # variable -> generators containing it (odd count)
    for b in range(N):
        count = {}
        if sides[b, 0] != sides[b, 1]:
            for f in sides[b]:
                for g in of_face[f]:
                    count[g] = count.get(g, 0) + 1
        incidence.append(sorted(g for g, c in count.items() if c % 2))
    eta = 1 - 2 * x1
    parts, shift = [], float(problem["constant"])
    for idx, w in problem["terms"]:
        for row, weight in zip(np.asarray(idx).tolist(), np.asarray(w, dtype=np.float64).tolist()):
            sign, odd = 1.0, {}
            for b in row:
                sign *= -float(eta[b])
                for g in incidence[b]:
                    odd[g] = odd.get(g, 0) ^ 1
            spins = sorted(g for g, o in odd.items() if o)
            if spins:
                parts.append((np.array([spins], dtype=np.int64), np.array([sign * weight])))
            else:
                shift += sign * weight
    cycles = N - n_vertices + connected_components(
        coo_matrix((np.ones(N), (u, v)), shape=(n_vertices, n_vertices)), directed=False)[0]
    dim = cycles - len(pivots)          # the faces span the cycles; each pivot is one independent extra row
    shift -= (len(gens) - dim) * math.log(2.0)
    terms, more = _merge_terms(parts)
    return {"n": len(gens), "beta": 1.0, "terms": terms, "rank_one": [], "log_shift": shift + more,
            "energy_shift": 0.0, "positions": None, "coords": None, "statistic": "log_z"}



FUNCTIONS = (_fd_rows, _fd_graph, _fd_faces, _fd_solution, _fd_eliminate, _fd_model)
