"""The planar oracle (Kac-Ward and dual Kasteleyn forms) against naive enumeration on many small
graphs, and against an exact row transfer matrix on 16 x 16 grids and long strips down to
beta = 8 (the regime where a float64 high-temperature determinant fails)."""

from __future__ import annotations

from fractions import Fraction

import networkx as nx
import numpy as np
import pytest
from scipy.spatial import Delaunay

from evaluators.oracles.base import NotApplicable, TooLarge
from evaluators.oracles.naive import naive_log_z
from evaluators.oracles.transfer_matrix import transfer_matrix_log_z
from evaluators.oracles.planar import (
    planar_applies,
    planar_dense_baseline_log_z,
    planar_fields_applies,
    planar_fields_log_z,
    planar_log_z,
    uses_double_double,
)
from tasks.model import IsingModel, Lattice
from tasks.registry import get_task

REL = 1e-9


def close(a: float, b: float, rel: float = REL) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(b))


# -- an independent exact reference: row-by-row transfer matrix on an open grid -----------------

def grid_row_transfer_log_z(Kh: np.ndarray, Kv: np.ndarray) -> float:
    """ln Z of the open R x C grid with couplings Kh (R, C-1) and Kv (R-1, C) (already times
    beta): a vector over the 2^C spins of a row, all weights positive, rescaled every row."""
    R, C = Kh.shape[0], Kh.shape[1] + 1
    pair = np.array([[1.0, -1.0], [-1.0, 1.0]])  # s s' for bits (0 -> +1, 1 -> -1)
    psi = np.ones(2**C)
    log_scale = 0.0
    for r in range(R):
        if r > 0:
            for c in range(C):  # psi'(.., s'_c, ..) = sum_{s_c} exp(Kv s_c s'_c) psi(.., s_c, ..)
                t = psi.reshape(2 ** (C - 1 - c), 2, 2**c)  # middle axis: bit c
                same, flip = np.exp(Kv[r - 1, c]), np.exp(-Kv[r - 1, c])
                psi = np.stack([same * t[:, 0] + flip * t[:, 1], flip * t[:, 0] + same * t[:, 1]],
                               axis=1).reshape(-1)
        for c in range(C - 1):  # psi *= exp(Kh s_c s_{c+1}); bit c of the index is spin c
            t = psi.reshape(2 ** (C - 2 - c), 2, 2, 2**c)  # axes: bit c+1, bit c
            t *= np.exp(Kh[r, c] * pair)[None, :, :, None]
        top = psi.max()
        psi /= top
        log_scale += np.log(top)
    return float(log_scale + np.log(psi.sum()))


def grid_model(Jh: np.ndarray, Jv: np.ndarray, beta: float) -> IsingModel:
    R, C = Jh.shape[0], Jh.shape[1] + 1
    r, c = np.divmod(np.arange(R * C), C)
    h = (r * C + c)[c < C - 1]
    v = (r * C + c)[r < R - 1]
    edges = np.concatenate([np.stack([h, h + 1], 1), np.stack([v, v + C], 1)])
    J = np.concatenate([Jh.ravel(), Jv.ravel()])
    return IsingModel.from_arrays(R * C, beta, edges, J, lattice=Lattice(R, C))


def p04_model(L: int, seed: int, beta: float, k: int = 0) -> tuple[IsingModel, np.ndarray, np.ndarray]:
    task = get_task("P04")
    params = task.probe_params(L * L, seed, k)
    return (task.to_model(params, L * L).with_beta(beta),
            np.array(params["Jh"]), np.array(params["Jv"]))


def test_row_transfer_reference_matches_naive():
    rng = np.random.default_rng(0)
    for R, C in [(2, 3), (3, 3), (4, 4), (3, 5)]:
        Jh, Jv = rng.normal(size=(R, C - 1)), rng.normal(size=(R - 1, C))
        m = grid_model(Jh, Jv, 1.3)
        assert close(grid_row_transfer_log_z(1.3 * Jh, 1.3 * Jv), naive_log_z(m), 1e-12)


