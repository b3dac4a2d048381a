"""The generic templates' fast paths, each against an independent method, hot and cold.

``tensor_contraction``: the greedy orders' per-key queues (against a plain scan of every spin per
step), the symbolic bucket plan (against the elimination game on the graph), the einsum subscripts
taken from per-factor labels (position mod 52) and their fallback for buckets spanning 52 or more
positions, the wide-bucket path, and the linear pass's underflow bound that hands over to log
weights. ``row_transfer``: spins with and without a field, isolated spins. Values against
enumeration, the open chain's and the ring's closed forms and the evaluators' transfer-matrix oracle.
"""

import networkx as nx
import numpy as np
import pytest

from evaluators.oracles.naive import naive_log_z
from evaluators.oracles.transfer_matrix import transfer_matrix_log_z
from search.structural.templates import elimination_order, row_transfer, tensor_contraction
from tasks.model import IsingModel

TC_ORDERS = tensor_contraction.OPTION_SPACE["order"]
RT_ORDERS = row_transfer.OPTION_SPACE["order"]


def _grid(L, W=None):
    W = W or L
    idx = np.arange(L * W).reshape(L, W)
    return np.concatenate([np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
                           np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1)])


def _graphs(rng):
    """(name, n, edges): grids, trees, 3-regular graphs, random sparse graphs with isolated spins."""
    out = [("grid 3x4", 12, _grid(3, 4)), ("grid 4x4", 16, _grid(4))]
    for seed in range(2):
        out.append((f"tree {seed}", 14, np.array(nx.random_labeled_tree(14, seed=seed).edges())))
        out.append((f"3-regular {seed}", 14, np.array(nx.random_regular_graph(3, 14, seed=seed).edges())))
    for k in range(3):
        n = 13
        e = rng.integers(0, n - 2, size=(15, 2))          # spins n-2, n-1 isolated
        out.append((f"random {k}", n, e[e[:, 0] != e[:, 1]]))
    return out


def _plain_greedy_order(n, edges, how, tie):
    """The greedy order by its definition: each step scans every remaining spin for the least
    (fill, degree, tie), then joins the eliminated spin's neighbours."""
    nbrs = [set() for _ in range(n)]
    for a, b in edges:
        nbrs[a].add(b)
        nbrs[b].add(a)
    left, order, width = set(range(n)), [], 0

    def fill(x):
        ns = list(nbrs[x])
        return sum(1 for i in range(len(ns)) for j in range(i + 1, len(ns)) if ns[j] not in nbrs[ns[i]])

    while left:
        v = min(left, key=lambda x: (fill(x) if how == "min_fill" else 0, len(nbrs[x]), tie[x]))
        ns = nbrs[v]
        width = max(width, len(ns))
        for a in ns:
            nbrs[a].discard(v)
            nbrs[a] |= ns - {a}
        left.discard(v)
        order.append(v)
    return order, width


@pytest.mark.parametrize("how", ["min_fill", "min_degree"])
def test_greedy_order_is_the_definition(how):
    rng = np.random.default_rng(3)
    cases = [(n, e) for _, n, e in _graphs(rng)]
    cases += [(36, _grid(6)), (50, np.array(nx.random_regular_graph(3, 50, seed=5).edges()))]
    for n, edges in cases:
        edges, _ = tensor_contraction._merged_couplings(edges, np.ones(len(edges)), [], n)
        for tie in (list(range(n)), rng.permutation(n).tolist()):
            nbrs = [set() for _ in range(n)]
            for a, b in edges.tolist():
                nbrs[a].add(b)
                nbrs[b].add(a)
            got = elimination_order._greedy_order(n, nbrs, how, tie)
            assert got == _plain_greedy_order(n, edges.tolist(), how, tie)


