"""A parity-constrained sum as a random-bond Ising model on the dual graph (the toric code's decoding
probability; Dennis, Kitaev, Landahl and Preskill 2002).

The sum runs over 0/1 variables x with independent weights, W = c + sum_b h_b s_b (s_b = 2 x_b - 1), on
the solutions of parity conditions A x = r (mod 2). One family of conditions must give each variable two
rows at grid points (``coords``): the variables are the edges of a graph drawn on a periodic grid
(vertex = row, edge = variable). Its faces, traced from the rotation system that the drawing's
directions give (displacements taken modulo the grid), are cycles; if they span the solutions of the
homogeneous system (every face satisfies every condition, and rank A + rank(faces) = number of
variables, both over GF(2)) then the solutions are x1 + sum_f sigma_f (face f), each reached
2^(F - rank) times. With t_f = (-1)^(sigma_f) and eta_b = (-1)^(x1_b),

    s_b = -eta_b t_f t_g   (f, g the faces on the two sides of edge b),

so the sum is 2^-(F - rank) e^c times an Ising partition function over the faces with couplings
K_fg = -h_b eta_b: for bit flips with probability p, h_b = -(1/2) log((1-p)/p), the Nishimori line.
x1 and the ranks come from the graph itself, in O(n): a spanning forest of the drawn graph (vertex
rows), a T-join of the vertex conditions along it (pushed from the leaves), then the k other
conditions (the toric code's two homology parities) fixed by cotree edges: cotree edge e closes
the cycle z_e = e + its tree path, other row j sees z_e with parity E_je + P_j(u) + P_j(v) (P the
parity of row j along the tree path from the root), and a k x (cotree) system over GF(2) picks the
cycles; rank A = (vertices - components) + rank of that system, and rank(faces) = F - components
of the dual graph (each edge lies on two faces). The solution is checked against every row. With
more than 64 other rows the dense Gaussian elimination over GF(2) (O(n^3)) does it all,
as it did for every size before (at L = 64 it took minutes: 4098 x 8192 rows by columns).
The faces are numbered row by row of the grid cells they sit in, so the dual of a torus grid is
again a torus grid.
"""

from __future__ import annotations

import sys

import math

import numpy as np
from scipy.sparse import coo_matrix

from search.derivation.runtime import _rt_merge
from search.derivation.actions import register

NAME = "dual_rbim"
SUMMARY = "parity-constrained sum over edge variables -> Ising model on the faces (random bonds from a reference solution)"
COST = "O(n^3)"
LABELS = ("rbim_nishimori",)
PRESERVES_ENERGY = False
ORDER = 20                 # where a derivation search tries it among the actions
FIRST_STEP = True  # tried on every state of a problem before it is a spin model
OPTION_SPACE: dict = {}
IMPORTS = """\
import math

import numpy as np
from scipy.sparse import coo_matrix
"""


def _act_dual_gf2(A, rhs=None):
    """(rank, a solution x of A x = rhs or None when there is none) over GF(2), A (rows, cols) 0/1."""
    rows, cols = A.shape
    M = np.concatenate([A, (np.zeros(rows) if rhs is None else rhs).reshape(-1, 1)], 1).astype(np.uint8) % 2
    pivots, r = [], 0
    for c in range(cols):
        if r == rows:
            break
        p = r + int(np.argmax(M[r:, c]))
        if M[p, c] == 0:
            continue
        M[[r, p]] = M[[p, r]]
        below = M[:, c].astype(bool)
        below[r] = False
        M[below] ^= M[r]
        pivots.append(c)
        r += 1
    if rhs is None:
        return r, None
    if np.any(M[r:, -1]):
        return r, None
    x = np.zeros(cols, dtype=np.uint8)
    x[pivots] = M[:r, -1]
    return r, x


def _act_dual_forest(V, u, v):
    """(BFS order, parent vertex, parent edge, components) of a spanning forest of the multigraph on
    V vertices with edges e = (u[e], v[e]) (-1: a root)."""
    m = len(u)
    tail = np.concatenate([u, v])
    by_tail = np.argsort(tail, kind="stable")
    ptr = np.searchsorted(tail[by_tail], np.arange(V + 1)).tolist()
    head = np.concatenate([v, u])[by_tail].tolist()
    eid = np.concatenate([np.arange(m), np.arange(m)])[by_tail].tolist()
    parent, pedge, seen, order, comps = [-1] * V, [-1] * V, [False] * V, [], 0
    for root in range(V):
        if seen[root]:
            continue
        comps += 1
        seen[root] = True
        order.append(root)
        i = len(order) - 1
        while i < len(order):
            x = order[i]
            i += 1
            for k in range(ptr[x], ptr[x + 1]):
                y = head[k]
                if not seen[y]:
                    seen[y], parent[y], pedge[y] = True, x, eid[k]
                    order.append(y)
    return np.array(order, dtype=np.int64), np.array(parent, dtype=np.int64), np.array(pedge, dtype=np.int64), comps