# -- random small planar graphs, all checked against naive enumeration --------------------------

def _couplings(rng, m, kind):
    if kind == "pm":
        return rng.choice([-1.0, 1.0], m)
    if kind == "ferro":
        return np.ones(m)
    return rng.normal(size=m)


def _grid(rng, kind):
    R, C = int(rng.integers(2, 5)), int(rng.integers(2, 6))
    return grid_model(_couplings(rng, R * (C - 1), kind).reshape(R, C - 1),
                      _couplings(rng, (R - 1) * C, kind).reshape(R - 1, C), 1.0)


def _delaunay(rng, kind):
    n = int(rng.integers(4, 14))
    pts = rng.random((n, 2))
    tri = Delaunay(pts).simplices
    e = np.sort(np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]]), axis=1)
    e = np.unique(e, axis=0)
    e = e[rng.random(len(e)) < 0.8]  # drop some edges: bridges, trees, isolated vertices appear
    return IsingModel.from_arrays(n, 1.0, e, _couplings(rng, len(e), kind), positions=pts)


def _diagonal_grid(rng, kind):
    """Grid with random diagonals, some edges removed, embedded by its coordinates."""
    R, C = int(rng.integers(2, 4)), int(rng.integers(2, 5))
    r, c = np.divmod(np.arange(R * C), C)
    e = [(i, i + 1) for i in range(R * C) if c[i] < C - 1]
    e += [(i, i + C) for i in range(R * C) if r[i] < R - 1]
    for i in range(R * C):
        if c[i] < C - 1 and r[i] < R - 1 and rng.random() < 0.5:
            e.append((i, i + C + 1) if rng.random() < 0.5 else (i + 1, i + C))
    e = np.array(e)
    e = e[rng.random(len(e)) < 0.85]
    pos = np.stack([c, -r], 1).astype(float)
    return IsingModel.from_arrays(R * C, 1.0, e, _couplings(rng, len(e), kind), positions=pos)


def _components(rng, kind):
    """Two separate pieces (a cycle with a pendant path, a triangle), isolated vertices, no positions."""
    a = [(0, 1), (1, 2), (2, 3), (3, 0), (3, 4), (4, 5)]
    b = [(7, 8), (8, 9), (9, 7)]
    e = np.array(a + b)
    return IsingModel.from_arrays(11, 1.0, e, _couplings(rng, len(e), kind))


def _networkx_planar(rng, kind):
    """Planar graphs without any coordinates (wheel, ladder with diagonals, K4, a fan)."""
    choice = int(rng.integers(4))
    if choice == 0:
        g = nx.wheel_graph(int(rng.integers(4, 10)))
    elif choice == 1:
        k = int(rng.integers(3, 7))
        g = nx.ladder_graph(k)  # rails 0..k-1 and k..2k-1; add diagonals of two squares
        g.add_edges_from([(0, k + 1), (k + 2, 1)])
    elif choice == 2:
        g = nx.complete_graph(4)
    else:
        g = nx.cycle_graph(int(rng.integers(5, 12)))
        n = g.number_of_nodes()
        g.add_edges_from([(0, k) for k in range(2, n - 1)])  # a fan triangulation
    e = np.array(sorted(tuple(sorted(x)) for x in g.edges()))
    return IsingModel.from_arrays(g.number_of_nodes(), 1.0, e, _couplings(rng, len(e), kind))


FAMILIES = [_grid, _delaunay, _diagonal_grid, _components, _networkx_planar]
BETAS = [0.0, 0.05, 0.3, 0.7, 1.0, 1.5, 2.5, 4.0, 6.0, 8.0]


def test_low_temperature_form_matches_naive_on_many_planar_graphs():
    rng = np.random.default_rng(1)
    checked = 0
    for trial in range(240):
        family = FAMILIES[trial % len(FAMILIES)]
        kind = ("pm", "gauss", "ferro")[trial % 3]
        base = family(rng, kind)
        beta = BETAS[trial % len(BETAS)] if trial % 4 else float(rng.uniform(0, 8))
        m = base.with_beta(beta)
        ref = naive_log_z(m)
        for precision in ("double", "double-double"):
            got = planar_log_z(m, "low_t", precision=precision)
            assert close(got, ref), (trial, family.__name__, kind, beta, precision, got, ref)
        checked += 1
    assert checked == 240


