"""The Tier-3 derivation solvers against exact values: the mean-field lower bound and the tree-reweighted
upper bound must hold on every instance (brute force at small n with terms up to four spins and fields,
beta from 0.1 to 5, cold, huge and tiny couplings; P06, T15 and T16 against the exact oracles; planar
grids at any size against the planar oracle), and the boundary MPS must be exact once chi covers the
frontier and converge as chi grows. The gap per spin at each size is printed by
tests/benchmarks/tier3_bounds.py (docs/tier3.md)."""

from __future__ import annotations

import numpy as np
import pytest

from evaluators.oracles.brute import brute_log_z
from evaluators.oracles.registry import exact_log_z
from search.derivation.runtime import _rt_merge, _rt_start
from search.derivation.solvers.boundary_mps import _mps_log_z, _sol_boundary_mps
from search.derivation.solvers.mean_field import _sol_mean_field
from search.derivation.solvers.tree_reweighted import _sol_tree_reweighted, _trw_forest_pass, _trw_layout, _trw_terms
from search.derivation.view import to_ising
from tasks.formula_reader import compile_reader
from tasks.registry import get_task


def _slack(exact: float) -> float:
    """Rounding only: 1e-9 relative to log Z (the oracles agree to 1e-10)."""
    return 1e-9 * max(1.0, abs(exact))


def _random_model(rng, n, scale, orders=(1, 2, 3, 4), density=1.5):
    parts = []
    for k in orders:
        m = n if k == 1 else int(density * n / (k - 1))
        idx = np.array([rng.choice(n, size=k, replace=False) for _ in range(m)], dtype=np.int64)
        parts.append((idx, scale * rng.choice([-1.0, 1.0], size=m) * rng.uniform(0.2, 1.0, size=m)))
    return {"n": n, "beta": 1.0, "terms": _rt_merge(parts), "rank_one": [], "log_shift": 0.0,
            "energy_shift": 0.0, "positions": None, "coords": None, "statistic": "log_z"}


def _exact(model) -> float:
    return brute_log_z(to_ising(model)) - model["log_shift"]


def _state(task_id, n, seed, beta):
    task = get_task(task_id)
    params = {**task.probe_params(n, seed, 0), "beta": beta}
    return _rt_start(compile_reader(task.formula).load()(params, n)), task, params


@pytest.mark.parametrize("scale", [1e-160, 1e-3, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 50.0, 1e3])
def test_bounds_hold_on_random_hypergraph_models_at_every_coupling_scale(scale):
    rng = np.random.default_rng(int(scale * 1000) % 9973 + 7)
    for trial in range(6):
        n = int(rng.integers(4, 13))
        model = _random_model(rng, n, scale, orders=((1, 2), (1, 2, 3), (2, 4), (1, 2, 3, 4))[trial % 4])
        exact = _exact(model)
        lo, hi = _sol_mean_field(model, {}), _sol_tree_reweighted(model, {})
        assert lo <= exact + _slack(exact), (scale, trial, lo - exact)
        assert hi >= exact - _slack(exact), (scale, trial, exact - hi)


def test_a_forest_is_exact_by_belief_propagation_moments_included():
    rng = np.random.default_rng(3)
    n = 10
    model = {"n": n, "terms": [(np.arange(n)[:, None], rng.normal(size=n)),
                               (np.array([[0, 1], [1, 2], [2, 7]]), 3 * rng.normal(size=3)),
                               (np.array([[3, 4, 5], [5, 6, 8], [2, 3, 9]]), 2 * rng.normal(size=3))],
             "rank_one": [], "log_shift": 0.0, "beta": 1.0, "energy_shift": 0.0, "positions": None, "coords": None}
    H, groups = _trw_terms(model)
    members = [row for idx, _ in groups for row in idx.tolist()]
    theta = np.concatenate([w for _, w in groups])
    log_z, mu, mag = _trw_forest_pass(n, _trw_layout(n, members, np.ones(len(members), bool)), theta, H)
    s = 1.0 - 2.0 * ((np.arange(1 << n)[:, None] >> np.arange(n)) & 1)
    x = sum(np.prod(s[:, i], axis=2) @ w for i, w in model["terms"])
    p = np.exp(x - x.max())
    assert log_z == pytest.approx(x.max() + np.log(p.sum()), abs=1e-12)
    p /= p.sum()
    assert np.max(np.abs(p @ s - mag)) < 1e-12
    assert np.max(np.abs(np.array([p @ np.prod(s[:, m], axis=1) for m in members]) - mu)) < 1e-12


@pytest.mark.parametrize("task_id,sizes", [("P06", (8, 10, 16, 24)), ("T15", (8, 27)), ("T16", (9, 16, 36, 64)),
                                           pytest.param("P06", (40, 60, 100, 150), marks=pytest.mark.slow),
                                           pytest.param("T15", (64, 125), marks=pytest.mark.slow),
                                           pytest.param("T16", (144, 256), marks=pytest.mark.slow)])