def test_bucket_plan_is_the_elimination_game():
    """Each step's kept spins are the eliminated spin's neighbours in the graph with every earlier
    spin eliminated (their neighbours joined), and its factors are exactly those holding it."""
    rng = np.random.default_rng(8)
    for name, n, edges in _graphs(rng):
        edges, _ = tensor_contraction._merged_couplings(edges, np.ones(len(edges)), [], n)
        order = rng.permutation(n).tolist()
        pos = elimination_order._positions(order, n)
        scopes = [tuple(sorted((pos[a], pos[b]))) for a, b in edges.tolist()] + [(pos[i],) for i in range(0, n, 3)]
        steps, made, widest = elimination_order._bucket_plan(scopes, n)
        nbrs = [set() for _ in range(n)]
        for a, b in scopes[:len(edges)]:
            nbrs[a].add(b)
            nbrs[b].add(a)
        by_step = {k: (ids, keep) for k, ids, keep in steps}
        for k in range(n):
            later = {u for u in nbrs[k] if u > k}
            assert (k in by_step) == any(k in sc for sc in scopes), (name, k)     # a spin in no factor: no bucket
            if k in by_step:
                ids, keep = by_step[k]
                assert keep == tuple(sorted(later)), (name, k)
                assert all(made[i][0] == k for i in ids)
            for a in later:
                nbrs[a] |= later - {a}
        assert widest == max((len(keep) for _, _, keep in steps), default=0)


@pytest.mark.parametrize("beta", [0.05, 1.0, 8.0, 60.0, 500.0])
def test_tensor_contraction_against_enumeration_on_graphs_with_and_without_fields(beta):
    rng = np.random.default_rng(17)
    for name, n, edges in _graphs(rng):
        J = rng.choice([-1.0, 1.0], len(edges)) * rng.uniform(0.5, 1.5, len(edges))
        for h in (np.zeros(n), rng.normal(size=n) * (rng.random(n) < 0.5)):
            ref = naive_log_z(IsingModel.from_arrays(n, beta, edges, J, h))
            for how in TC_ORDERS:
                options = {"order": how, "engine": "bucket"}
                got = tensor_contraction._method_log_z(edges, J, h, [], None, beta, n, options)
                assert abs(got - ref) <= 1e-11 * max(1.0, abs(ref)), (name, how, beta, got, ref)


def _ring_log_z(beta, J):
    """Zero-field ring: Z = prod 2 cosh(beta J_i) + prod 2 sinh(beta J_i), in logs
    (log 2 cosh x = |x| + log(1 + exp(-2|x|)), log 2 |sinh x| = |x| + log(1 - exp(-2|x|)))."""
    x = beta * np.asarray(J)
    log_cosh = np.sum(np.abs(x) + np.log1p(np.exp(-2 * np.abs(x))))
    log_abs_sinh = np.sum(np.abs(x) + np.log1p(-np.exp(-2 * np.abs(x))))
    sign = np.prod(np.sign(x))
    return float(log_cosh + np.log1p(sign * np.exp(log_abs_sinh - log_cosh)))


@pytest.mark.parametrize("beta", [0.3, 2.0, 400.0])
def test_buckets_spanning_52_positions_take_the_general_subscripts(beta, monkeypatch):
    """A ring of 120 spins in natural order: spin 0's bucket keeps spins 1 and 119, a span the
    position-mod-52 labels cannot name, so _sum_out builds the subscripts; the open chain never
    needs it. Both against closed forms."""
    calls = []
    real = tensor_contraction._sum_out
    monkeypatch.setattr(tensor_contraction, "_sum_out", lambda *a: calls.append(1) or real(*a))
    n = 120
    J = np.random.default_rng(5).uniform(0.4, 1.2, n)          # unfrustrated: the closed form is stable
    ring = np.stack([np.arange(n), (np.arange(n) + 1) % n], 1)
    got = tensor_contraction._method_log_z(ring, J, np.zeros(n), [], None, beta, n, {"order": "natural"})
    assert got == pytest.approx(_ring_log_z(beta, J), rel=1e-12)
    if beta < 100:                              # the linear pass runs (it is skipped when cold)
        assert calls
    calls.clear()
    chain = ring[:-1]
    got = tensor_contraction._method_log_z(chain, J[:-1], np.zeros(n), [], None, beta, n, {"order": "natural"})
    x = np.abs(beta * J[:-1])
    assert got == pytest.approx(np.log(2.0) + float(np.sum(x + np.log1p(np.exp(-2.0 * x)))), rel=1e-12)
    assert not calls