def test_kac_ward_form_matches_naive_where_it_is_stable():
    """The high-temperature form at moderate beta (any couplings) and for ferromagnets (any beta)."""
    rng = np.random.default_rng(2)
    for trial in range(120):
        family = FAMILIES[trial % len(FAMILIES)]
        kind = ("pm", "gauss", "ferro")[trial % 3]
        beta = float(rng.uniform(0, 8)) if kind == "ferro" else float(rng.uniform(0, 1.2))
        m = family(rng, kind).with_beta(beta)
        got, ref = planar_log_z(m, "high_t"), naive_log_z(m)
        assert close(got, ref), (trial, family.__name__, kind, beta, got, ref)


def test_constant_negative_beta_and_empty_graph():
    m = IsingModel.from_arrays(3, 0.7, [(0, 1), (1, 2)], [1.0, -2.0])
    shifted = IsingModel(n=3, terms=m.terms, weights=m.weights, beta=0.7, constant=1.5)
    assert close(planar_log_z(shifted), naive_log_z(shifted))
    assert close(planar_log_z(shifted) - planar_log_z(m), 0.7 * 1.5, 1e-12)
    neg = _grid(np.random.default_rng(3), "pm").with_beta(-1.7)
    assert close(planar_log_z(neg), naive_log_z(neg))
    empty = IsingModel(n=5, terms=(), weights=np.zeros(0), beta=2.0)
    assert close(planar_log_z(empty), 5 * np.log(2), 1e-14)
    assert close(planar_log_z(empty, "high_t"), 5 * np.log(2), 1e-14)


def test_positions_that_are_not_a_planar_drawing_fall_back_to_networkx():
    rng = np.random.default_rng(4)
    m = _grid(rng, "gauss").with_beta(1.1)
    scrambled = IsingModel(n=m.n, terms=m.terms, weights=m.weights, beta=m.beta,
                           positions=rng.random((m.n, 2)))
    for method in ("low_t", "high_t"):
        assert close(planar_log_z(scrambled, method), naive_log_z(m))


# -- precision at low temperature against the row transfer matrix ------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_p04_16x16_matches_row_transfer_up_to_beta_8(seed):
    errors = []
    for beta in (0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0):
        m, Jh, Jv = p04_model(16, seed, beta)
        ref = grid_row_transfer_log_z(beta * Jh, beta * Jv)
        got = planar_log_z(m)
        errors.append(abs(got - ref))
        assert close(got, ref), (seed, beta, got - ref)
    assert max(errors) < 1e-9  # absolute too: about 1e-11 measured


def test_low_temperature_strip_and_gaussian_couplings_match_row_transfer():
    rng = np.random.default_rng(5)
    for R, C, beta, kind in [(96, 10, 8.0, "pm"), (40, 12, 6.0, "pm"), (16, 16, 8.0, "gauss"),
                             (24, 12, 5.0, "gauss")]:
        Jh = _couplings(rng, R * (C - 1), kind).reshape(R, C - 1)
        Jv = _couplings(rng, (R - 1) * C, kind).reshape(R - 1, C)
        ref = grid_row_transfer_log_z(beta * Jh, beta * Jv)
        got = planar_log_z(grid_model(Jh, Jv, beta))
        assert close(got, ref), (R, C, beta, kind, got - ref)


def test_float64_high_temperature_form_does_lose_precision_for_glasses():
    """Documents why "low_t" is the default: Kac-Ward in float64 is off at beta = 8."""
    m, Jh, Jv = p04_model(16, 0, 8.0)
    ref = grid_row_transfer_log_z(8 * Jh, 8 * Jv)
    assert abs(planar_log_z(m, "high_t") - ref) > 1e-3
    assert close(planar_log_z(m), ref)