def _act_dual_push(forest, demand, N):
    """0/1 over the N edges: forest edges whose odd vertices are those with demand 1 (pushed from the
    leaves to the roots); None when some component has an odd demand."""
    order, parent, pedge, _ = forest
    d = (np.asarray(demand, dtype=np.int64) % 2).tolist()
    x = np.zeros(N, dtype=np.int64)
    for y in order[::-1].tolist():
        if d[y] and parent[y] >= 0:
            x[pedge[y]] ^= 1
            d[parent[y]] ^= 1
            d[y] = 0
    return None if any(d) else x


def _act_dual_graph_solve(V, ends, rhs_v, E, rhs_e, N):
    """(rank, x) of the system [vertex incidence of the graph (V vertices, edge e = ends[e]); E] x =
    [rhs_v; rhs_e] over GF(2) by the graph route of the module docstring (E dense k x N, k small);
    x None when there is no solution."""
    u, v = ends[:, 0], ends[:, 1]
    forest = _act_dual_forest(V, u, v)
    order, parent, pedge, comps = forest
    x = _act_dual_push(forest, rhs_v, N)
    if x is None:
        return V - comps, None
    k = E.shape[0]
    if k == 0:
        return V - comps, x
    P = np.zeros((k, V), dtype=np.int64)
    for y in order.tolist():
        if parent[y] >= 0:
            P[:, y] = P[:, parent[y]] ^ E[:, pedge[y]]
    tree = np.zeros(N, dtype=bool)
    tree[pedge[pedge >= 0]] = True
    cot = np.flatnonzero(~tree)
    EZ = (E[:, cot] + P[:, u[cot]] + P[:, v[cot]]) % 2
    rank_e, c = _act_dual_gf2(EZ, (np.asarray(rhs_e) - E @ x) % 2)
    if c is None:
        return V - comps + rank_e, None
    chosen = cot[c.astype(bool)]
    x[chosen] ^= 1
    demand = np.zeros(V, dtype=np.int64)
    np.add.at(demand, u[chosen], 1)
    np.add.at(demand, v[chosen], 1)
    return V - comps + rank_e, x ^ _act_dual_push(forest, demand, N)