@pytest.mark.parametrize("beta", [0.4, 3.0, 300.0])
def test_wide_buckets_against_the_transfer_matrix_oracle(beta, monkeypatch):
    """A 14 x 14 grid with fields in natural order: buckets over 14 > SMALL_BUCKET_SPINS spins,
    summed by two greedy einsums each (linear) or log-sum-exp (cold)."""
    L = 14
    assert L > tensor_contraction.SMALL_BUCKET_SPINS
    rng = np.random.default_rng(23)
    edges = _grid(L)
    J = rng.choice([-1.0, 1.0], len(edges))
    h = rng.uniform(-0.5, 0.5, L * L)
    paths = []
    real = tensor_contraction._sum_out
    monkeypatch.setattr(tensor_contraction, "_sum_out", lambda o, s, k: paths.append(len(k)) or real(o, s, k))
    got = tensor_contraction._method_log_z(edges, J, h, [], None, beta, L * L, {"order": "natural"})
    ref = transfer_matrix_log_z(IsingModel.from_arrays(L * L, beta, edges, J, h))
    assert abs(got - ref) <= 1e-11 * abs(ref)
    if beta < 100:
        assert max(paths) > tensor_contraction.SMALL_BUCKET_SPINS


@pytest.mark.parametrize("beta, passes", [(1.0, 1), (500.0, 2)])
def test_linear_pass_hands_over_to_log_weights_only_when_a_product_could_underflow(beta, passes, monkeypatch):
    rng = np.random.default_rng(2)
    n = 14
    edges = np.array(nx.random_regular_graph(3, n, seed=2).edges())
    J, h = rng.choice([-1.0, 1.0], len(edges)), rng.normal(size=n)
    runs = []
    real = tensor_contraction._buckets
    monkeypatch.setattr(tensor_contraction, "_buckets", lambda *a: runs.append(a[-1]) or real(*a))
    got = tensor_contraction._method_log_z(edges, J, h, [], None, beta, n, {"order": "min_fill"})
    assert len(runs) == passes and runs[-1] == (passes == 2)
    ref = naive_log_z(IsingModel.from_arrays(n, beta, edges, J, h))
    assert abs(got - ref) <= 1e-12 * abs(ref)


@pytest.mark.parametrize("beta", [0.05, 1.0, 8.0, 60.0, 500.0])
def test_row_transfer_with_some_fields_zero_and_isolated_spins(beta):
    """A spin without a field takes its axis from its first coupling; a spin with neither keeps
    its table of ones. Against enumeration, every order, on grids, trees, 3-regular and random graphs."""
    rng = np.random.default_rng(29)
    for name, n, edges in _graphs(rng):
        J = rng.choice([-1.0, 1.0], len(edges)) * rng.uniform(0.5, 1.5, len(edges))
        h = rng.normal(size=n) * (rng.random(n) < 0.5)
        ref = naive_log_z(IsingModel.from_arrays(n, beta, edges, J, h))
        for how in RT_ORDERS:
            got = row_transfer._method_log_z(edges, J, h, [], None, beta, n, {"order": how})
            assert abs(got - ref) <= 1e-11 * max(1.0, abs(ref)), (name, how, beta, got, ref)


@pytest.mark.parametrize("beta", [1e-6, 0.2, 5.6, 440.0])
def test_long_chain_with_fields_both_templates_against_the_oracle(beta):
    """n = 3000 with random fields and couplings, every order of both templates, against the
    evaluators' transfer-matrix oracle (hot: every sum doubles the largest entry, so the linear passes
    must rescale on that bound; typical; cold; beta |J| up to 660: log weights)."""
    n = 3000
    rng = np.random.default_rng(31)
    edges = np.stack([np.arange(n - 1), np.arange(1, n)], 1)
    J, h = rng.uniform(-1.5, 1.5, n - 1), rng.normal(size=n) * (rng.random(n) < 0.7)
    ref = transfer_matrix_log_z(IsingModel.from_arrays(n, beta, edges, J, h))
    for how in TC_ORDERS:
        got = tensor_contraction._method_log_z(edges, J, h, [], None, beta, n, {"order": how})
        assert got == pytest.approx(ref, rel=1e-12), ("tensor", how)
    for how in RT_ORDERS:
        got = row_transfer._method_log_z(edges, J, h, [], None, beta, n, {"order": how})
        assert got == pytest.approx(ref, rel=1e-12), ("row", how)