def test_against_transfer_matrix_oracle_if_present():
    tm = pytest.importorskip("evaluators.oracles.transfer_matrix")
    for beta in (1.0, 8.0):
        m, _, _ = p04_model(16, 7, beta)
        assert close(planar_log_z(m), tm.transfer_matrix_log_z(m))


# -- forms and arithmetic agree with each other at sizes beyond any enumeration ----------------

def test_p04_32x32_forms_agree():
    for beta in (0.3, 0.9):
        m, _, _ = p04_model(32, 11, beta)
        lo = planar_log_z(m, "low_t", precision="double")
        assert close(planar_log_z(m, "high_t"), lo, 1e-11)
        assert close(planar_log_z(m, "low_t", precision="double-double"), lo, 1e-12)
    ferro = grid_model(np.ones((32, 31)), np.ones((31, 32)), 1.0)
    for beta in (0.2, 0.4406868, 1.0, 4.0):
        f = ferro.with_beta(beta)
        assert close(planar_log_z(f, "high_t"), planar_log_z(f), 1e-11)


def test_dense_baseline_matches_at_moderate_beta():
    m, _, _ = p04_model(8, 3, 0.8)
    ref = planar_log_z(m)
    assert close(planar_dense_baseline_log_z(m), ref, 1e-11)
    assert close(planar_dense_baseline_log_z(m, "high_t"), ref, 1e-11)


def test_precision_switch():
    m, _, _ = p04_model(4, 0, 2.9)
    assert not uses_double_double(m)
    assert uses_double_double(m.with_beta(3.1))
    assert uses_double_double(m, "double-double") and not uses_double_double(m.with_beta(9), "double")
    with pytest.raises(ValueError):
        planar_log_z(m, precision="quad")
    with pytest.raises(ValueError):
        planar_log_z(m, method="transfer")
    cold = m.with_beta(400.0)               # beyond float64's weights: the ground-state line
    idx = np.arange(2 ** 16)[:, None]
    energies = cold.energy(1.0 - 2.0 * ((idx >> np.arange(16)) & 1))
    e0 = energies.min()
    assert close(planar_log_z(cold), -400.0 * e0 + np.log(np.sum(np.isclose(energies, e0))), 1e-14)
    rng = np.random.default_rng(3)           # unequal magnitudes that cold: refused, by name
    with pytest.raises(TooLarge, match="underflow"):
        planar_log_z(grid_model(rng.normal(size=(4, 3)), rng.normal(size=(3, 4)), 1000.0))


# -- applicability --------------------------------------------------------------------------

def test_applies_and_not_applicable():
    m, _, _ = p04_model(6, 0, 1.0)
    assert planar_applies(m) is None
    k4 = IsingModel.from_arrays(4, 1.0, list(nx.complete_graph(4).edges()), 1.0)
    assert planar_applies(k4) is None
    k5 = IsingModel.from_arrays(5, 1.0, list(nx.complete_graph(5).edges()), 1.0)
    torus = get_task("P03").to_model(get_task("P03").probe_params(16, 0, 0), 16)
    fields = IsingModel.from_arrays(3, 1.0, [(0, 1)], [1.0], h=[0.0, 0.5, 0.0])
    triple = IsingModel(n=3, terms=((0, 1, 2),), weights=np.ones(1), beta=1.0)
    mattis = get_task("P05").to_model(get_task("P05").probe_params(8, 0, 0), 8)
    for bad in (k5, torus, fields, triple, mattis):
        reason = planar_applies(bad)
        assert isinstance(reason, str) and reason
        with pytest.raises(NotApplicable):
            planar_log_z(bad)


def _grid_with_top_row_fields(L: int, beta: float, seed: int, integer_fields: bool = False) -> IsingModel:
    rng = np.random.default_rng(seed)
    idx = np.arange(L * L).reshape(L, L)
    edges = np.concatenate([np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
                            np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1)])
    h = np.zeros(L * L)
    h[:L] = rng.choice([-1.0, 1.0], L) if integer_fields else rng.uniform(-1.0, 1.0, L)
    h[-1] = 1.0 if integer_fields else 0.4                     # the far corner is on the outer face too
    return IsingModel.from_arrays(L * L, beta, edges, rng.choice([-1.0, 1.0], len(edges)), h,
                                  lattice=Lattice(L, L, False, False), constant=0.3)


