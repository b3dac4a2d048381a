"""Tensor-network contraction against the plain enumeration and brute force."""

import math

import networkx as nx
import numpy as np
import pytest

from evaluators.oracles.base import NotApplicable, TooLarge
from evaluators.oracles import tensor_network as tn
from evaluators.oracles.brute import brute_log_z
from evaluators.oracles.contraction.log_contraction import contract_log, log_matmul
from evaluators.oracles.naive import naive_log_z
from evaluators.oracles.contraction.path_search import hyper_optimizer
from evaluators.oracles.tensor_network import (
    contraction_cost,
    contraction_width,
    tensor_network_applies,
    tensor_network_log_z,
)
from evaluators.oracles.transfer_matrix import transfer_matrix_log_z
from tasks.model import IsingModel
from tasks.registry import get_task

RTOL = 1e-9


def close(a: float, b: float, rtol: float = RTOL) -> bool:
    return abs(a - b) <= rtol * max(1.0, abs(b))


def regular_glass(rng, n, *, gaussian=False, fields=False, beta=1.0):
    g = nx.random_regular_graph(3, n, seed=int(rng.integers(2**31)))
    edges = np.array(sorted(tuple(sorted(e)) for e in g.edges()))
    J = rng.normal(size=len(edges)) if gaussian else rng.choice([-1.0, 1.0], len(edges))
    h = rng.normal(scale=0.7, size=n) if fields else None
    return IsingModel.from_arrays(n, beta, edges, J, h)


def test_random_regular_graphs_against_naive():
    rng = np.random.default_rng(10)
    betas = (0.1, 0.5, 1.0, 3.0, 8.0)
    for n in (4, 6, 8, 10, 12, 14, 16, 18):
        for gaussian in (False, True):
            for fields in (False, True):
                model = regular_glass(rng, n, gaussian=gaussian, fields=fields,
                                      beta=betas[int(rng.integers(len(betas)))])
                assert close(tensor_network_log_z(model), naive_log_z(model)), (n, gaussian, fields, model.beta)


def test_n20_every_beta_against_naive():
    rng = np.random.default_rng(11)
    for beta, gaussian, fields in ((0.1, False, True), (1.0, True, False), (8.0, False, False), (8.0, True, True)):
        model = regular_glass(rng, 20, gaussian=gaussian, fields=fields, beta=beta)
        assert close(tensor_network_log_z(model), naive_log_z(model)), (beta, gaussian, fields)


@pytest.mark.parametrize("task_id,n", [("P04", 4), ("P04", 9), ("P04", 16), ("P03", 9), ("P03", 16)])
def test_grids_and_tori(task_id, n):
    task = get_task(task_id)
    for sample in range(4):
        model = task.to_model(task.probe_params(n, 3, sample), n)
        assert close(tensor_network_log_z(model), naive_log_z(model)), sample


def test_k_spin_terms_constant_rank_one_and_isolated_spins():
    rng = np.random.default_rng(12)
    for trial in range(12):
        n = int(rng.integers(6, 13))
        terms = [tuple(int(x) for x in rng.choice(n - 2, k, replace=False)) for k in (1, 2, 2, 2, 3, 3, 4)]
        weights = rng.normal(size=len(terms)) * 2
        blocks = ((rng.normal(size=n), float(rng.normal())),) if trial % 3 == 0 else ()
        model = IsingModel(n=n, terms=tuple(terms), weights=weights, beta=float(rng.uniform(0.1, 8)),
                           constant=float(rng.normal()), rank_one=blocks)
        assert close(tensor_network_log_z(model), naive_log_z(model)), trial


def test_spins_without_terms_count_a_factor_two():
    model = IsingModel(n=6, terms=((0, 1), (2, 3)), weights=np.array([1.0, 0.0]), beta=2.0)
    assert close(tensor_network_log_z(model), math.log(4 * math.cosh(2.0)) + 4 * math.log(2))
    empty = IsingModel(n=4, terms=(), weights=np.zeros(0), beta=1.0, constant=-0.5)
    assert close(tensor_network_log_z(empty), 4 * math.log(2) - 0.5)


