"""Structural invariants (tasks/structure.py) against networkx, brute force over gauges and
orders, and the known structure of the six StatMechBench-v0 tasks."""

import itertools
import time

import networkx as nx
import numpy as np
import pytest

from tasks.model import IsingModel, Lattice
from tasks.registry import get_task
from tasks.family import family_structure, width_growth
from tasks.structure import analyse, pair_gauge, term_gauge, vertex_separation


def task_model(task_id, n, seed=0, **override):
    task = get_task(task_id)
    params = {**task.probe_params(n, seed, 0), **override}
    return task.to_model(params, n)


def nx_planar(model):
    return nx.check_planarity(model.graph())[0]


def graph_model(g: nx.Graph, J=None, beta=0.7, **kw) -> IsingModel:
    edges = np.array(sorted(tuple(sorted(e)) for e in g.edges()), dtype=np.int64).reshape(-1, 2)
    return IsingModel.from_arrays(g.number_of_nodes(), beta, edges, 1.0 if J is None else J, **kw)


# -- brute-force references -------------------------------------------------------------------------

def brute_gauge_exists(n, terms):
    """Is there g in {-1,1}^n with w_S prod_{i in S} g_i > 0 for every term?"""
    for g in itertools.product([-1, 1], repeat=n):
        if all(w * np.prod([g[i] for i in t]) > 0 for t, w in terms):
            return True
    return False


def naive_vertex_separation(n, edges, order):
    pos = {v: k for k, v in enumerate(order)}
    nbrs = {v: set() for v in range(n)}
    for a, b in edges:
        nbrs[a].add(b)
        nbrs[b].add(a)
    best = 0
    for i in range(n):
        best = max(best, sum(1 for v in range(n) if pos[v] <= i and any(pos[u] > i for u in nbrs[v])))
    return best


def _subset_dp(n, edges, cost):
    """min over orderings of the max over prefixes S (with the vertex v added last) of cost(S, v)."""
    nbr = [0] * n
    for a, b in edges:
        nbr[a] |= 1 << b
        nbr[b] |= 1 << a
    best = {0: 0}
    for size in range(1, n + 1):
        for combo in itertools.combinations(range(n), size):
            S = sum(1 << v for v in combo)
            best[S] = min(max(best[S & ~(1 << v)], cost(nbr, S, v)) for v in combo)
    return best[(1 << n) - 1]


def exact_pathwidth(n, edges):
    """Vertex separation number: prefixes S, |{u in S with a neighbour outside S}| (Kinnersley)."""
    full = (1 << n) - 1
    return _subset_dp(n, edges, lambda nbr, S, v: sum(1 for u in range(n) if S >> u & 1 and nbr[u] & (full & ~S)))


def exact_treewidth(n, edges):
    """Bodlaender et al. (2006): eliminating v after the set S - v costs |Q(S - v, v)|, the vertices
    outside S reachable from v through S - v."""
    def q(nbr, S, v):
        inside, seen, stack, out = S & ~(1 << v), 1 << v, [v], 0
        while stack:
            x = stack.pop()
            for u in range(n):
                if nbr[x] >> u & 1 and not seen >> u & 1:
                    seen |= 1 << u
                    if inside >> u & 1:
                        stack.append(u)
                    elif not S >> u & 1:
                        out += 1
        return out
    return _subset_dp(n, edges, q)


def random_graph(rng, n, p):
    g = nx.gnp_random_graph(n, p, seed=int(rng.integers(2**31)))
    return g


# -- the six tasks -------------------------------------------------------------------------------------

@pytest.mark.parametrize("task_id", ["P01", "P02"])
def test_chains_are_trees_of_width_one(task_id):
    for n in (6, 10, 100, 1000):
        s = analyse(task_model(task_id, n))
        assert (s.n, s.n_couplings, s.max_order, s.n_components) == (n, n - 1, 2, 1)
        assert s.is_chain and s.is_forest and s.is_tree and s.planar
        assert (s.treewidth, s.pathwidth, s.max_degree, s.regular_degree) == (1, 1, 2, None)
        assert s.boundary == "open" and s.nn_lattice and not s.torus
        assert s.uniform_couplings and s.gauge_uniform and not s.rank_one
        assert s.has_fields == (task_id == "P02")