@pytest.mark.parametrize("beta", [0.3, 2.0, 5.0])
def test_fields_on_the_outer_face_go_through_a_ghost_spin(beta):
    """A +-J grid with fields on its top row and one corner: a spin coupled to those spins by their
    fields keeps the graph planar and has Z' = 2 Z; against enumeration (4 x 4) and the transfer
    matrix (16 x 16)."""
    small = _grid_with_top_row_fields(4, beta, 1)
    assert planar_fields_applies(small) is None and "nonzero fields" in planar_applies(small)
    assert planar_fields_log_z(small) == pytest.approx(naive_log_z(small), rel=1e-13)
    large = _grid_with_top_row_fields(16, beta, 2)
    assert planar_fields_log_z(large) == pytest.approx(transfer_matrix_log_z(large), rel=1e-12)


def test_cold_fields_through_a_ghost_spin_need_a_common_unit():
    """Cold, the planar oracle applies to fields only when they and the couplings have a common unit
    (its ground-state line): +-1 fields at beta = 40 are exact against the transfer matrix; continuous
    fields there are refused in applies, not attempted."""
    integer = _grid_with_top_row_fields(12, 40.0, 3, integer_fields=True)
    assert planar_fields_applies(integer) is None
    assert planar_fields_log_z(integer) == pytest.approx(transfer_matrix_log_z(integer), rel=1e-12)
    continuous = _grid_with_top_row_fields(12, 60.0, 3)
    assert "no common unit" in planar_fields_applies(continuous)
    with pytest.raises(NotApplicable, match="no common unit"):
        planar_fields_log_z(continuous)
    everywhere = IsingModel.from_arrays(4, 1.0, list(nx.complete_graph(4).edges()), 1.0, h=[0.5, 0.5, -0.3, 0.2])
    assert "not planar" in planar_fields_applies(everywhere)   # K4 with a ghost joined to all four is K5


# -- building blocks --------------------------------------------------------------------------

def test_sparse_skew_pfaffian_matches_dense_determinant():
    from scipy.sparse import coo_array

    from evaluators.oracles.linalg.skew_pfaffian import PfaffianSettings, PfaffianSettings, log_abs_pfaffian

    rng = np.random.default_rng(6)
    for trial in range(30):
        N = int(rng.integers(1, 40)) * 2
        mask = np.triu(rng.random((N, N)) < rng.uniform(0.05, 0.4), 1)
        i, j = np.nonzero(mask)
        v = rng.normal(size=len(i)) * 10.0 ** rng.integers(-6, 1, len(i))
        A = coo_array((np.concatenate([v, -v]), (np.concatenate([i, j]), np.concatenate([j, i]))),
                      shape=(N, N))
        sign, logdet = np.linalg.slogdet(A.toarray())
        for extended in (False, True):
            got = log_abs_pfaffian(A, settings=PfaffianSettings(extended=extended, leaf_nodes=int(rng.integers(2, 20))))
            if sign == 0:
                assert got == -np.inf or got < 0.5 * logdet + 1e-6
            else:
                assert abs(got - 0.5 * logdet) < 1e-8 * max(1.0, abs(logdet)), (trial, extended)


def test_double_double_arithmetic_is_exact_to_32_digits():
    from numba import njit

    from evaluators.oracles.linalg.double_double import dd_add, dd_div, dd_mul

    @njit
    def ops(a, b):
        return dd_div(a, 0.0, b, 0.0), dd_mul(a, 0.0, b, 0.0), dd_add(a, 0.0, -b, 0.0)

    rng = np.random.default_rng(7)
    for a, b in rng.normal(size=(50, 2)):
        q, p, s = ops(a, b)
        fa, fb = Fraction(a), Fraction(b)
        assert abs(Fraction(q[0]) + Fraction(q[1]) - fa / fb) <= abs(fa / fb) * Fraction(1, 2**100)
        assert Fraction(p[0]) + Fraction(p[1]) == fa * fb  # exact
        assert Fraction(s[0]) + Fraction(s[1]) == fa - fb  # exact