def _act_dual_faces(u, v, coords, shape):
    """Face of each dart (dart 2e: u_e -> v_e, 2e + 1 back) of the graph drawn on the periodic grid."""
    m = len(u)
    d = coords[v] - coords[u]
    d = np.where(shape > 2, (d + shape // 2) % shape - shape // 2, d)
    angle = np.arctan2(-d[:, 0], d[:, 1])
    tail = np.stack([u, v], 1).ravel()
    ang = np.stack([angle, np.where(angle > 0, angle - np.pi, angle + np.pi)], 1).ravel()
    order = np.lexsort((ang, tail))
    st = tail[order]
    first = np.r_[True, st[1:] != st[:-1]]
    last = np.r_[st[1:] != st[:-1], True]
    group = np.maximum.accumulate(np.where(first, np.arange(2 * m), 0))
    succ = np.where(last, group, np.arange(2 * m) + 1)
    rho = np.empty(2 * m, dtype=np.int64)
    rho[order] = order[succ]
    phi = rho[np.arange(2 * m) ^ 1]
    face = np.full(2 * m, -1, dtype=np.int64)
    count = 0
    for start in range(2 * m):
        k = start
        while face[k] < 0:
            face[k] = count
            k = phi[k]
        if face[start] == count:
            count += 1
    return face, tail, count


def _act_dual_rbim(problem, options):
    """The Ising model on the faces whose log Z plus log_shift is the log of the constrained sum."""
    if problem.get("kind") != "constrained":
        raise ValueError("the dual step takes a parity-constrained sum")
    N = int(problem["n_vars"])
    h = np.zeros(N)
    for idx, w in problem["terms"]:
        if idx.shape[1] != 1:
            raise ValueError("the weight couples variables: they are not independent")
        np.add.at(h, idx[:, 0], w)
    fams = problem["constraints"]
    vertex = None
    for k, c in enumerate(fams):
        if c["coords"].shape[1] == 2 and np.array_equal(np.bincount(c["var"], minlength=N), np.full(N, 2)):
            vertex = k
            break
    if vertex is None:
        raise ValueError("no family of conditions gives every variable two rows on a grid (no graph to draw)")
    rows = sum(len(c["rhs"]) for c in fams)
    rhs, offset, at = np.zeros(rows, dtype=np.int64), 0, []
    for c in fams:
        at.append((offset + c["row_of"], c["var"]))
        rhs[offset:offset + len(c["rhs"])] = c["rhs"]
        offset += len(c["rhs"])
    A = coo_matrix((np.ones(sum(len(r) for r, _ in at), dtype=np.int64),
                    (np.concatenate([r for r, _ in at]), np.concatenate([q for _, q in at]))), shape=(rows, N)).tocsr()
    A.data %= 2
    A.eliminate_zeros()
    c = fams[vertex]
    by_var = np.argsort(c["var"], kind="stable")
    ends = c["row_of"][by_var].reshape(N, 2)
    v_lo = sum(len(f["rhs"]) for f in fams[:vertex])
    V = len(c["rhs"])
    others = np.r_[0:v_lo, v_lo + V:rows]
    if len(others) <= 64:          # the other rows go in as a dense k x (cotree edges) system
        rank_a, x1 = _act_dual_graph_solve(V, ends, rhs[v_lo:v_lo + V], A[others].toarray(), rhs[others], N)
        if x1 is not None and np.any((A @ x1 - rhs) % 2):
            raise ValueError("the graph route's solution misses a parity condition")
    else:
        rank_a, x1 = _act_dual_gf2(A.toarray(), rhs)
    if x1 is None:
        raise ValueError("no assignment satisfies the parity conditions")
    coords = np.asarray(c["coords"], dtype=np.int64)
    shape = coords.max(axis=0) + 1
    face, tail, F = _act_dual_faces(ends[:, 0], ends[:, 1], coords, shape)
    G = coo_matrix((np.ones(2 * N, dtype=np.int64), (face, np.repeat(np.arange(N), 2))), shape=(F, N)).tocsr()
    G.data %= 2
    G.eliminate_zeros()
    rank_g = F - _act_dual_forest(F, face[0::2], face[1::2])[3]   # each edge on two faces: a graph on the faces
    if np.any((A @ G.T).data % 2) or rank_a + rank_g != N:
        raise ValueError("the faces of the drawing do not generate the solutions of the conditions")
    # number the faces by the grid cell of their centroid (row by row) when that is a full grid
    first = np.zeros(F, dtype=np.int64)
    first[face[::-1]] = tail[::-1]
    d = coords[tail] - coords[first[face]]
    d = np.where(shape > 2, (d + shape // 2) % shape - shape // 2, d)
    centre = (coords[first] + np.stack([np.bincount(face, d[:, a], F) / np.bincount(face, minlength=F)
                                        for a in range(2)], 1)) % shape
    cell = np.floor(centre + 1e-9).astype(np.int64) % shape
    label = cell[:, 0] * shape[1] + cell[:, 1]
    gridded = F == int(shape[0] * shape[1]) and len(np.unique(label)) == F
    if not gridded:
        label = np.arange(F)
    eta = 1.0 - 2.0 * x1
    f1, f2 = label[face[0::2]], label[face[1::2]]
    K = -h * eta
    own = f1 == f2
    terms = _rt_merge([(np.stack([f1[~own], f2[~own]], 1), K[~own])])
    coords = np.stack(np.divmod(np.arange(F), int(shape[1])), 1) if gridded else None
    shift = float(problem["constant"]) + float(np.sum(K[own])) - (F - rank_g) * math.log(2.0)
    return {"n": int(F), "beta": 1.0, "terms": terms, "rank_one": [], "log_shift": shift, "energy_shift": 0.0,
            "positions": None, "coords": coords, "statistic": "log_z"}


FUNCTIONS = (_act_dual_gf2, _act_dual_forest, _act_dual_push, _act_dual_graph_solve, _act_dual_faces, _act_dual_rbim)
ENTRY = _act_dual_rbim


def admits(view) -> str | None:
    if view.kind != "constrained":
        return "not a parity-constrained sum"
    return view.reason(NAME)


def explain(view, options) -> dict:
    return {"faces": "traced from the drawing on the grid of the conditions", "couplings": "K_fg = -h_b eta_b",
            "reference": "x1 by Gaussian elimination over GF(2)"}


register(sys.modules[__name__])