def test_chain_of_a_hundred_thousand_spins_is_fast():
    model = task_model("P01", 100_000)
    start = time.perf_counter()
    s = analyse(model)
    assert time.perf_counter() - start < 3.0          # about 0.2 s unloaded
    assert s.is_tree and s.pathwidth == 1 and s.planar


@pytest.mark.parametrize("L", [3, 4, 5, 6])
def test_torus_is_not_planar_and_has_pathwidth_about_2L(L):
    model = task_model("P03", L * L)
    s = analyse(model)
    assert s.torus and s.nn_lattice and s.boundary == "periodic" and s.regular_degree == 4
    assert s.planar is False and nx_planar(model) is False
    assert L + 1 <= s.pathwidth <= 2 * L and s.treewidth <= s.pathwidth
    assert s.uniform_couplings and s.gauge_uniform


def test_large_torus_uses_the_sweep():
    s = analyse(task_model("P03", 64 * 64))
    assert 127 <= s.pathwidth <= 128 and s.planar is False and s.torus


@pytest.mark.parametrize("L", [2, 3, 5, 8, 16, 64])
def test_open_grid_is_planar_with_pathwidth_L(L):
    model = task_model("P04", L * L)
    s = analyse(model)
    assert s.planar and s.boundary == "open" and s.nn_lattice and not s.torus
    assert s.n_couplings == 2 * L * (L - 1) and s.max_degree == (4 if L > 2 else 2)
    assert s.pathwidth == L and s.treewidth <= L
    if L <= 8:
        assert s.planar == nx_planar(model)
    if L >= 16:
        assert s.treewidth == L                      # the grid's treewidth is exactly L


def test_planar_glass_is_frustrated_unless_all_ferromagnetic():
    L = 8
    typical = analyse(task_model("P04", L * L, seed=0))
    assert not typical.gauge_uniform and typical.frustrated and typical.gauge is None
    assert typical.uniform_magnitude and not typical.uniform_couplings and typical.coupling_magnitudes == (1.0,)
    ones = {"Jh": np.ones((L, L - 1)).tolist(), "Jv": np.ones((L - 1, L)).tolist()}
    ferro = analyse(task_model("P04", L * L, **ones))
    assert ferro.gauge_uniform and ferro.uniform_couplings and np.all(ferro.gauge == 1)


def test_grid_frustration_matches_plaquette_parity():
    """On the open grid the faces generate the cycle space: frustrated iff some plaquette has an
    odd number of negative bonds."""
    rng = np.random.default_rng(5)
    for _ in range(60):
        L = int(rng.integers(2, 6))
        p = float(rng.uniform(0, 0.3))
        Jh = np.where(rng.random((L, L - 1)) < p, -1.0, 1.0)
        Jv = np.where(rng.random((L - 1, L)) < p, -1.0, 1.0)
        s = analyse(task_model("P04", L * L, Jh=Jh.tolist(), Jv=Jv.tolist()))
        plaquettes = Jh[:-1, :] * Jh[1:, :] * Jv[:, :-1] * Jv[:, 1:]
        assert s.gauge_uniform == bool(np.all(plaquettes > 0))


@pytest.mark.parametrize("n", [6, 10, 12, 100])
def test_mattis_is_rank_one_gauge_uniform_and_dense(n):
    model = task_model("P05", n)
    s = analyse(model)
    xi = np.asarray(get_task("P05").probe_params(n, 0, 0)["xi"])
    assert s.rank_one and s.gauge_uniform and not s.has_fields
    assert np.all(s.gauge * xi == s.gauge[0] * xi[0])       # the gauge is +-xi
    assert s.n_couplings == n * (n - 1) // 2 and s.regular_degree == n - 1
    assert s.treewidth == s.pathwidth == n - 1 and s.planar is False
    assert s.uniform_magnitude and s.coupling_magnitudes == (1.0,)


