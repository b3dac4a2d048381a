"""Variable elimination along min-fill / min-degree orders against brute force, the chain closed
form, the forest closed form, the tensor network and the transfer matrix, from hot to very cold."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms.approximation import treewidth_min_degree, treewidth_min_fill_in

from evaluators.oracles.base import NotApplicable, TooLarge
from evaluators.oracles.brute import brute_log_z
from evaluators.oracles.closed_forms import chain_log_z, forest_log_z
from evaluators.oracles.elimination import elimination_applies, elimination_log_z, elimination_plan
from evaluators.oracles.elimination_order import MIN_DEGREE, MIN_FILL, greedy_order, interaction_graph
from evaluators.oracles.naive import naive_log_z
from evaluators.oracles.registry import exact_log_z, oracle_for
from evaluators.oracles.tensor_network import tensor_network_log_z
from evaluators.oracles.transfer_matrix import transfer_matrix_log_z
from tasks.model import IsingModel

BETAS = (1e-3, 0.3, 1.0, 3.0, 30.0, 1000.0)


def close(a: float, b: float, rel: float = 1e-10) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(b))


def heap_tree(n: int, beta: float, rng, field_scale: float = 1.0) -> IsingModel:
    """Complete binary tree, heap-indexed (parent of i is (i - 1) // 2), random couplings and fields."""
    i = np.arange(1, n)
    return IsingModel.from_arrays(n, beta, np.stack([i, (i - 1) // 2], 1), rng.normal(size=n - 1),
                                  field_scale * rng.normal(size=n))


def cactus(rng, n_cycles: int, beta: float) -> IsingModel:
    """Triangles and squares glued at single vertices in a random tree pattern, with fields."""
    edges, n = [], 1
    for _ in range(n_cycles):
        anchor, k = int(rng.integers(n)), int(rng.integers(3, 5))
        ring = [anchor] + list(range(n, n + k - 1))
        edges += [(ring[j], ring[(j + 1) % k]) for j in range(k)]
        n += k - 1
    return IsingModel.from_arrays(n, beta, edges, rng.choice([-1.0, 1.0], len(edges)), 0.5 * rng.normal(size=n))


def series_parallel(rng, steps: int, beta: float) -> IsingModel:
    """Built by series and parallel compositions: width 2."""
    g = nx.MultiGraph([(0, 1)])
    nxt = 2
    for _ in range(steps):
        u, v, _k = list(g.edges(keys=True))[int(rng.integers(g.number_of_edges()))]
        if rng.random() < 0.5:
            g.add_edge(u, v)
        else:
            g.remove_edge(u, v, _k)
            g.add_edges_from([(u, nxt), (nxt, v)])
            nxt += 1
    edges = [(a, b) for a, b in g.edges()]
    return IsingModel.from_arrays(nxt, beta, edges, rng.normal(size=len(edges)), rng.normal(size=nxt))


def decorated_ladder(rng, L: int, beta: float) -> IsingModel:
    """A 2 x L ladder with a decorating spin on every bond, 3-spin terms on every rung triangle and fields."""
    n = 2 * L
    edges, terms, w = [], [], []
    for c in range(L):
        for a, b in ([(2 * c, 2 * c + 1)] + ([(2 * c, 2 * c + 2), (2 * c + 1, 2 * c + 3)] if c < L - 1 else [])):
            edges += [(a, n), (n, b)]
            n += 1
        if c < L - 1:
            terms.append((2 * c, 2 * c + 1, 2 * c + 2))
    J = rng.normal(size=len(edges))
    all_terms = [tuple(e) for e in edges] + terms + [(i,) for i in range(n)]
    weights = np.concatenate([J, rng.normal(size=len(terms)), 0.7 * rng.normal(size=n)])
    return IsingModel(n=n, terms=tuple(all_terms), weights=weights, beta=beta, constant=0.25)


@pytest.mark.parametrize("builder", [cactus, series_parallel, decorated_ladder])
def test_small_width_families_against_brute_force_at_every_beta(builder):
    rng = np.random.default_rng(hash(builder.__name__) % 2**32)
    size = {"cactus": 7, "series_parallel": 14, "decorated_ladder": 4}[builder.__name__]
    for beta in BETAS:
        model = builder(rng, size, beta)
        assert model.n <= 24
        assert elimination_applies(model) is None
        assert close(elimination_log_z(model), brute_log_z(model)), (builder.__name__, beta)


def test_random_k_spin_models_against_naive_enumeration():
    rng = np.random.default_rng(1)
    for trial in range(40):
        n = int(rng.integers(4, 13))
        terms = [tuple(int(x) for x in rng.choice(n, k, replace=False)) for k in (1, 1, 2, 2, 2, 2, 3, 4)]
        model = IsingModel(n=n, terms=tuple(terms), weights=rng.normal(size=len(terms)) * 2,
                           beta=float(BETAS[trial % len(BETAS)]), constant=float(rng.normal()))
        assert close(elimination_log_z(model), naive_log_z(model)), trial


def test_binary_tree_with_fields_against_brute_force_and_closed_forms():
    rng = np.random.default_rng(2)
    for beta in BETAS:
        model = heap_tree(21, beta, rng)
        assert close(elimination_log_z(model), brute_log_z(model)), beta
        zero = heap_tree(63, beta, rng, field_scale=0.0)        # zero field: the forest closed form
        assert close(elimination_log_z(zero), forest_log_z(zero)), beta
        path = IsingModel.from_arrays(500, beta, np.stack([np.arange(499), np.arange(1, 500)], 1),
                                      rng.normal(size=499), rng.normal(size=500))
        assert close(elimination_log_z(path), chain_log_z(path)), beta   # a path in fields: the chain form


def test_binary_tree_against_the_tensor_network_at_moderate_n():
    rng = np.random.default_rng(3)
    for beta in (0.2, 1.0, 5.0):
        model = heap_tree(511, beta, rng)
        assert close(elimination_log_z(model), tensor_network_log_z(model), 1e-11), beta


def test_tiny_and_huge_couplings():
    rng = np.random.default_rng(4)
    model = heap_tree(15, 1.0, rng)
    tiny = model.with_weights(model.weights * 1e-160)       # log Z = n log 2 to every digit
    assert elimination_log_z(tiny) == pytest.approx(15 * math.log(2), rel=1e-15)
    cold = model.with_beta(1e6)                               # ground state: -beta E0 exactly
    e0 = float(model.energy(_all_states(15)).min())
    assert close(elimination_log_z(cold), -1e6 * e0, 1e-14)


def _all_states(n):
    idx = np.arange(2 ** n)[:, None]
    return 1.0 - 2.0 * ((idx >> np.arange(n)) & 1)


def test_orders_are_as_narrow_as_networkx_on_small_graphs():
    """Same heuristics as networkx (ties broken differently): the better of the two orders is at
    most one wider than the better of networkx's."""
    rng = np.random.default_rng(5)
    graphs = [nx.balanced_tree(2, 6), nx.grid_2d_graph(6, 7), nx.random_regular_graph(3, 40, seed=1),
              nx.cycle_graph(30), nx.ladder_graph(12), nx.complete_graph(9)]
    for g in graphs:
        g = nx.convert_node_labels_to_integers(g)
        e = np.array(list(g.edges()))
        model = IsingModel.from_arrays(g.number_of_nodes(), 1.0, e, rng.normal(size=len(e)))
        indptr, indices = interaction_graph(model)
        widths = []
        for criterion in (MIN_DEGREE, MIN_FILL):
            order, clique, width = greedy_order(indptr, indices, criterion)
            assert sorted(order.tolist()) == list(range(g.number_of_nodes()))
            assert width == clique.max() - 1
            widths.append(width)
        reference = min(treewidth_min_degree(g)[0], treewidth_min_fill_in(g)[0])
        assert min(widths) <= reference + 1, (widths, reference)
        assert elimination_plan(model, 30).width in widths


def test_induced_width_is_the_true_clique_size():
    """Replaying the order on a networkx copy gives the same clique sizes."""
    g = nx.convert_node_labels_to_integers(nx.random_regular_graph(3, 30, seed=4))
    e = np.array(list(g.edges()))
    model = IsingModel.from_arrays(30, 1.0, e, 1.0)
    order, clique, _ = greedy_order(*interaction_graph(model), MIN_FILL)
    h = g.copy()
    for v, k in zip(order.tolist(), clique.tolist()):
        nbrs = list(h.neighbors(v))
        assert len(nbrs) + 1 == k
        h.add_edges_from((a, b) for i, a in enumerate(nbrs) for b in nbrs[i + 1:])
        h.remove_node(v)


def test_registry_chooses_it_for_trees_in_fields_and_refuses_lattices():
    rng = np.random.default_rng(6)
    tree = heap_tree(4095, 0.7, rng)
    assert oracle_for(tree) == "elimination"
    assert elimination_plan(tree).width == 1
    res = exact_log_z(tree)
    assert res.method == "elimination" and math.isfinite(res.log_z)
    L = 20
    r, c = np.divmod(np.arange(L * L), L)
    site = r * L + c
    grid = np.concatenate([np.stack([site[c < L - 1], site[c < L - 1] + 1], 1),
                           np.stack([site[r < L - 1], site[r < L - 1] + L], 1)])
    lattice = IsingModel.from_arrays(L * L, 1.0, grid, rng.normal(size=len(grid)), rng.normal(size=L * L))
    assert elimination_applies(lattice) is not None      # width ~ L: the transfer matrix's job
    assert oracle_for(lattice) == "transfer_matrix"
    with pytest.raises(TooLarge):
        elimination_log_z(lattice, max_width=8)
    dense = IsingModel(n=40, terms=(), weights=np.zeros(0), beta=1.0, rank_one=((np.ones(40), 1.0),))
    with pytest.raises(NotApplicable):
        elimination_log_z(dense)


def test_moderate_width_against_the_transfer_matrix():
    """A 3-regular glass in fields (width about 10 at n = 40) against the transfer matrix."""
    rng = np.random.default_rng(7)
    g = nx.random_regular_graph(3, 40, seed=7)
    e = np.array(list(g.edges()))
    for beta in (0.5, 2.0, 50.0):
        model = IsingModel.from_arrays(40, beta, e, rng.choice([-1.0, 1.0], len(e)), 0.3 * rng.normal(size=40))
        assert close(elimination_log_z(model), transfer_matrix_log_z(model), 1e-11), beta
