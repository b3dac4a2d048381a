"""Chains, zero-field forests and Mattis models against enumeration and independent formulas."""

import time

import numpy as np
import pytest

from evaluators.oracles.base import NotApplicable
from evaluators.oracles.closed_forms import (
    _magnetisation_log_weights,
    chain_applies,
    chain_log_z,
    closed_form_applies,
    closed_form_log_z,
    forest_applies,
    forest_log_z,
    mattis_applies,
    mattis_log_z,
)
from evaluators.oracles.naive import naive_log_z
from tasks.catalog import p01_chain, p02_chain_fields, p05_mattis
from tasks.model import IsingModel
from scipy.special import gammaln

BETAS = (0.0, 0.05, 0.5, 1.0, 3.0, 8.0)


def close(a: float, b: float, rtol: float = 1e-9) -> bool:
    return abs(a - b) <= rtol * max(1.0, abs(b))


def paths_and_rings(rng, n: int) -> np.ndarray:
    """Random disjoint paths and rings (length >= 3) covering a random labelling of n spins."""
    perm, edges, i = rng.permutation(n), [], 0
    while i < n:
        L = int(rng.integers(1, n - i + 1))
        comp = perm[i:i + L]
        edges += [(comp[j], comp[j + 1]) for j in range(L - 1)]
        if L >= 3 and rng.random() < 0.5:
            edges.append((comp[-1], comp[0]))
        i += L
    return np.array(edges, dtype=np.int64).reshape(-1, 2)


def mattis_model(n, beta, u, a=1.0, h=None, constant=0.0):
    base = IsingModel.from_arrays(n, beta, h=h)
    return IsingModel(n=n, terms=base.terms, weights=base.weights, beta=beta, constant=constant,
                      rank_one=((np.asarray(u, dtype=float), a),))


def test_chains_open_periodic_and_unions_against_enumeration():
    rng = np.random.default_rng(21)
    for trial in range(60):
        n = int(rng.integers(1, 15))
        e = paths_and_rings(rng, n) if trial % 3 else np.stack([np.arange(n), (np.arange(n) + 1) % n], 1)[: n - (n < 3)]
        h = rng.normal(0, 1.2, n) if trial % 2 else None
        m = IsingModel.from_arrays(n, rng.choice(BETAS), e, rng.normal(0, 1.5, len(e)), h,
                                   constant=float(rng.normal()))
        assert chain_applies(m) is None
        assert close(chain_log_z(m), naive_log_z(m)), trial


def test_probe_instances_p01_p02_p05():
    for task in (p01_chain.TASK, p02_chain_fields.TASK):
        for n in task.probe_sizes:
            for sample in range(4):
                m = task.to_model(task.probe_params(n, seed=3, sample=sample), n)
                for beta in (m.beta, 8.0):
                    mb = m.with_beta(beta)
                    ref = naive_log_z(mb)
                    assert close(chain_log_z(mb), ref) and close(closed_form_log_z(mb), ref)
                    if task is p01_chain.TASK:
                        assert close(forest_log_z(mb), ref)
    task = p05_mattis.TASK
    for n in task.probe_sizes:
        for sample in range(4):
            m = task.to_model(task.probe_params(n, seed=3, sample=sample), n)
            for beta in (m.beta, 8.0):
                mb = m.with_beta(beta)
                assert close(mattis_log_z(mb), naive_log_z(mb)) and close(closed_form_log_z(mb), naive_log_z(mb))


def test_zero_field_forests_against_enumeration():
    rng = np.random.default_rng(5)
    for trial in range(30):
        n = int(rng.integers(1, 15))
        parent = [int(rng.integers(i)) for i in range(1, n)]
        e = [(p, i) for i, p in zip(range(1, n), parent) if rng.random() < 0.85]   # some cuts: a forest
        perm = rng.permutation(n)
        e = perm[np.array(e, dtype=np.int64).reshape(-1, 2)]
        m = IsingModel.from_arrays(n, rng.choice(BETAS), e, rng.normal(0, 2, len(e)), constant=0.5)
        assert forest_applies(m) is None
        assert close(forest_log_z(m), naive_log_z(m))


