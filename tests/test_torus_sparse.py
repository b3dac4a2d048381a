"""The sparse route of the four-Pfaffian torus (issue 34, T18 to L = 64): signed sparse Pfaffians
(skew_signed) against the dense complete-pivoting ones, sign included; the class sums against
enumeration of every edge set and the exact count at p = 1/2; T18 by the sparse route against chain
enumeration (L = 3, 4) and the row transfer (L = 5 .. 8) at p = 0.3 .. 1e-12 and 1/2, every class;
against the dense route at L = 12 (16 under -m slow); the registry's choice at L = 64."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse import random as sparse_random

from evaluators.oracles.base import NotApplicable, OutOfRange
from evaluators.oracles.registry import exact_log_z
from evaluators.oracles.linalg.skew_pfaffian import PfaffianSettings
from evaluators.oracles.linalg.skew_signed import signed_log_pfaffian, signed_pfaffian_dd
from evaluators.oracles.torus_pfaffian import (pfaffian_complete, torus_class_logs, torus_pfaffian_applies,
                                            torus_pfaffian_log_z)
from evaluators.oracles.torus_sparse import sparse_class_logs
from evaluators.oracles.torus_tjoin import _tt_sectors
from tasks import toric_code as tc
from tasks.registry import get_task
from tests.test_torus_pfaffian import _enumerate_classes


def _torus(L, rng, fraction=0.3):
    t = (rng.random((L, L)) < fraction).astype(np.int64)
    t[0, 0] ^= t.sum() % 2
    return t


@pytest.mark.parametrize("L", [3, 4, 6, 8])
@pytest.mark.parametrize("extended", [False, True])
def test_signed_sparse_pfaffian_equals_the_dense_one_sign_included(L, extended):
    rng = np.random.default_rng(L + 10 * extended)
    t = _torus(L, rng)
    size = 6 + t.ravel()
    groups = np.concatenate([[0], np.cumsum(size)])
    r, c = np.divmod(np.arange(L * L), L)
    coords = np.stack([c, r], 1).astype(float)
    got = []

    def both(A):
        got.append((pfaffian_complete(A.toarray()), signed_log_pfaffian(A, groups, coords, PfaffianSettings(extended=extended, threads=1))))
        return 0.0, 1.0

    _tt_sectors(-rng.uniform(0, 3, (L, L)), -rng.uniform(0, 3, (L, L)), t, both, sparse=True)
    for (ld, sd), (ls, ss) in got:
        assert ss == sd
        assert ls == pytest.approx(ld, abs=1e-11)


def test_signed_sparse_pfaffian_of_random_skew_matrices():
    """No gadget structure, single-node groups, BFS coordinates; a singular matrix gives sign 0."""
    rng = np.random.default_rng(5)
    for N in (2, 6, 30, 60):
        M = sparse_random(N, N, density=0.15, random_state=rng, format="csr")
        A = csr_matrix((M - M.T).toarray() + np.diag(np.ones(N - 1), 1) - np.diag(np.ones(N - 1), -1))   # connected
        ld, sd = pfaffian_complete(A.toarray())
        for extended in (False, True):
            ls, ss = signed_log_pfaffian(A, settings=PfaffianSettings(extended=extended, threads=1))
            assert ss == sd and ls == pytest.approx(ld, abs=1e-10)
        sign, hi, lo, e, logabs = signed_pfaffian_dd(A)
        assert sign == sd and math.log(hi) + e * math.log(2.0) == pytest.approx(ld, abs=1e-10)
    assert signed_log_pfaffian(csr_matrix(np.zeros((4, 4))))[1] == 0.0


@pytest.mark.parametrize("terminals", [(), (0, 4), (1, 2, 5, 8)])
def test_sparse_class_sums_equal_enumeration_of_every_edge_set(terminals):
    rng = np.random.default_rng(len(terminals))
    log_xh, log_xv = -rng.uniform(0, 3, (3, 3)), -rng.uniform(0, 3, (3, 3))
    log_xh[0, 0] = 0.0
    t = np.zeros(9, np.int64)
    t[list(terminals)] = 1
    W, err = sparse_class_logs(log_xh, log_xv, t.reshape(3, 3))
    np.testing.assert_allclose(W, _enumerate_classes(log_xh, log_xv, t.reshape(3, 3)), rtol=1e-13, atol=1e-13)
    assert np.all(err < 1e-20)                                           # double-double: far below float64's N eps


def test_sparse_at_p_one_half_every_class_holds_a_quarter_of_the_t_joins():
    L = 12
    t = _torus(L, np.random.default_rng(2))
    W, err = sparse_class_logs(np.zeros((L, L)), np.zeros((L, L)), t)
    np.testing.assert_allclose(W, np.full((2, 2), (L * L - 1) * math.log(2.0)), rtol=1e-14)
    assert np.all(err < 1e-20)


def _t18(L, p, seed, homology):
    task = get_task("T18")
    params = task.sample_params(np.random.default_rng(seed), L * L)
    params["p"], params["homology"] = p, list(homology)
    return params, task.to_model(params, L * L)


CLASSES = ((0, 0), (0, 1), (1, 0), (1, 1))


@pytest.mark.parametrize("L", [3, 4])
@pytest.mark.parametrize("p", [0.3, 1e-3, 1e-12, 0.5 - 1e-12])
def test_sparse_t18_equals_chain_enumeration(L, p):
    answered = 0
    for cls in CLASSES:
        params, model = _t18(L, p, L, cls)
        logs = tc.class_log_probabilities(L, p, tc.check_params(L, params)[1])
        try:
            got = torus_pfaffian_log_z(model, route="sparse")
        except OutOfRange:
            assert logs.max() - logs[cls] > 20.0, "refused a class double-double resolves"
            continue
        answered += 1
        assert got == pytest.approx(float(logs[cls]), rel=1e-12, abs=1e-12)
    assert answered >= 1


@pytest.mark.parametrize("L", [5, 6, 7, 8])
@pytest.mark.parametrize("p", [0.5 - 1e-12, 0.3, 0.1, 1e-12])
def test_sparse_t18_equals_the_row_transfer_every_class(L, p):
    """Every class the sparse route answers equals the row transfer (exact in logs); at p >= 0.1 it
    answers every class (the dense route refuses some of them: classes below ~1e-3 of the largest)."""
    for cls in CLASSES:
        _, model = _t18(L, p, 3 * L, cls)
        ref = exact_log_z(model, method="transfer_matrix").log_z
        try:
            got = torus_pfaffian_log_z(model, route="sparse")
        except OutOfRange:
            assert p < 0.01
            continue
        assert got == pytest.approx(ref, rel=1e-13)


def _sparse_against_dense(L, seeds):
    rng = np.random.default_rng(L)
    for seed in seeds:
        t = _torus(L, np.random.default_rng(seed), 0.15)
        lx = math.log(1e-12) if seed % 3 == 2 else -rng.uniform(0.2, 4.0)
        log_xh, log_xv = np.full((L, L), lx), np.full((L, L), lx)
        Ws, es = sparse_class_logs(log_xh, log_xv, t)
        Wd, ed = torus_class_logs(log_xh, log_xv, t)
        both = (es <= 1e-9) & (ed <= 1e-9)
        assert both.any() and np.all(es[ed <= 1e-9] <= 1e-9)             # sparse resolves what dense does
        np.testing.assert_allclose(Ws[both], Wd[both], rtol=1e-11)


def test_sparse_equals_dense_at_l12():
    _sparse_against_dense(12, (0, 2))


@pytest.mark.slow
@pytest.mark.parametrize("L", [13, 14, 16])
def test_sparse_equals_dense_at_l13_to_16(L):
    _sparse_against_dense(L, (0, 1, 2))


def test_the_registry_takes_the_sparse_route_at_l64():
    _, model = _t18(64, 0.15, 1, (0, 0))
    result = exact_log_z(model)
    assert result.method == "torus_pfaffian"
    assert math.isfinite(result.log_z) and result.log_z < 0.0


def test_weights_whose_products_underflow_are_refused_by_both_routes():
    """p = 1e-160 (|K| = 184): both routes once certified values wrong by 1e-4 in log P (L = 6, 8); now
    the method declines the model (applies names the limit, so the registry hands it to the transfer
    matrix) and both routes refuse it when forced. p = 1e-150 stays answered and right."""
    for L, seed, cls in ((6, 18, (1, 0)), (8, 24, (1, 0))):
        _, model = _t18(L, 1e-160, seed, cls)
        assert "2^-500" in torus_pfaffian_applies(model)
        for route in ("dense", "sparse"):
            with pytest.raises(NotApplicable, match="2\\^-500"):
                torus_pfaffian_log_z(model, route=route)
    _, model = _t18(6, 1e-150, 18, (0, 0))
    ref = exact_log_z(model, method="transfer_matrix").log_z
    try:
        assert torus_pfaffian_log_z(model, route="sparse") == pytest.approx(ref, rel=1e-13)
    except OutOfRange:
        pass                                          # a minority class: refused, not wrong


def test_sparse_glasses_on_tori_equal_the_transfer_matrix():
    """Gaussian and +-J couplings on 6 x 6 and 5 x 8 tori, beta = 0.3 .. 30 (measured: 46 of 48 answered to
    3e-16 up to 8 x 8, 2 refused)."""
    from tasks.model import IsingModel, Lattice
    rng = np.random.default_rng(7)
    answered = 0
    for R, C in ((6, 6), (5, 8)):
        n = R * C
        site = np.arange(n)
        r, c = np.divmod(site, C)
        pairs = np.concatenate([np.stack([site, r * C + (c + 1) % C], 1), np.stack([site, ((r + 1) % R) * C + c], 1)])
        for beta in (0.3, 2.0, 9.0, 30.0):
            for J in (rng.normal(size=2 * n), rng.choice([-1.0, 1.0], size=2 * n)):
                model = IsingModel.from_arrays(n, beta, pairs, J, lattice=Lattice(R, C, True, True))
                try:
                    got = torus_pfaffian_log_z(model, route="sparse")
                except OutOfRange:
                    continue
                answered += 1
                assert got == pytest.approx(exact_log_z(model, method="transfer_matrix").log_z, rel=1e-13)
    assert answered >= 12
