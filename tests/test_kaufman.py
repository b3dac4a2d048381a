"""Kaufman's torus formula against enumeration, the transfer matrix and a multiprecision evaluation."""

import time

import numpy as np
import pytest

from evaluators.oracles.base import NotApplicable
from evaluators.oracles.kaufman import kaufman_applies, kaufman_log_z, kaufman_torus_log_z
from evaluators.oracles.naive import naive_log_z
from evaluators.oracles.transfer_matrix import transfer_matrix_log_z
from tasks.catalog.p03_torus import TASK as P03
from tasks.catalog.p03_torus import torus_edges
from tasks.model import IsingModel, Lattice

KC = 0.5 * np.log1p(np.sqrt(2.0))
ONSAGER_KC = np.log(2.0) / 2 + 2 * 0.915965594177219015054603514932384 / np.pi   # ln Z / N at K_c, L -> inf
KS = (1e-6, 0.05, 0.2, 0.3, 0.4, KC - 1e-6, KC, KC + 1e-6, 0.5, 0.8, 1.5, 3.0, 8.0)


def close(a: float, b: float, rtol: float = 1e-9) -> bool:
    return abs(a - b) <= rtol * max(1.0, abs(b))


def rect_torus(rows: int, cols: int, beta: float, J: float = 1.0, h=None, constant: float = 0.0) -> IsingModel:
    """Homogeneous rows x cols torus with coupling J at inverse temperature beta (K = beta J)."""
    r, c = np.divmod(np.arange(rows * cols), cols)
    site = np.arange(rows * cols)
    e = np.concatenate([np.stack([site, r * cols + (c + 1) % cols], 1),
                        np.stack([site, ((r + 1) % rows) * cols + c], 1)])
    return IsingModel.from_arrays(rows * cols, beta, e, J, h, constant=constant,
                                  lattice=Lattice(rows, cols, True, True))


@pytest.mark.parametrize("rows,cols", [(3, 3), (4, 4), (3, 4), (4, 3), (4, 5), (3, 5)])
def test_against_enumeration_ferromagnet(rows, cols):
    for K in KS if rows * cols <= 16 else (0.2, KC - 1e-6, KC, 0.8):   # n = 20 enumerations are slow
        m = rect_torus(rows, cols, K / 0.7, J=0.7)
        ref = naive_log_z(m)
        assert close(kaufman_log_z(m), ref), (rows, cols, K)
        assert close(kaufman_torus_log_z(K, rows, cols), ref)


def test_sign_of_the_zero_mode_matters():
    """Above T_c (K < K*) the g_0 term is negative; |g_0| would be off by 0.558 at 4 x 4, K = 0.3."""
    assert 0.3 < KC
    ref = naive_log_z(rect_torus(4, 4, 0.3))
    assert close(kaufman_torus_log_z(0.3, 4, 4), ref)
    for K in (0.3, 0.2, 0.41):                       # the exact g_0 term is negative here
        assert not close(kaufman_abs_zero_mode(K, 4, 4), naive_log_z(rect_torus(4, 4, K)), 1e-3)


@pytest.mark.parametrize("rows,cols", [(4, 4), (4, 6), (6, 4)])
def test_antiferromagnet_on_even_torus_by_gauge(rows, cols):
    for K in (-0.1, -0.3, -KC, -1.0, -4.0):
        m = rect_torus(rows, cols, -K, J=-1.0)          # beta = -K > 0, J = -1: beta J = K
        assert m.beta > 0 and m.weights[0] == -1.0
        ref = naive_log_z(m) if rows * cols <= 16 else transfer_matrix_log_z(m)
        assert close(kaufman_log_z(m), ref)
        assert close(kaufman_torus_log_z(K, rows, cols), kaufman_torus_log_z(-K, rows, cols), 1e-14)


def test_odd_antiferromagnet_and_other_models_are_not_applicable():
    with pytest.raises(NotApplicable, match="frustrated"):
        kaufman_log_z(rect_torus(3, 4, 0.5, J=-1.0))
    with pytest.raises(NotApplicable):
        kaufman_torus_log_z(-0.5, 5, 5)
    rng = np.random.default_rng(0)
    assert kaufman_applies(rect_torus(4, 4, 0.5, h=rng.normal(size=16))) is not None       # fields
    m = rect_torus(4, 4, 0.5)
    assert kaufman_applies(m) is None
    assert kaufman_applies(m.with_weights(m.weights * rng.uniform(0.5, 1.5, len(m.weights)))) is not None
    assert kaufman_applies(IsingModel.from_arrays(16, 0.5, torus_edges(4), 1.0)) is not None  # no hint
    open_hint = IsingModel.from_arrays(16, 0.5, torus_edges(4), 1.0, lattice=Lattice(4, 4))
    assert kaufman_applies(open_hint) is not None
    missing = IsingModel.from_arrays(16, 0.5, torus_edges(4)[:-1], 1.0, lattice=Lattice(4, 4, True, True))
    assert kaufman_applies(missing) is not None
    for reason_model in (open_hint, missing):
        with pytest.raises(NotApplicable):
            kaufman_log_z(reason_model)