def test_applicability_reasons():
    ring = IsingModel.from_arrays(5, 1.0, [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)], 1.0)
    assert "cycle" in forest_applies(ring)
    assert chain_applies(ring) is None
    chain_h = IsingModel.from_arrays(3, 1.0, [(0, 1), (1, 2)], 1.0, [0.1, 0, 0])
    assert "field" in forest_applies(chain_h)
    star = IsingModel.from_arrays(4, 1.0, [(0, 1), (0, 2), (0, 3)], 1.0, [0.3, 0, 0, 0])
    assert chain_applies(star) is not None
    with pytest.raises(NotApplicable):
        chain_log_z(star)
    plaq = IsingModel(n=4, terms=((0, 1, 2, 3),), weights=np.ones(1), beta=1.0)
    assert chain_applies(plaq) is not None and forest_applies(plaq) is not None
    grid = IsingModel.from_arrays(4, 1.0, [(0, 1), (1, 3), (3, 2), (2, 0), (0, 3)], 1.0)
    assert closed_form_applies(grid) is not None
    with pytest.raises(NotApplicable):
        closed_form_log_z(grid)
    assert mattis_applies(ring) is not None
    two = IsingModel(n=3, terms=(), weights=np.zeros(0), beta=1.0, rank_one=((np.ones(3), 1.0), (np.ones(3), 2.0)))
    assert mattis_applies(two) is not None
    mixed = mattis_model(3, 1.0, [1.0, -2.0, 1.0])
    assert mattis_applies(mixed) is not None
    extra = IsingModel(n=3, terms=((0, 1),), weights=np.ones(1), beta=1.0, rank_one=((np.ones(3), 1.0),))
    with pytest.raises(NotApplicable):
        mattis_log_z(extra)


def test_mattis_against_enumeration():
    rng = np.random.default_rng(17)
    for trial in range(45):
        n = int(rng.integers(1, 15))
        c = 1.0 if trial % 2 else 0.6
        u = c * rng.choice([-1.0, 1.0] if trial % 5 else [-1.0, 0.0, 1.0], size=n)
        kind = trial % 3
        h = None if kind == 0 else (0.4 * np.sign(u + 0.5) if kind == 1 else rng.normal(size=n))
        m = mattis_model(n, rng.choice(BETAS), u, a=float(rng.normal()), h=h, constant=0.7)
        assert mattis_applies(m) is None
        assert close(mattis_log_z(m), naive_log_z(m)), trial


def test_beta_zero_is_n_log_2():
    rng = np.random.default_rng(1)
    n = 1000
    m = mattis_model(n, 0.0, rng.choice([-1.0, 1.0], n), h=rng.normal(size=n))
    assert close(mattis_log_z(m), n * np.log(2.0), 1e-14)
    e = np.stack([np.arange(n), (np.arange(n) + 1) % n], 1)
    m = IsingModel.from_arrays(n, 0.0, e, rng.normal(size=n), rng.normal(size=n))
    assert close(chain_log_z(m), n * np.log(2.0), 1e-14)


def test_long_open_chain_transfer_vs_product_formula():
    rng = np.random.default_rng(2)
    for n, beta in ((100_000, 8.0), (10_000, 0.3)):
        perm = rng.permutation(n)
        e = perm[np.stack([np.arange(n - 1), np.arange(1, n)], 1)]
        m = IsingModel.from_arrays(n, beta, e, rng.normal(0, 1.5, n - 1))
        m.couplings, m.fields                                   # build the model views outside the timing
        chain_log_z(m)                                          # numba load
        t = time.perf_counter()
        v = chain_log_z(m)
        assert time.perf_counter() - t < 1.0
        assert close(v, forest_log_z(m), 1e-12)


