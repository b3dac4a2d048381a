"""Exact oracles agree with each other where they overlap, to 1e-9 in log Z, and `oracle_for`
picks a method that applies."""

import numpy as np
import pytest

from evaluators.oracles.registry import METHODS, exact_log_z, oracle_for
from tasks.model import IsingModel, Lattice
from tasks.registry import get_task


def open_grid(L: int, rng, gaussian: bool, beta: float) -> IsingModel:
    r, c = np.divmod(np.arange(L * L), L)
    site = r * L + c
    edges = np.concatenate([np.stack([site[c < L - 1], site[c < L - 1] + 1], 1),
                            np.stack([site[r < L - 1], site[r < L - 1] + L], 1)])
    J = rng.normal(size=len(edges)) if gaussian else rng.choice([-1.0, 1.0], size=len(edges))
    return IsingModel.from_arrays(L * L, beta, edges, J, lattice=Lattice(L, L))


@pytest.mark.parametrize("L", [6, 7, 8, 9, 10])
def test_transfer_matrix_planar_and_tensor_network_agree_on_open_grids(L):
    rng = np.random.default_rng(L)
    for gaussian, beta in [(False, 0.4), (True, 1.0), (False, 2.5)]:
        model = open_grid(L, rng, gaussian, beta)
        values = {m: exact_log_z(model, m).log_z for m in ("transfer_matrix", "planar", "tensor_network")}
        ref = values["transfer_matrix"]
        for m, v in values.items():
            assert abs(v - ref) <= 1e-9 * abs(ref), (m, values)


@pytest.mark.parametrize("L", [3, 4, 5, 6])
def test_kaufman_and_transfer_matrix_agree_on_tori(L):
    task = get_task("P03")
    for seed in range(3):
        model = task.to_model(task.probe_params(L * L, seed, 0), L * L)
        a, b = exact_log_z(model, "kaufman").log_z, exact_log_z(model, "transfer_matrix").log_z
        assert abs(a - b) <= 1e-9 * abs(b)


def test_every_method_the_selector_picks_applies():
    for task_id, n in [("P01", 1000), ("P02", 500), ("P03", 64), ("P04", 64), ("P05", 300), ("P06", 40)]:
        task = get_task(task_id)
        model = task.to_model(task.probe_params(n, 0, 0), n)
        name = oracle_for(model)
        assert METHODS[name].applies(model) is None


def test_forcing_an_inapplicable_method_is_refused():
    from evaluators.oracles.base import NotApplicable

    task = get_task("T16")  # fields on every spin of a grid: no planar graph even with a ghost spin
    model = task.to_model(task.probe_params(16, 0, 0), 16)
    with pytest.raises(NotApplicable, match="planar"):
        exact_log_z(model, "planar")


def test_the_methods_are_plugins_found_by_themselves_in_their_order_of_preference():
    """Every module of evaluators/oracles/methods registers one method; the order of preference is
    their ORDER, with brute force moved right after the closed forms on models of <= 20 spins."""
    import pkgutil

    import evaluators.oracles.methods as package
    from evaluators.oracles.registry import preference

    modules = {info.name for info in pkgutil.iter_modules(package.__path__)}
    assert set(METHODS) == modules and len(modules) == 11
    small, large = preference(IsingModel.from_arrays(16, 1.0, np.zeros((0, 2), int), np.zeros(0))), \
        preference(IsingModel.from_arrays(64, 1.0, np.zeros((0, 2), int), np.zeros(0)))
    assert small[:5] == ["mattis", "chain", "forest", "kaufman", "brute"] and large[-1] == "brute"
    assert [m for m in small if m != "brute"] == [m for m in large if m != "brute"]