def test_very_low_temperature_does_not_overflow():
    rng = np.random.default_rng(13)
    for _ in range(3):
        model = regular_glass(rng, 14, gaussian=True, fields=True, beta=100.0)
        got = tensor_network_log_z(model)
        assert np.isfinite(got) and close(got, naive_log_z(model))


def test_cold_models_whose_ground_states_sit_in_tiny_local_weights():
    """beta |w| of 200-400: the best configurations are locally worse by more than 708 / beta, so
    a float64 contraction lost them (2140.7 for 2541.4 on the 3-regular graph, 2.5 low on a
    12 x 12 grid at beta = 100, NaN colder). The range check sends these to the log domain."""
    model = IsingModel.from_arrays(4, 200.0, [[0, 1], [1, 2], [2, 3], [0, 2]], [1.0, -2.0, 1.0, 1.0])
    assert tensor_network_applies(model) is None
    assert close(tensor_network_log_z(model), naive_log_z(model), 1e-13)
    repeated = IsingModel(n=2, terms=((0, 1), (0, 1)), weights=np.array([1.0, 1.0]), beta=200.0)
    assert close(tensor_network_log_z(repeated), math.log(2.0) + 400.0 + math.log1p(math.exp(-800.0)), 1e-13)
    ring = [[i, (i + 1) % 12] for i in range(12)] + [[i, i + 6] for i in range(6)]
    J = np.random.default_rng(8).choice([-1.0, 1.0], 18)
    glass = IsingModel(12, tuple(map(tuple, ring)) + ((0, 3, 6, 9),), np.r_[J, 0.7], 1.0)
    for beta in (200.0, 1000.0):
        assert close(tensor_network_log_z(glass.with_beta(beta)), naive_log_z(glass.with_beta(beta)), 1e-12), beta
    grid = get_task("P04")
    params = {**grid.probe_params(144, 0, 0), "beta": 100.0}
    cold = grid.to_model(params, 144)
    assert close(tensor_network_log_z(cold), transfer_matrix_log_z(cold), 1e-13)


def test_log_domain_contraction_agrees_with_the_linear_one():
    """Forced, the log-domain route (batched BLAS on shifted exponentials plus exact recomputation)
    gives the linear route's value on hyper-indices, fields, k-spin terms and sliced paths."""
    rng = np.random.default_rng(18)
    for n, fields, width in ((12, False, 26), (16, True, 26), (30, True, 5)):
        model = regular_glass(rng, n, gaussian=True, fields=fields, beta=0.8)
        net = tn.build_network(model)
        tree = tn.contraction_tree(net, "greedy", width)
        linear = contract_log(tree, net.arrays)
        logs = contract_log(tree, net.arrays, force_log_domain=True)
        assert abs(linear - logs) <= 1e-12 * max(1.0, abs(linear)), (n, linear - logs)
        one_at_a_time = contract_log(tree, net.arrays, slice_workers=1, blas_threads=None)
        assert abs(linear - one_at_a_time) <= 1e-12 * max(1.0, abs(linear)), (n, tree.nslices)
        assert close(net.log_offset + logs, transfer_matrix_log_z(model)), n


def test_log_matmul_is_exact_where_the_shifted_product_underflows():
    A = np.array([[[0.0, -900.0], [-5.0, 0.0]]])
    B = np.array([[[-900.0, 0.0], [0.0, -3.0]]])
    C = log_matmul(A, B)
    ref = np.array([[[np.logaddexp(-900.0, -900.0), np.logaddexp(0.0, -903.0)],
                     [np.logaddexp(-905.0, 0.0), np.logaddexp(-5.0, -3.0)]]])
    assert np.allclose(C, ref, rtol=1e-15, atol=0.0)