def test_long_uniform_ring_against_eigenvalues():
    """Periodic uniform chain: Z = l+^N + l-^N, l = e^K cosh h +- sqrt(e^2K sinh^2 h + e^-2K)."""
    cases = ((100_000, 1.0, 0.0, 0.7), (100_000, -0.8, 0.5, 1.1), (10_001, 1.0, 0.3, 2.0),
             (9_999, -1.0, 0.0, 3.0), (10_000, 0.9, -0.01, 8.0), (17, -1.2, 0.2, 0.9))
    for n, J, h, beta in cases:
        e = np.stack([np.arange(n), (np.arange(n) + 1) % n], 1)
        K, x = beta * J, beta * h
        root = np.sqrt(np.exp(2 * K) * np.sinh(x) ** 2 + np.exp(-2 * K))
        lp, lm = np.exp(K) * np.cosh(x) + root, np.exp(K) * np.cosh(x) - root
        ref = n * np.log(lp) + np.log1p((lm / lp) ** n)
        m = IsingModel.from_arrays(n, beta, e, J, np.full(n, h))
        assert close(chain_log_z(m), ref, 1e-12), (n, J, h, beta)


def _curie_weiss_integral(n: int, beta: float, a: float, h: float) -> float:
    """Hubbard-Stratonovich: exp(ba M^2/2) = sqrt(ba/2pi) int dy exp(-ba y^2/2 + ba y M) (a > 0),
    so Z = e^(-ba n/2) sqrt(ba/2pi) int dy exp(-ba y^2/2) (2 cosh(ba y + b h))^n; trapezoid in log scale."""
    ba = beta * a
    y = np.linspace(-1.5 * n - 10, 1.5 * n + 10, 600_001)
    x = ba * y + beta * h
    g = -0.5 * ba * y * y + n * (np.abs(x) + np.log1p(np.exp(-2 * np.abs(x))))
    top = g.max()
    integral = np.trapezoid(np.exp(g - top), y)
    return float(-0.5 * ba * n + 0.5 * np.log(ba / (2 * np.pi)) + top + np.log(integral))


def test_large_mattis_against_gaussian_integral():
    rng = np.random.default_rng(12)
    n = 2000
    u = rng.choice([-1.0, 1.0], n)
    for a, beta, h in ((1.0, 0.8, 0.0), (1.0, 1.3, 0.05), (1.0 / n, 0.7, 0.0), (1.0 / n, 1.0, 0.0),
                       (1.0 / n, 1.4, 0.02), (2.0 / n, 8.0, -0.1)):
        m = mattis_model(n, beta, u, a=a, h=h * u)              # gauged field h * u_i u_i = h uniform
        assert close(mattis_log_z(m), _curie_weiss_integral(n, beta, a, h), 1e-10), (a, beta, h)


def test_magnetisation_dp_equals_binomials():
    """The O(n^2) field DP, fed a uniform field, reproduces log binom(n, k) + x (2k - n)."""
    n = 2000
    k = np.arange(n + 1)
    for x in (0.0, 0.37, -2.0):
        dp = _magnetisation_log_weights(np.full(n, x))
        ref = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1) + x * (2 * k - n)
        assert np.max(np.abs(dp - ref) / np.maximum(1.0, np.abs(ref))) < 1e-11


def test_mattis_large_n_speed():
    rng = np.random.default_rng(4)
    n = 10_000
    u = rng.choice([-1.0, 1.0], n)
    m = mattis_model(n, 0.9, u, a=1.0 / n, h=0.1 * u)
    m.fields
    t = time.perf_counter()
    v = mattis_log_z(m)
    assert time.perf_counter() - t < 1.0 and np.isfinite(v)
    assert close(v, _curie_weiss_integral(n, 0.9, 1.0 / n, 0.1), 1e-10)