def test_mattis_shortcut_agrees_with_the_expanded_graph():
    rng = np.random.default_rng(2)
    for trial in range(12):
        n = int(rng.integers(2, 9))
        u = rng.choice([-1.0, 1.0, 0.0, 2.0], size=n) if trial % 3 == 2 else rng.choice([-1.0, 1.0], size=n)
        a = float(rng.choice([1.0, -0.5]))
        h = rng.normal(size=n) if trial % 2 else None
        block = IsingModel.from_arrays(n, 0.4, h=h, rank_one=((u, a),))
        edges, J = block.couplings
        expanded = IsingModel.from_arrays(n, 0.4, edges, J, h=h)
        s, e = analyse(block), analyse(expanded)
        for name in ("n_couplings", "n_edges", "has_fields", "n_components", "max_degree", "regular_degree",
                     "is_chain", "is_forest", "is_tree", "planar", "treewidth", "pathwidth", "uniform_magnitude",
                     "n_coupling_magnitudes", "coupling_magnitudes", "uniform_couplings", "gauge_uniform"):
            assert getattr(s, name) == getattr(e, name), (name, u, a)
        if s.gauge_uniform:
            assert np.all(J * s.gauge[edges[:, 0]] * s.gauge[edges[:, 1]] > 0)


def test_random_regular_glass():
    for n in (8, 40, 150):
        model = task_model("P06", n)
        s = analyse(model)
        assert s.regular_degree == 3 and s.n_couplings == 3 * n // 2 and s.boundary is None
        assert s.planar == nx_planar(model)
        assert not s.nn_lattice and s.uniform_magnitude and s.treewidth <= s.pathwidth


# -- hand-built graphs ---------------------------------------------------------------------------------

def test_tree():
    rng = np.random.default_rng(1)
    for n in (2, 7, 40, 300):
        g = nx.random_labeled_tree(n, seed=int(rng.integers(2**31)))
        J = rng.choice([-1.0, 1.0], size=n - 1) * rng.uniform(0.5, 2, size=n - 1)
        model = graph_model(g, J)
        s = analyse(model)
        assert s.is_tree and s.is_forest and s.planar and s.treewidth == 1 and s.pathwidth >= 1
        assert s.gauge_uniform                     # a tree has no cycles: every sign pattern is a gauge
        edges, JJ = model.couplings
        assert np.all(JJ * s.gauge[edges[:, 0]] * s.gauge[edges[:, 1]] > 0)
        assert s.uniform_magnitude == (n == 2) and s.n_coupling_magnitudes == n - 1


@pytest.mark.parametrize("n_negative", [0, 1, 2, 3, 4])
def test_cycle_frustrated_iff_odd_number_of_negative_bonds(n_negative):
    n = 7
    J = np.ones(n)
    J[:n_negative] = -1.0
    model = IsingModel.from_arrays(n, 1.0, [(i, (i + 1) % n) for i in range(n)], J)
    s = analyse(model)
    assert s.is_chain and not s.is_forest and s.treewidth == 2 and s.pathwidth == 2 and s.planar
    assert s.gauge_uniform == (n_negative % 2 == 0)


def test_complete_and_bipartite_graphs():
    for g, planar in ((nx.complete_graph(4), True), (nx.complete_graph(5), False),
                      (nx.complete_bipartite_graph(3, 3), False), (nx.petersen_graph(), False)):
        s = analyse(graph_model(g))
        assert s.planar is planar
    s = analyse(graph_model(nx.complete_graph(5)))
    assert s.treewidth == s.pathwidth == 4 and s.regular_degree == 4
    # all-antiferromagnetic: gauge-equivalent to ferromagnetic on bipartite graphs only
    assert analyse(graph_model(nx.complete_bipartite_graph(3, 3), J=-1.0)).gauge_uniform
    assert not analyse(graph_model(nx.complete_graph(4), J=-1.0)).gauge_uniform


def test_three_spin_term():
    model = IsingModel(n=4, terms=((0, 1, 2), (2, 3)), weights=np.array([-0.7, 1.0]), beta=1.0)
    s = analyse(model)
    assert s.max_order == 3 and s.n_couplings == 1 and s.n_edges == 4 and not s.nn_lattice
    assert s.gauge_uniform and s.gauge[0] * s.gauge[1] * s.gauge[2] == -1 and s.gauge[2] * s.gauge[3] == 1
    frustrated = IsingModel(n=4, terms=((0, 1, 2), (0, 1, 3), (2, 3)), weights=np.array([-1.0, 1.0, 1.0]), beta=1.0)
    assert not analyse(frustrated).gauge_uniform
    # a plaquette on a lattice is not a nearest-neighbour pair model
    plaq = IsingModel(n=4, terms=((0, 1, 3, 2),), weights=np.array([1.0]), beta=1.0, lattice=Lattice(2, 2))
    s = analyse(plaq)
    assert s.max_order == 4 and not s.nn_lattice and s.treewidth == 3 and s.planar