def test_against_brute_force_at_n26():
    rng = np.random.default_rng(14)
    for n, gaussian in ((24, True), (26, False)):
        model = regular_glass(rng, n, gaussian=gaussian, beta=1.3)
        assert close(tensor_network_log_z(model), brute_log_z(model)), n


def test_width_limit_slices_within_the_memory_budget_and_flop_limit():
    rng = np.random.default_rng(15)
    chain = get_task("P01").to_model({"beta": 1.0, "J": 0.5}, 40)
    assert contraction_width(chain) <= 2.0
    model = regular_glass(rng, 40, fields=True)
    width = contraction_width(model, optimize="greedy")
    assert 3.0 <= width <= 12.0
    assert contraction_width(model) <= width  # "auto" starts from greedy and keeps the cheaper path
    assert contraction_width(model, optimize="greedy", max_width=width - 3) <= width - 3
    ref = transfer_matrix_log_z(model)
    assert close(tensor_network_log_z(model, max_width=width - 3, optimize="greedy"), ref)
    with pytest.raises(TooLarge):
        tensor_network_log_z(model, max_flops=100.0)


@pytest.mark.parametrize("fields", [False, True])
def test_sliced_hyper_optimised_paths_against_the_transfer_matrix(fields):
    """Slicing (a budget of 2^6 entries per intermediate) and the KaHyPar search (zero field: one
    spin fixed by the global flip) against the site-by-site transfer matrix, cold to hot."""
    rng = np.random.default_rng(16 + fields)
    base = regular_glass(rng, 48, gaussian=True, fields=fields)
    for beta in (0.05, 1.0, 4.0, 30.0):
        model = base.with_beta(beta)
        ref = transfer_matrix_log_z(model)
        sliced = tensor_network_log_z(model, max_width=6, optimize="greedy")
        searched = tensor_network_log_z(model, max_width=8, optimize=hyper_optimizer(8, max_trials=4))
        assert close(sliced, ref) and close(searched, ref), (beta, sliced - ref, searched - ref)
    assert contraction_width(base, optimize="greedy", max_width=6) <= 6


def test_a_costly_unsliced_path_is_split_for_the_slice_threads(monkeypatch):
    """Above SPLIT_FLOPS a one-slice path is sliced in two (contracted side by side), same log Z."""
    model = regular_glass(np.random.default_rng(19), 30, gaussian=True, fields=True)
    whole = tensor_network_log_z(model, optimize="greedy")
    monkeypatch.setattr(tn, "SPLIT_FLOPS", 0.0)
    tn._TREE_CACHE.clear()  # the greedy tree above is cached unsplit
    net = tn.build_network(model)
    assert tn.contraction_tree(net, "greedy", 26).nslices == 2
    assert close(tensor_network_log_z(model, optimize="greedy"), whole)
    assert close(whole, transfer_matrix_log_z(model))


def test_zero_field_fixes_one_spin_and_fields_do_not():
    """The global-flip shortcut halves the work only when every term is even in the spins."""
    rng = np.random.default_rng(17)
    even = regular_glass(rng, 16)
    odd = IsingModel(n=16, terms=even.terms + ((0, 1, 2),), weights=np.append(even.weights, 0.7), beta=1.0)
    for model in (even, odd):
        assert close(tensor_network_log_z(model), naive_log_z(model))
    assert contraction_cost(even, optimize="greedy") < contraction_cost(
        IsingModel(n=16, terms=even.terms + ((3,),), weights=np.append(even.weights, 1e-3), beta=1.0),
        optimize="greedy")


def test_not_applicable_for_huge_terms():
    model = IsingModel(n=14, terms=(tuple(range(13)),), weights=np.array([1.0]), beta=1.0)
    assert tensor_network_applies(model) is not None
    with pytest.raises(NotApplicable):
        tensor_network_log_z(model)
    assert tensor_network_applies(regular_glass(np.random.default_rng(0), 10)) is None
