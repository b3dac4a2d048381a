"""Brute-force enumeration (Gray code, numba) against the plain numpy enumeration."""

import math

import numpy as np
import pytest

from evaluators.oracles.base import NotApplicable, TooLarge
from evaluators.oracles.brute import (
    MAX_BRUTE_N,
    brute_applies,
    brute_density_of_states,
    brute_log_z,
    brute_log_z_many,
)
from evaluators.oracles.naive import all_spins, naive_log_z
from tasks.model import IsingModel
from tasks.registry import get_task

RTOL = 1e-9


def close(a: float, b: float, rtol: float = RTOL) -> bool:
    return abs(a - b) <= rtol * max(1.0, abs(b))


def random_model(rng, n, *, fields=True, triples=0, quads=0, rank_one=0, integer=False, scale=1.0,
                 constant=0.0, beta=1.0, edge_prob=0.3):
    """A random IR model mixing every kind of term."""
    draw = (lambda size: rng.integers(-3, 4, size).astype(float)) if integer else \
        (lambda size: scale * rng.normal(size=size))
    i, j = np.triu_indices(n, 1)
    keep = rng.random(len(i)) < edge_prob
    terms = [(int(a), int(b)) for a, b in zip(i[keep], j[keep])]
    weights = list(draw(len(terms)))
    if fields:
        terms += [(k,) for k in range(n)]
        weights += list(draw(n))
    for order, count in ((3, triples), (4, quads)):
        for _ in range(count):
            terms.append(tuple(int(x) for x in rng.choice(n, order, replace=False)))
            weights.append(float(draw(1)[0]))
    blocks = tuple((rng.choice([-1.0, 1.0], n) if integer else rng.normal(size=n),
                    float(rng.integers(1, 3)) if integer else float(rng.normal()))
                   for _ in range(rank_one))
    return IsingModel(n=n, terms=tuple(terms), weights=np.array(weights), beta=beta,
                      constant=constant, rank_one=blocks)


def task_sizes(task, limit=16):
    ok = []
    for n in range(2, limit + 1):
        try:
            task.check_size(n)
        except ValueError:
            continue
        ok.append(n)
    return ok


@pytest.mark.parametrize("task_id", ["P01", "P02", "P03", "P04", "P05", "P06"])
def test_every_task_every_small_size(task_id):
    task = get_task(task_id)
    sizes = task_sizes(task)
    assert sizes
    for n in sizes:
        for sample in range(3):
            model = task.to_model(task.probe_params(n, 7, sample), n)
            ref = naive_log_z(model)
            assert close(brute_log_z(model), ref), (task_id, n, sample)
            assert close(brute_log_z(model, route="float"), ref), (task_id, n, sample)


def test_random_models_all_term_kinds_float_weights():
    rng = np.random.default_rng(1)
    for trial in range(40):
        n = int(rng.integers(1, 15))
        model = random_model(rng, n, fields=bool(rng.integers(2)), triples=int(rng.integers(0, 4)) if n >= 3 else 0,
                             quads=int(rng.integers(0, 4)) if n >= 4 else 0, rank_one=int(rng.integers(0, 2)),
                             constant=float(rng.normal()), beta=float(rng.uniform(0, 8)),
                             scale=float(rng.uniform(0.1, 3)))
        assert close(brute_log_z(model), naive_log_z(model)), trial


def test_random_integer_models_both_routes_and_many_betas():
    rng = np.random.default_rng(2)
    betas = np.array([0.0, 0.1, 0.7, 2.0, 5.0, 8.0])
    for trial in range(25):
        n = int(rng.integers(2, 15))
        model = random_model(rng, n, integer=True, fields=bool(rng.integers(2)), quads=int(rng.integers(0, 3)) if n >= 4 else 0,
                             triples=int(rng.integers(0, 3)) if n >= 3 else 0, rank_one=int(rng.integers(0, 2)),
                             constant=float(rng.integers(-3, 4)), beta=1.3)
        assert model.integer_energies()
        refs = np.array([naive_log_z(model.with_beta(b)) for b in betas])
        many = brute_log_z_many(model, betas)
        assert np.allclose(many, refs, rtol=RTOL, atol=RTOL), trial
        for b, ref in zip(betas, refs):
            assert close(brute_log_z(model.with_beta(b), route="float"), ref), (trial, b)
            assert close(brute_log_z(model.with_beta(b), route="histogram"), ref), (trial, b)


def test_many_betas_float_route_matches_naive():
    rng = np.random.default_rng(3)
    model = random_model(rng, 11, triples=2, quads=2, rank_one=1)
    betas = [0.0, 0.5, 3.0, 8.0]
    got = brute_log_z_many(model, betas)
    assert np.allclose(got, [naive_log_z(model.with_beta(b)) for b in betas], rtol=RTOL, atol=RTOL)