def test_zero_coupling_constant_and_p03_probes():
    assert kaufman_torus_log_z(0.0, 5, 7) == 35 * np.log(2.0)
    assert close(kaufman_torus_log_z(1e-12, 5, 7), 35 * np.log(2.0), 1e-14)
    m = rect_torus(3, 4, 0.6, constant=2.5)
    assert close(kaufman_log_z(m), naive_log_z(m))
    for n in P03.probe_sizes:
        for sample in range(4):
            m = P03.to_model(P03.probe_params(n, seed=1, sample=sample), n)
            assert close(kaufman_log_z(m), naive_log_z(m))


@pytest.mark.parametrize("L", [5, 6, 7, 8])
def test_against_transfer_matrix(L):
    for K in (0.1, 0.35, KC, 0.47, 1.0, 6.0):
        m = rect_torus(L, L, K)
        assert close(kaufman_log_z(m), transfer_matrix_log_z(m)), (L, K)


def test_antiferromagnet_against_transfer_matrix_down_to_low_temperature():
    for L in (6, 8):
        for beta in (0.3, KC, 2.0, 8.0, 30.0):
            m = rect_torus(L, L, beta, J=-1.0)
            assert close(kaufman_log_z(m), transfer_matrix_log_z(m)), (L, beta)


def test_rectangular_against_transfer_matrix():
    for rows, cols in ((5, 8), (8, 5), (6, 7)):
        for K in (0.3, KC, 0.9):
            m = rect_torus(rows, cols, K)
            assert close(kaufman_log_z(m), transfer_matrix_log_z(m)), (rows, cols, K)


@pytest.mark.slow
@pytest.mark.parametrize("L", [9, 10])
def test_against_transfer_matrix_large(L):
    for K in (0.2, KC, 0.6):
        m = rect_torus(L, L, K)
        assert close(kaufman_log_z(m), transfer_matrix_log_z(m)), (L, K)


def _kaufman_mp(K: float, m: int, n: int, dps: int = 60, abs_zero_mode: bool = False) -> float:
    """The textbook formula in multiprecision: arccosh directly, products of cosh/sinh, no logs tricks."""
    mp = pytest.importorskip("mpmath").mp
    mp.dps = dps
    K = mp.mpf(K)
    Ks = mp.atanh(mp.e ** (-2 * K))
    c2, s2, c2s, s2s = mp.cosh(2 * K), mp.sinh(2 * K), mp.cosh(2 * Ks), mp.sinh(2 * Ks)
    g = [mp.acosh(c2s * c2 - s2s * s2 * mp.cos(mp.pi * l / n)) for l in range(2 * n)]
    g[0] = 2 * abs(K - Ks) if abs_zero_mode else 2 * (K - Ks)
    z1 = mp.fprod(2 * mp.cosh(m * g[l] / 2) for l in range(1, 2 * n, 2))
    z2 = mp.fprod(2 * mp.sinh(m * g[l] / 2) for l in range(1, 2 * n, 2))
    z3 = mp.fprod(2 * mp.cosh(m * g[l] / 2) for l in range(0, 2 * n, 2))
    z4 = mp.fprod(2 * mp.sinh(m * g[l] / 2) for l in range(0, 2 * n, 2))
    return float(mp.log((2 * s2) ** (mp.mpf(m * n) / 2) * (z1 + z2 + z3 + z4) / 2))


def kaufman_abs_zero_mode(K: float, m: int, n: int) -> float:
    """The formula with |g_0| (the classic slip), evaluated in multiprecision."""
    return _kaufman_mp(K, m, n, abs_zero_mode=True)


@pytest.mark.parametrize("L", [16, 64, 256])
def test_precision_against_multiprecision(L):
    for K in (0.1, 0.3, KC - 1e-4, KC, KC + 1e-4, 0.6, 2.0, 8.0):
        ref = _kaufman_mp(K, L, L, dps=40 + L // 4)
        assert abs(kaufman_torus_log_z(K, L, L) - ref) <= 4e-15 * abs(ref), (L, K)


def test_critical_point_anchor_and_huge_torus():
    assert abs(kaufman_torus_log_z(KC, 1000, 1000) / 1e6 - ONSAGER_KC) < 1e-5
    t = time.perf_counter()
    v = kaufman_torus_log_z(KC, 100_000, 100_000)
    assert time.perf_counter() - t < 2.0
    assert np.isfinite(v) and abs(v / 1e10 - ONSAGER_KC) < 1e-9
    # deep in the ordered phase ln Z -> 2 N K + ln 2 (the two ground states)
    assert close(kaufman_torus_log_z(8.0, 64, 64), 2 * 64 * 64 * 8.0 + np.log(2.0), 1e-14)