# -- slow: bigger grids ----------------------------------------------------------------------

@pytest.mark.slow
def test_p04_64_forms_and_arithmetic_agree():
    for beta in (0.5, 1.0):
        m, _, _ = p04_model(64, 0, beta)
        lo = planar_log_z(m, precision="double")
        assert close(planar_log_z(m, precision="double-double"), lo, 1e-12)
        assert close(planar_log_z(m, "high_t"), lo, 1e-11)


@pytest.mark.slow
def test_long_strip_low_temperature_matches_row_transfer():
    rng = np.random.default_rng(8)
    for beta in (6.0, 8.0):
        Jh = rng.choice([-1.0, 1.0], (256, 15))
        Jv = rng.choice([-1.0, 1.0], (255, 16))
        ref = grid_row_transfer_log_z(beta * Jh, beta * Jv)
        assert close(planar_log_z(grid_model(Jh, Jv, beta)), ref, 1e-12)


@pytest.mark.slow
def test_p04_128_low_temperature_independent_of_elimination_order():
    """Double-double results do not depend on the ordering or pivot threshold (float64 does, at
    the 1e-10 level here): evidence of stability where no exact reference reaches."""
    from evaluators.oracles.dual_pfaffian import dual_pfaffian_matrix
    from evaluators.oracles.planar import planar_inputs
    from evaluators.oracles.linalg.skew_pfaffian import PfaffianSettings, log_abs_pfaffian

    m, _, _ = p04_model(128, 0, 8.0)
    emb, K, _, _ = planar_inputs(m, "low_t")
    A, pre, unit_ptr, coords = dual_pfaffian_matrix(emb, K)
    a = log_abs_pfaffian(A, unit_ptr, coords, settings=PfaffianSettings(extended=True))
    b = log_abs_pfaffian(A, unit_ptr, coords, settings=PfaffianSettings(extended=True, u=0.5, leaf_nodes=24))
    assert close(pre + a, pre + b, 1e-14)
    assert close(planar_log_z(m), pre + a, 1e-15)


# -- the cold regime: a running error bound decides, never a wrong or infinite value ---------

def test_running_error_bound_covers_the_actual_error():
    """On random sparse skew matrices whose entries span many orders of magnitude, the bound of
    the bounded elimination is at least the actual error against a dense slogdet."""
    from scipy.sparse import coo_array

    from evaluators.oracles.linalg.skew_pfaffian import PfaffianSettings, log_abs_pfaffian, log_abs_pfaffian_bounded

    rng = np.random.default_rng(9)
    for trial in range(20):
        N = int(rng.integers(4, 30)) * 2
        mask = np.triu(rng.random((N, N)) < 0.2, 1)
        i, j = np.nonzero(mask)
        v = rng.normal(size=len(i)) * 10.0 ** rng.integers(-8, 1, len(i))
        A = coo_array((np.concatenate([v, -v]), (np.concatenate([i, j]), np.concatenate([j, i]))), shape=(N, N))
        sign, logdet = np.linalg.slogdet(A.toarray())
        if sign == 0:
            continue
        for extended in (False, True):
            value, bound = log_abs_pfaffian_bounded(A, settings=PfaffianSettings(extended=extended))
            same = log_abs_pfaffian(A, settings=PfaffianSettings(extended=extended, half_kernel=False))
            assert value == same  # the same elimination
            assert abs(value - 0.5 * logdet) <= bound + 1e-12 * abs(logdet), (trial, extended)