def test_low_temperature_large_weights_do_not_underflow():
    """beta * (bound - ground energy) far beyond 745: a fixed-bound accumulation would give log(0)."""
    rng = np.random.default_rng(4)
    for trial in range(6):
        n = int(rng.integers(12, 19))
        model = random_model(rng, n, scale=40.0, triples=3, beta=8.0, edge_prob=0.5)
        ref = naive_log_z(model)
        assert model.beta * (-model.energy_bound()) > 3000
        got = brute_log_z(model)
        assert np.isfinite(got) and close(got, ref), trial


def test_beta_up_to_8_at_n20_pm_one_glass():
    task = get_task("P06")
    for beta in (0.0, 0.3, 1.0, 4.0, 8.0):
        model = task.to_model(task.probe_params(20, 11, 0), 20).with_beta(beta)
        ref = naive_log_z(model)
        assert close(brute_log_z(model), ref), beta
        assert close(brute_log_z(model, route="float"), ref), beta


def test_float_route_no_drift_over_many_states():
    """2^23 states with weights k*pi (inexact in binary) against the exact integer histogram at beta*pi."""
    rng = np.random.default_rng(5)
    task = get_task("P06")
    base = task.to_model(task.probe_params(24, 3, 0), 24)
    k = rng.integers(1, 4, len(base.weights)) * np.sign(base.weights)
    integer = base.with_weights(k).with_beta(0.9 * math.pi)
    scaled = base.with_weights(k * math.pi).with_beta(0.9)
    assert close(brute_log_z(scaled, route="float"), brute_log_z(integer, route="histogram"), 1e-12)


def test_density_of_states_matches_naive_histogram():
    rng = np.random.default_rng(6)
    for trial in range(10):
        n = int(rng.integers(1, 13))
        model = random_model(rng, n, integer=True, fields=bool(rng.integers(2)),
                             quads=2 if n >= 4 else 0, constant=float(rng.integers(-2, 3)))
        energies, counts = brute_density_of_states(model)
        ref_e, ref_c = np.unique(np.round(model.energy(all_spins(n)), 9), return_counts=True)
        assert counts.dtype == np.int64 and counts.sum() == 2**n
        assert np.allclose(energies, ref_e, atol=1e-9) and np.array_equal(counts, ref_c), trial


def test_density_of_states_non_integer_unit_and_rejection():
    model = IsingModel.from_arrays(3, 1.0, [[0, 1], [1, 2]], [0.5, -1.5], h=[0.0, 0.0, 0.25])
    energies, counts = brute_density_of_states(model)
    ref_e, ref_c = np.unique(model.energy(all_spins(3)), return_counts=True)
    assert np.allclose(energies, ref_e) and np.array_equal(counts, ref_c)
    odd = IsingModel.from_arrays(3, 1.0, [[0, 1], [1, 2]], [1.0, math.sqrt(2)])
    with pytest.raises(NotApplicable):
        brute_density_of_states(odd)
    with pytest.raises(NotApplicable):
        brute_log_z(odd, route="histogram")


def test_tiny_and_degenerate_models():
    assert close(brute_log_z(IsingModel(n=1, terms=((0,),), weights=np.array([0.7]), beta=2.0)),
                 math.log(2 * math.cosh(1.4)))
    empty = IsingModel(n=5, terms=(), weights=np.zeros(0), beta=3.0, constant=1.5)
    assert close(brute_log_z(empty), 5 * math.log(2) + 4.5)
    zero_weight = IsingModel(n=3, terms=((0, 1, 2),), weights=np.array([0.0]), beta=1.0)
    assert close(brute_log_z(zero_weight), 3 * math.log(2))
    energies, counts = brute_density_of_states(empty)
    assert np.array_equal(counts, [32]) and np.allclose(energies, [-1.5])


def test_isolated_spins_are_not_enumerated_and_guard():
    rng = np.random.default_rng(7)
    small = random_model(rng, 10, triples=2)
    terms = tuple(tuple(i + 30 for i in t) for t in small.terms)  # spins 0..29 and 40..49 isolated
    wide = IsingModel(n=50, terms=terms, weights=small.weights, beta=small.beta)
    assert brute_applies(wide) is None
    assert close(brute_log_z(wide), naive_log_z(small) + 40 * math.log(2))
    chain = get_task("P01").to_model({"beta": 1.0, "J": 1.0}, MAX_BRUTE_N + 1)
    assert brute_applies(chain) is not None
    with pytest.raises(TooLarge):
        brute_log_z(chain)
    assert brute_applies(get_task("P01").to_model({"beta": 1.0, "J": 1.0}, MAX_BRUTE_N)) is None


def test_halving_symmetry_only_without_odd_terms():
    """A single 3-spin term breaks the flip symmetry; a wrongly halved enumeration would miss it."""
    model = IsingModel(n=4, terms=((0, 1), (1, 2, 3)), weights=np.array([0.3, 1.1]), beta=1.7)
    assert close(brute_log_z(model), naive_log_z(model))
    assert close(brute_log_z(model, route="float"), naive_log_z(model))