def test_gauges_against_brute_force():
    rng = np.random.default_rng(11)
    for trial in range(80):
        n = int(rng.integers(2, 8))
        if trial % 2:
            g = random_graph(rng, n, float(rng.uniform(0.2, 0.9)))
            terms = [(tuple(e), float(rng.choice([-1, 1]) * rng.uniform(0.5, 1.5))) for e in g.edges()]
            model = graph_model(g, J=[w for _, w in terms]) if terms else None
            got = pair_gauge(n, np.array([t for t, _ in terms], dtype=np.int64).reshape(-1, 2),
                             np.array([w for _, w in terms]))
        else:
            terms = {}
            for _ in range(int(rng.integers(1, 7))):
                k = int(rng.integers(2, min(n, 4) + 1))
                terms[tuple(sorted(rng.choice(n, size=k, replace=False).tolist()))] = float(rng.choice([-1, 1]))
            terms = list(terms.items())
            model = IsingModel(n=n, terms=tuple(t for t, _ in terms), weights=np.array([w for _, w in terms]), beta=1.0)
            got = term_gauge(n, terms)
        expected = brute_gauge_exists(n, terms)
        assert (got is not None) == expected
        if got is not None:
            assert all(w * np.prod(got[list(t)]) > 0 for t, w in terms)
        if model is not None:
            assert analyse(model).gauge_uniform == expected


def test_exact_width_references_on_known_graphs():
    for g, tw, pw in ((nx.path_graph(6), 1, 1), (nx.cycle_graph(7), 2, 2), (nx.complete_graph(5), 4, 4),
                      (nx.grid_2d_graph(3, 3), 3, 3), (nx.star_graph(5), 1, 1), (nx.petersen_graph(), 4, 5)):
        g = nx.convert_node_labels_to_integers(g)
        edges = list(g.edges())
        assert exact_treewidth(g.number_of_nodes(), edges) == tw
        assert exact_pathwidth(g.number_of_nodes(), edges) == pw


def test_vertex_separation_and_widths_against_brute_force():
    rng = np.random.default_rng(3)
    for _ in range(40):
        n = int(rng.integers(3, 9))
        g = random_graph(rng, n, float(rng.uniform(0.3, 0.8)))
        edges = np.array(sorted(tuple(sorted(e)) for e in g.edges()), dtype=np.int64).reshape(-1, 2)
        order = rng.permutation(n)
        assert vertex_separation(n, edges, order) == naive_vertex_separation(n, edges.tolist(), order.tolist())
        if len(edges) == 0:
            continue
        s = analyse(graph_model(g))
        pw, tw = exact_pathwidth(n, edges.tolist()), exact_treewidth(n, edges.tolist())
        assert s.pathwidth >= pw and s.treewidth >= tw and s.treewidth <= s.pathwidth
        assert s.pathwidth <= pw + 1 and s.treewidth <= tw + 1    # small graphs: the heuristics are (nearly) exact


def test_lattice_flags():
    # a cylinder: periodic rows only, planar (an annulus)
    L = 5
    r, c = np.divmod(np.arange(L * L), L)
    right = np.stack([r * L + c, r * L + c + 1], 1)[c < L - 1]
    down = np.stack([r * L + c, ((r + 1) % L) * L + c], 1)
    cyl = IsingModel.from_arrays(L * L, 1.0, np.concatenate([right, down]), 1.0, lattice=Lattice(L, L, True, False))
    s = analyse(cyl)
    assert s.boundary == "mixed" and s.nn_lattice and not s.torus and s.planar and nx_planar(cyl)
    # a diagonal bond is not a nearest-neighbour pair; the check falls back to networkx
    diag = IsingModel.from_arrays(L * L, 1.0, np.concatenate([right, down, [[0, L + 1]]]), 1.0,
                                  lattice=Lattice(L, L, True, False))
    s = analyse(diag)
    assert not s.nn_lattice and s.planar == nx_planar(diag)
    # a torus with its wrap bonds missing in one direction is a cylinder in disguise: planar
    part = IsingModel.from_arrays(L * L, 1.0, np.concatenate([right, down]), 1.0, lattice=Lattice(L, L, True, True))
    s = analyse(part)
    assert s.torus and s.planar == nx_planar(part) is True