def test_cold_grid_where_fixed_precision_fails_comes_from_the_ground_state_line():
    """12 x 12 +-J at beta = 40: the unguarded elimination in the old order (single units) loses
    ground states (off by -ln 0.7 against variable elimination in log space) and its running
    bound says so; the oracle answers
    from its certified ground-state line instead, right at beta = 40, 200 (matrix numerically
    singular before) and 1e4 (weights far below float64)."""
    from evaluators.oracles.elimination import elimination_log_z
    from evaluators.oracles.planar import planar_inputs
    from evaluators.oracles.dual_pfaffian import dual_pfaffian_matrix
    from evaluators.oracles.linalg.skew_pfaffian import PfaffianSettings, log_abs_pfaffian, log_abs_pfaffian_bounded

    m, _, _ = p04_model(12, 0, 40.0)
    ref = elimination_log_z(m, 22)
    emb, K, shift, _ = planar_inputs(m, "low_t")
    A, pre, unit_ptr, coords = dual_pfaffian_matrix(emb, K, 1)   # single units: the old order
    unguarded = shift + pre + log_abs_pfaffian(A, unit_ptr, coords, PfaffianSettings(extended=True, half_kernel=False))
    assert abs(unguarded - ref) > 0.3
    assert log_abs_pfaffian_bounded(A, unit_ptr, coords, PfaffianSettings(extended=True))[1] >= abs(unguarded - ref)
    for beta in (40.0, 200.0, 1e4):
        assert close(planar_log_z(m.with_beta(beta)), elimination_log_z(m.with_beta(beta), 22), 1e-12), beta
    warm = p04_model(16, 2, 40.0)[0]
    assert close(planar_log_z(warm), elimination_log_z(warm, 22))


def test_log_space_elimination_matches_ground_state_and_degeneracy_at_beta_1000():
    """The reference the cold planar checks use: once excitations are below 1e-300 of the ground
    state, log Z = -beta E0 + log(degeneracy), here counted by enumerating a 4 x 5 +-J grid."""
    from evaluators.oracles.elimination import elimination_log_z

    rng = np.random.default_rng(10)
    m = grid_model(rng.choice([-1.0, 1.0], (4, 4)), rng.choice([-1.0, 1.0], (3, 5)), 1000.0)
    idx = np.arange(2 ** 20)[:, None]
    energies = m.energy(1.0 - 2.0 * ((idx >> np.arange(20)) & 1))
    e0 = energies.min()
    degeneracy = int(np.sum(np.isclose(energies, e0)))
    assert close(elimination_log_z(m), -1000.0 * e0 + np.log(degeneracy), 1e-14)


@pytest.mark.parametrize("beta", [20.0, 100.0])
def test_p04_16x16_cold_against_the_log_space_tensor_network(beta):
    """Beyond the transfer matrix's reach at this width in the sweep: the certified ground-state
    line (beta = 20, 100) against the tensor network contracted in logs."""
    from evaluators.oracles.registry import exact_log_z

    m, _, _ = p04_model(16, 1, beta)
    assert close(planar_log_z(m), exact_log_z(m, "tensor_network").log_z, 1e-13)


def test_cold_ground_state_energy_against_a_networkx_minimum_weight_matching():
    """E0 read off the cold line (the slope of log Z between beta = 50 and 500) equals the cost of
    a minimum-weight perfect matching of the expanded dual (domain walls, 2|J| per wall edge)."""
    from evaluators.oracles.dual_pfaffian import dual_pfaffian_matrix
    from evaluators.oracles.planar import planar_inputs

    m, _, _ = p04_model(12, 3, 1.0)
    emb, K, _, _ = planar_inputs(m, "low_t")
    A = dual_pfaffian_matrix(emb, K, 1)[0].tocoo()
    upper = A.row < A.col
    G = nx.Graph()
    G.add_weighted_edges_from(zip(A.row[upper].tolist(), A.col[upper].tolist(),
                                  (100.0 + np.log(np.abs(A.data[upper]))).tolist()))
    matching = nx.max_weight_matching(G, maxcardinality=True)
    assert 2 * len(matching) == A.shape[0]
    e0 = -np.abs(K).sum() + sum(100.0 - G[u][v]["weight"] for u, v in matching)
    slope = -(planar_log_z(m.with_beta(500.0)) - planar_log_z(m.with_beta(50.0))) / 450.0
    assert slope == pytest.approx(e0, abs=1e-9)
