"""Structural invariants of a model and of a task's family of models across sizes.

``analyse(model)`` reads the interaction graph (spins are nodes; a k-spin term joins its
spins pairwise, as in ``IsingModel.graph``) and the IR, and returns a flat :class:`Structure`.
``tasks.family.family_structure(task, sizes)`` analyses one instance per size and says how the
widths grow.

Everything here is cheap by design: sparse scipy graph routines for components, orders and
the gauge test, networkx only for planarity and treewidth heuristics on small graphs, and
exact shortcuts for the structures the tasks are made of (chains, forests, nearest-neighbour
lattices, one Mattis rank-one block), so a 10^5-spin chain or a 64 x 64 grid costs
milliseconds. Widths are upper bounds (a width of a layout or an elimination order).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np
from networkx.algorithms.approximation import treewidth_min_degree, treewidth_min_fill_in
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components, reverse_cuthill_mckee

from tasks.model import IsingModel, Lattice
from tasks.rotation_system import drawing_is_planar
from tasks.term_independence import peels_to_nothing

#: above these sizes the networkx routines (pure Python) are skipped
PLANARITY_MAX_NODES = 2048
MIN_DEGREE_MAX_NODES = 600
MIN_FILL_IN_MAX_NODES = 300
GREEDY_MAX_NODES = 300
#: lattices larger than this skip the heuristics (their sweeps give the widths)
SMALL_LATTICE = 64
#: rank-one blocks are expanded to a dense coupling matrix only up to this n
DENSE_MAX_N = 2048
#: how many distinct coupling magnitudes a Structure lists
MAX_LISTED_MAGNITUDES = 8


@dataclass(frozen=True)
class Structure:
    """Invariants of one model. Widths are upper bounds; None means 'not determined'."""

    n: int                          # spins
    n_couplings: int                # distinct non-zero pair couplings (rank-one blocks expanded)
    n_edges: int                    # edges of the interaction graph (pairs and k-spin cliques)
    max_order: int                  # largest term order k (2 for pair models, 0 if no terms)
    has_fields: bool                # some 1-spin term is non-zero
    n_components: int               # connected components of the interaction graph
    max_degree: int
    regular_degree: int | None      # d when every spin has degree d, else None
    is_chain: bool                  # max degree <= 2: every component a path, a cycle or a point
    is_forest: bool                 # no cycles
    is_tree: bool                   # forest with one component
    planar: bool | None             # None: too large to test and no shortcut applies
    lattice_shape: tuple[int, int] | None   # (rows, cols) from model.lattice
    boundary: str | None            # "open" | "periodic" | "mixed" along dimensions >= 3, None without lattice
    nn_lattice: bool                # pairwise, and every edge joins lattice nearest neighbours
    torus: bool                     # nn_lattice on a lattice periodic in both directions
    treewidth: int                  # upper bound (exact for forests, chains, cliques)
    pathwidth: int                  # upper bound: vertex separation of the best order tried
    coupling_magnitudes: tuple[float, ...]  # smallest distinct |J| (at most MAX_LISTED_MAGNITUDES)
    n_coupling_magnitudes: int      # how many distinct |J| there are
    uniform_magnitude: bool         # one |J| for every pair coupling
    uniform_couplings: bool         # every pair coupling equal (sign included)
    gauge_uniform: bool             # some s_i -> g_i s_i makes every term of order >= 2 positive
    rank_one: bool                  # Mattis: one rank-one block with a +-1 vector, no terms of order >= 2
    #: the terms (fields, pairs, k-spin) are independent: tau_k = prod_{i in S_k} s_i are free variables
    independent_terms: bool = False
    #: with fields: the graph plus one ghost spin joined to every spin with a field is planar (the fields
    #: lie on one face, so a Pfaffian still applies); None without fields or when too large to test
    ghost_planar: bool | None = None
    #: the gauge g in {-1, +1}^n (int8) when gauge_uniform, else None
    gauge: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def frustrated(self) -> bool:
        return not self.gauge_uniform


# -- graph pieces -------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Terms:
    """The IR split by order, read without Python work per pair term."""

    max_order: int
    has_fields: bool
    pair_edges: np.ndarray      # (m, 2) i < j, sorted, merged, zero couplings dropped (rank-one expanded)
    J: np.ndarray               # (m,)
    higher: list[tuple[tuple[int, ...], float]]  # merged terms of order >= 3 with non-zero weight


def _read_terms(model: IsingModel) -> _Terms:
    n, terms, w = model.n, model.terms, model.weights
    lens = np.fromiter(map(len, terms), dtype=np.int64, count=len(terms))
    max_order = int(lens.max()) if len(lens) else 0
    ones = np.flatnonzero(lens == 1)
    h = np.bincount([terms[k][0] for k in ones], weights=w[ones], minlength=n) if len(ones) else np.zeros(n)
    if model.rank_one:
        edges, J = model.couplings            # dense expansion, only reached for n <= DENSE_MAX_N
    else:
        two = np.flatnonzero(lens == 2)
        ij = np.array([terms[k] for k in two], dtype=np.int64).reshape(-1, 2)
        lo, hi = np.minimum(ij[:, 0], ij[:, 1]), np.maximum(ij[:, 0], ij[:, 1])
        key, inv = np.unique(lo * n + hi, return_inverse=True)
        J = np.bincount(inv.ravel(), weights=w[two], minlength=len(key))
        keep = J != 0.0
        edges, J = np.stack(np.divmod(key[keep], n), 1).astype(np.int64).reshape(-1, 2), J[keep]
    merged: dict[tuple[int, ...], float] = {}
    for k in np.flatnonzero(lens >= 3):
        t = tuple(sorted(terms[k]))
        merged[t] = merged.get(t, 0.0) + float(w[k])
    higher = [(t, v) for t, v in merged.items() if v != 0.0]
    return _Terms(max_order, bool(np.any(h != 0.0)), edges, J, higher)


def _hyper_edges(higher) -> np.ndarray:
    """(m, 2) pairs joined by terms of order >= 3."""
    pairs = [(t[a], t[b]) for t, _ in higher for a in range(len(t)) for b in range(a + 1, len(t))]
    return np.asarray(pairs, dtype=np.int64).reshape(-1, 2)


def _unique_edges(n: int, edges: np.ndarray) -> np.ndarray:
    """Sorted unique undirected pairs (i < j)."""
    if len(edges) == 0:
        return np.zeros((0, 2), dtype=np.int64)
    lo, hi = np.minimum(edges[:, 0], edges[:, 1]), np.maximum(edges[:, 0], edges[:, 1])
    key = np.unique(lo * n + hi)
    return np.stack(np.divmod(key, n), 1)


def _components(n: int, edges: np.ndarray) -> tuple[int, np.ndarray]:
    adj = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n)).tocsr()
    return connected_components(adj, directed=False)


def vertex_separation(n: int, edges: np.ndarray, order: np.ndarray) -> int:
    """Vertex separation of the linear order ``order`` (order[k] = k-th vertex); an upper
    bound on the pathwidth (they are equal for the best order, Kinnersley 1992)."""
    if len(edges) == 0:
        return 0
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    last = pos.copy()
    np.maximum.at(last, edges[:, 0], pos[edges[:, 1]])
    np.maximum.at(last, edges[:, 1], pos[edges[:, 0]])
    diff = np.zeros(n + 1, dtype=np.int64)
    np.add.at(diff, pos, 1)
    np.add.at(diff, last, -1)
    return int(np.cumsum(diff)[:n].max())


def greedy_layout(n: int, edges: np.ndarray, start: int) -> np.ndarray:
    """A linear order grown from ``start``: each step places the frontier vertex that leaves the
    fewest placed vertices with unplaced neighbours (ties: fewest unplaced neighbours)."""
    nbrs: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges.tolist():
        nbrs[a].append(b)
        nbrs[b].append(a)
    left = [len(x) for x in nbrs]                  # unplaced neighbours of each vertex
    placed = [False] * n
    frontier: set[int] = set()
    unplaced = set(range(n))
    order, v = [], start
    while True:
        order.append(v)
        placed[v] = True
        unplaced.discard(v)
        frontier.discard(v)
        for u in nbrs[v]:
            left[u] -= 1
            if not placed[u]:
                frontier.add(u)
        if not unplaced:
            return np.asarray(order, dtype=np.int64)
        v = min(frontier or unplaced, key=lambda x: (
            (left[x] > 0) - sum(1 for u in nbrs[x] if placed[u] and left[u] == 1), left[x], x))


def _orders(n: int, edges: np.ndarray, lattice: Lattice | None, greedy: bool = True,
            positions: np.ndarray | None = None) -> list[np.ndarray]:
    """Linear orders worth trying: natural (row-major), column-major, sweeps along x and y of a
    given embedding (a geometric graph's separators are straight lines, width ~ sqrt(n)), reverse
    Cuthill-McKee, and greedy layouts from a few starts on small graphs."""
    orders = [np.arange(n)]
    if lattice is not None and lattice.rows > 1 and lattice.cols > 1:
        orders.append(np.arange(n).reshape(lattice.rows, lattice.cols).T.ravel())
    if positions is not None:
        orders += [np.argsort(positions[:, 0], kind="stable"), np.argsort(positions[:, 1], kind="stable")]
    if len(edges):
        adj = coo_matrix((np.ones(2 * len(edges)), (np.r_[edges[:, 0], edges[:, 1]], np.r_[edges[:, 1], edges[:, 0]])),
                         shape=(n, n)).tocsr()
        rcm = np.asarray(reverse_cuthill_mckee(adj, symmetric_mode=True), dtype=np.int64)
        orders.append(rcm)
        if greedy and n <= GREEDY_MAX_NODES:
            deg = np.bincount(edges.ravel(), minlength=n)
            starts = {int(rcm[0]), int(rcm[-1]), int(np.argmin(deg)), 0}
            orders += [greedy_layout(n, edges, s) for s in sorted(starts)]
    return orders


def _nx_graph(n: int, edges: np.ndarray) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges.tolist())
    return g


def _lattice_nn(lat: Lattice, edges: np.ndarray) -> tuple[bool, bool]:
    """(every edge joins lattice nearest neighbours, and every such pair is an edge); edges unique."""
    (ri, ci), (rj, cj) = np.divmod(edges[:, 0], lat.cols), np.divmod(edges[:, 1], lat.cols)
    dr, dc = np.abs(ri - rj), np.abs(ci - cj)
    along_row = (dr == 0) & ((dc == 1) | (lat.periodic_cols & (dc == lat.cols - 1)))
    along_col = (dc == 0) & ((dr == 1) | (lat.periodic_rows & (dr == lat.rows - 1)))
    nn = bool(np.all(along_row | along_col))

    def bonds(size, wrap):  # nearest-neighbour pairs per line of ``size`` sites
        return size if wrap and size >= 3 else max(size - 1, 0)

    expected = lat.rows * bonds(lat.cols, lat.periodic_cols) + lat.cols * bonds(lat.rows, lat.periodic_rows)
    return nn, nn and len(edges) == expected


def _boundary(lat: Lattice | None) -> str | None:
    if lat is None:
        return None
    flags = [wrap for size, wrap in ((lat.rows, lat.periodic_rows), (lat.cols, lat.periodic_cols)) if size >= 3]
    if not flags or not any(flags):
        return "open"
    return "periodic" if all(flags) else "mixed"


# -- signs and gauges -----------------------------------------------------------------------------

def pair_gauge(n: int, edges: np.ndarray, J: np.ndarray) -> np.ndarray | None:
    """g in {-1,+1}^n with g_i g_j J_ij > 0 on every edge, or None if some cycle carries an odd
    number of negative couplings (frustration). Vectorised: in the double cover with vertices
    (i, +) and (i, -), a bond of sign s joins (i, a) to (j, a s); the signs are balanced exactly
    when no (i, +) shares a component with (i, -) (Harary 1953)."""
    if len(edges) == 0:
        return np.ones(n, dtype=np.int8)
    i, j = edges[:, 0], edges[:, 1]
    neg = (J < 0).astype(np.int64) * n
    rows = np.r_[i, i + n]
    cols = np.r_[j + neg, j + n - neg]
    _, lab = connected_components(coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(2 * n, 2 * n)),
                                  directed=False)
    if np.any(lab[:n] == lab[n:]):
        return None
    _, comp = _components(n, edges)
    _, root_index = np.unique(comp, return_index=True)
    root = root_index[comp]           # the smallest vertex of each vertex's component
    return np.where(lab[:n] == lab[root], 1, -1).astype(np.int8)


def term_gauge(n: int, terms: list[tuple[tuple[int, ...], float]]) -> np.ndarray | None:
    """The same for terms of any order: solve prod_{i in S} g_i = sign(w_S) over GF(2)
    (Gaussian elimination on Python-int bitsets); None when the system is inconsistent."""
    pivots: dict[int, tuple[int, int]] = {}
    for t, w in terms:
        mask, rhs = 0, int(w < 0)
        for i in t:
            mask ^= 1 << i
        while mask:
            p = mask.bit_length() - 1
            if p not in pivots:
                pivots[p] = (mask, rhs)
                break
            pm, pr = pivots[p]
            mask, rhs = mask ^ pm, rhs ^ pr
        if mask == 0 and rhs:
            return None
    x = 0
    for p in sorted(pivots):          # every other bit of a pivot row is lower than its pivot
        pm, pr = pivots[p]
        if pr ^ (bin(pm & x).count("1") & 1):
            x |= 1 << p
    return np.array([-1 if (x >> i) & 1 else 1 for i in range(n)], dtype=np.int8)


def _magnitudes(absJ: np.ndarray) -> tuple[tuple[float, ...], int]:
    u = np.unique(absJ)
    return tuple(float(v) for v in u[:MAX_LISTED_MAGNITUDES]), len(u)


# -- analysis -------------------------------------------------------------------------------------

def _mattis_block(model: IsingModel) -> bool:
    """Exactly one rank-one block and no terms of order >= 2 (fields allowed)."""
    return len(model.rank_one) == 1 and all(len(t) <= 1 for t in model.terms)


def _analyse_rank_one(model: IsingModel) -> Structure:
    """One block a u u^T: the complete graph on the support of u, analysed in closed form."""
    (u, a), = model.rank_one
    support = np.flatnonzero(u) if a != 0 else np.zeros(0, dtype=np.int64)
    k, n = len(support), model.n
    m = k * (k - 1) // 2
    if a > 0 or k <= 2:               # a u_i u_j > 0 after s_i -> sign(u_i) s_i (a < 0: triangles frustrate)
        gauge = np.where(u < 0, -1, 1).astype(np.int8)
        if a < 0 and k == 2:
            gauge[support[1]] *= -1
    else:
        gauge = None
    vals, counts = np.unique(np.abs(u[support]), return_counts=True)
    ia, ib = np.triu_indices(len(vals), 0)
    occurs = (ia != ib) | (counts[ia] >= 2)          # |a| v_a v_b is a coupling of two distinct spins
    listed, count = _magnitudes(abs(a) * vals[ia[occurs]] * vals[ib[occurs]])
    n_comp = n - k + (1 if k else 0)
    return Structure(
        n=n, n_couplings=m, n_edges=m, max_order=2 if m else model.max_order, has_fields=model.has_fields,
        n_components=n_comp, max_degree=max(k - 1, 0),
        regular_degree=k - 1 if k == n else (0 if k <= 1 else None),
        is_chain=k <= 3, is_forest=k <= 2, is_tree=k <= 2 and n_comp == 1, planar=k <= 4,
        lattice_shape=(model.lattice.rows, model.lattice.cols) if model.lattice else None,
        boundary=_boundary(model.lattice), nn_lattice=False, torus=False,
        treewidth=max(k - 1, 0), pathwidth=max(k - 1, 0),
        coupling_magnitudes=listed, n_coupling_magnitudes=count, uniform_magnitude=count <= 1,
        uniform_couplings=count <= 1 and (k <= 2 or len(np.unique(np.sign(u[support]))) == 1),
        gauge_uniform=gauge is not None, rank_one=bool(np.all(np.abs(u) == 1.0)), gauge=gauge,
    )


def analyse(model: IsingModel) -> Structure:
    """Structural invariants of ``model``; see :class:`Structure` for each field."""
    if _mattis_block(model):
        return _analyse_rank_one(model)
    if model.rank_one and model.n > DENSE_MAX_N:
        raise ValueError(f"rank-one blocks mixed with other terms are analysed only up to n={DENSE_MAX_N}")
    n = model.n
    ir = _read_terms(model)
    pair_edges, J = ir.pair_edges, ir.J
    edges = _unique_edges(n, np.concatenate([pair_edges, _hyper_edges(ir.higher)])) if ir.higher else pair_edges
    m = len(edges)
    deg = np.bincount(edges.ravel(), minlength=n)
    n_comp, _ = _components(n, edges)
    max_deg = int(deg.max()) if n else 0
    chain = max_deg <= 2
    forest = m == n - n_comp
    lat = model.lattice
    nn, full = _lattice_nn(lat, edges) if lat is not None and ir.max_order <= 2 else (False, False)
    nn = nn and lat is not None
    torus = nn and lat.torus

    # planarity: exact shortcuts first, networkx on small graphs, Euler's bound m <= 3n - 6 beyond
    if chain or forest or (nn and not torus):
        planar = True                 # paths, cycles, trees; subgraphs of an open or cylindrical grid
    elif torus and full and lat.rows >= 3 and lat.cols >= 3:
        planar = False                # C_R x C_C, R, C >= 3, is toroidal, not planar (genus 1)
    elif n <= PLANARITY_MAX_NODES:
        planar = bool(nx.check_planarity(_nx_graph(n, edges))[0])
    elif m > 3 * n - 6:
        planar = False
    else:                             # a given drawing whose rotation passes Euler's formula proves it
        planar = True if model.positions is not None and drawing_is_planar(n, edges, model.positions) else None

    # widths: exact for forests and chains, else the best of layouts and elimination heuristics
    if m == 0:
        tw = pw = 0
    elif chain:
        tw = pw = 1 if forest else 2
    else:
        # on nearest-neighbour lattices the row- and column-major sweeps are already (near) optimal
        heuristics = not nn or n <= SMALL_LATTICE
        pw = min(vertex_separation(n, edges, o) for o in _orders(n, edges, lat, greedy=heuristics,
                                                                positions=model.positions))
        tw = 1 if forest else pw                    # tw <= pw
        if not forest and heuristics and n <= MIN_DEGREE_MAX_NODES:
            g = _nx_graph(n, edges)
            tw = min(tw, treewidth_min_degree(g)[0])
            if n <= MIN_FILL_IN_MAX_NODES:
                tw = min(tw, treewidth_min_fill_in(g)[0])

    # signs
    if ir.higher:
        gauge = term_gauge(n, [(tuple(e), float(w)) for e, w in zip(pair_edges.tolist(), J)] + ir.higher)
    else:
        gauge = pair_gauge(n, pair_edges, J)
    listed, count = _magnitudes(np.abs(J))
    fields = np.flatnonzero(model.fields) if ir.has_fields else np.zeros(0, dtype=np.int64)
    independent = not model.rank_one and peels_to_nothing(
        n, [(int(i),) for i in fields] + [tuple(e) for e in pair_edges.tolist()] + [t for t, _ in ir.higher])
    ghost_planar = None
    if ir.has_fields and planar and ir.max_order <= 2 and n < PLANARITY_MAX_NODES:
        ghost = _nx_graph(n, edges)
        ghost.add_edges_from((int(i), n) for i in fields)
        ghost_planar = bool(nx.check_planarity(ghost)[0])
    return Structure(
        n=n, n_couplings=len(J), n_edges=m, max_order=ir.max_order, has_fields=ir.has_fields,
        n_components=int(n_comp), max_degree=max_deg,
        regular_degree=max_deg if n and int(deg.min()) == max_deg else None,
        is_chain=chain, is_forest=forest, is_tree=forest and n_comp == 1, planar=planar,
        lattice_shape=(lat.rows, lat.cols) if lat is not None else None, boundary=_boundary(lat),
        nn_lattice=nn, torus=torus, treewidth=int(tw), pathwidth=int(pw),
        coupling_magnitudes=listed, n_coupling_magnitudes=count, uniform_magnitude=count <= 1,
        uniform_couplings=len(J) == 0 or bool(np.all(J == J[0])), gauge_uniform=gauge is not None,
        rank_one=False, independent_terms=independent, gauge=gauge, ghost_planar=ghost_planar,
    )