# -- families ------------------------------------------------------------------------------------------

def test_width_growth_kinds():
    n = np.array([16, 64, 256, 1024, 4096])
    assert width_growth(n, np.ones(5))[0] == "bounded"
    assert width_growth(n, np.log2(n))[0] == "bounded"
    assert width_growth(n, np.sqrt(n))[0] == "sqrt"
    assert width_growth(n, 2 * np.sqrt(n) - 1)[0] == "sqrt"
    assert width_growth(n, n / 6 + 2)[0] == "linear"
    assert width_growth([10], [3])[0] == "unknown"
    rng = np.random.default_rng(0)
    m = np.array([8, 10, 16, 24, 40, 60, 100, 150])
    for _ in range(20):
        noisy = np.maximum(3, 0.16 * m * rng.uniform(0.8, 1.2, size=len(m)))
        assert width_growth(m, noisy)[0] == "linear"
        assert width_growth(m, 1.5 * np.sqrt(m) * rng.uniform(0.9, 1.1, size=len(m)))[0] == "sqrt"


def test_family_structures_of_the_six_tasks():
    start = time.perf_counter()
    f = {tid: family_structure(get_task(tid)) for tid in ("P01", "P02", "P03", "P04", "P05", "P06")}
    assert time.perf_counter() - start < 25.0        # about 4 s unloaded, most of it building 10^5-spin models
    assert max(f["P01"].sizes) == 100_000 and max(f["P04"].sizes) == 4096 and max(f["P06"].sizes) == 150
    for tid in ("P01", "P02"):
        assert f[tid].treewidth_growth == f[tid].pathwidth_growth == "bounded"
        assert f[tid].chain and f[tid].planar and f[tid].boundary == "open" and f[tid].disorder == "uniform"
    assert f["P02"].has_fields and not f["P01"].has_fields
    assert f["P03"].pathwidth_growth == "sqrt" and f["P03"].toroidal and f["P03"].planar is False
    assert f["P03"].boundary == "periodic"
    assert f["P04"].pathwidth_growth == f["P04"].treewidth_growth == "sqrt"
    assert f["P04"].planar and f["P04"].boundary == "open" and f["P04"].disorder == "frustrated"
    assert f["P05"].rank_one and f["P05"].gauge_uniform and f["P05"].disorder == "gauge"
    assert f["P05"].pathwidth_growth == "linear" and not f["P05"].bounded_degree
    assert f["P06"].treewidth_growth == f["P06"].pathwidth_growth == "linear"
    assert not f["P06"].gauge_uniform and f["P06"].bounded_degree and f["P06"].planar is False
    assert all(fam.max_order == 2 and not fam.nishimori for fam in f.values())
    assert family_structure(get_task("P04")) is f["P04"]          # cached


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_regular_family_is_linear_at_other_seeds(seed):
    fam = family_structure(get_task("P06"), seed=seed)
    assert fam.treewidth_growth == "linear" and fam.pathwidth_growth == "linear"


def test_family_of_all_ferromagnetic_planar_grids_is_gauge_uniform():
    task = get_task("P04")
    sizes = (9, 16, 64)
    fam = family_structure(task, sizes=sizes)
    assert fam.sizes == sizes and len(fam.structures) == 3
    assert not fam.gauge_uniform
    models = [task.to_model({**task.probe_params(n, 0, 0), "Jh": np.ones((int(n ** .5), int(n ** .5) - 1)).tolist(),
                             "Jv": np.ones((int(n ** .5) - 1, int(n ** .5))).tolist()}, n) for n in sizes]
    assert all(analyse(m).uniform_couplings for m in models)


def test_planarity_of_large_graphs_without_a_lattice_hint():
    L = 50                                                 # 2500 spins: beyond the networkx test
    grid = nx.convert_node_labels_to_integers(nx.grid_2d_graph(L, L))
    assert analyse(graph_model(grid)).planar is None
    dense = nx.random_regular_graph(8, 2500, seed=1)       # 4n edges > 3n - 6: Euler says non-planar
    s = analyse(graph_model(dense))
    assert s.planar is False and s.regular_degree == 8