def test_bounds_hold_on_the_glass_tasks_against_the_exact_oracles(task_id, sizes):
    for n in sizes:
        for seed, beta in ((0, 0.1), (1, 0.5), (2, 1.0), (3, 2.0), (4, 5.0), (5, 8.0)):
            state, task, params = _state(task_id, n, seed, beta)
            exact = exact_log_z(task.to_model(params, n)).log_z
            lo = _sol_mean_field(state, {}) + state["log_shift"]
            hi = _sol_tree_reweighted(state, {}) + state["log_shift"]
            assert lo <= exact + _slack(exact) and exact <= hi + _slack(exact), (task_id, n, seed, beta, lo, hi, exact)


@pytest.mark.parametrize("beta", [0.3, 1.0, 3.0, 6.0])
def test_bounds_hold_on_a_large_planar_grid_against_the_planar_oracle(beta):
    state, task, params = _state("P04", 1024, 1, beta)
    exact = exact_log_z(task.to_model(params, 1024), "planar").log_z
    lo = _sol_mean_field(state, {"restarts": 2, "sweeps": 30}) + state["log_shift"]
    hi = _sol_tree_reweighted(state, {"forests": 3, "iterations": 5}) + state["log_shift"]
    assert lo <= exact + _slack(exact) <= hi + 2 * _slack(exact)
    assert (hi - lo) / 1024 < 2.5 * beta + 0.1           # a gap of order beta per spin, never worse


def test_the_bounds_are_exact_where_they_must_be():
    # no couplings: mean field and the trees are both the product of one-spin sums
    model = {"n": 5, "terms": [(np.arange(5)[:, None], np.array([0.3, -1.0, 2.0, 0.0, 7.0]))], "rank_one": [],
             "log_shift": 0.0}
    exact = float(np.sum(np.log(2 * np.cosh([0.3, -1.0, 2.0, 0.0, 7.0]))))
    assert _sol_mean_field(model, {}) == pytest.approx(exact, abs=1e-12)
    assert _sol_tree_reweighted(model, {}) == pytest.approx(exact, abs=1e-12)
    # a tree: the decomposition's one forest is the model itself
    tree = {"n": 4, "terms": [(np.array([[0, 1], [1, 2], [1, 3]]), np.array([0.7, -1.3, 2.0]))], "rank_one": [],
            "log_shift": 0.0}
    assert _sol_tree_reweighted(tree, {}) == pytest.approx(_exact({**tree, "beta": 1.0, "positions": None,
                                                                   "coords": None}), abs=1e-12)


def test_rank_one_blocks_are_refused_by_the_bounds():
    model = {"n": 3, "terms": [], "rank_one": [(np.ones(3), 1.0)], "log_shift": 0.0}
    with pytest.raises(ValueError):
        _sol_mean_field(model, {})
    with pytest.raises(ValueError):
        _sol_tree_reweighted(model, {})


@pytest.mark.parametrize("scale", [1e-160, 0.3, 1.0, 5.0])
def test_boundary_mps_is_exact_once_chi_covers_the_frontier(scale):
    # (colder, the QR/SVD that removes the parity bonds mixes weights exp(-2 beta |J|) apart and rounding
    # takes the small ones: 1e-9 at beta |J| = 20, O(1) at 40; the answer is then not exact, and says so)
    rng = np.random.default_rng(11)
    for _ in range(4):
        n = int(rng.integers(5, 13))
        model = _random_model(rng, n, scale)
        assert _mps_log_z(model, 1 << 7, np.arange(n)) == pytest.approx(_exact(model), abs=1e-9 * max(1, abs(_exact(model))))


@pytest.mark.parametrize("task_id,n", [("T16", 36), ("T16", 64), ("P04", 64)])
def test_boundary_mps_converges_in_chi_on_grids(task_id, n):
    state, task, params = _state(task_id, n, 2, 1.0)
    exact = exact_log_z(task.to_model(params, n)).log_z - state["log_shift"]
    values = _sol_boundary_mps(state, {"chis": (2, 8, 32)})
    errors = [abs(v - exact) / n for _, v in values]
    assert errors[-1] < 1e-10 and errors[0] > errors[-1]
    assert [c for c, _ in values] == [2, 8, 32]


def test_boundary_mps_extends_its_ladder_when_truncation_leaves_one_value():
    """Cold and frustrated (T22 at beta = 30), chi = 2 loses the sum's positivity: the ladder doubles chi
    until two values exist (the verifier's evidence of convergence), and at chi = 2^frontier it is exact."""
    from search.derivation.solvers.boundary_mps import MAX_EXTRA_CHI

    task = get_task("T22")
    params = {**task.probe_params(16, 0, 4), "beta": 30.0}
    model = _rt_start(compile_reader(task.formula).load()(params, 16))
    values = _sol_boundary_mps(model, {"chis": (2, 4)})
    controls = [c for c, _ in values]
    assert len(values) >= 2 and 2 not in controls and controls == sorted(set(controls)) and max(controls) > 4
    assert max(controls) <= MAX_EXTRA_CHI
    exact = brute_log_z(task.to_model(params, 16)) - model["log_shift"]
    full = _sol_boundary_mps(model, {"chis": (2 ** 16,)})
    assert full[-1][1] == pytest.approx(exact, rel=1e-9)
