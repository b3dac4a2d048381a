"""The four-Pfaffian torus (issue 34, item 1, T18): T-join class sums against enumeration of every edge
set, the toric-code class probabilities against chain enumeration (tasks/toric_code.py) and the row
transfer, at p = 0.3 .. 1e-12 and p = 1/2; T12 against Kaufman after the gauge; the derived T18 program
(spin_variables -> dual_rbim -> torus_pfaffian) against the oracle, including a class below float64's
resolution (its fallback) and its sparse route at 12 x 12 and 32 x 32 (tests/test_torus_sparse.py: the
oracle's sparse route). Values are natural logs (log W, log Z, log P)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluators.oracles.base import OutOfRange
from evaluators.oracles.registry import exact_log_z
from evaluators.oracles.torus_pfaffian import torus_pfaffian_applies, torus_pfaffian_log_z
from evaluators.oracles.torus_tjoin import _tt_class_logs
from search.derivation import derive
from tasks import toric_code as tc
from tasks.model import IsingModel, Lattice
from tasks.registry import get_task


def _enumerate_classes(log_xh, log_xv, t):
    """log W[a, b] by every one of the 2^(2RC) edge sets (vectorised)."""
    R, C = log_xh.shape
    m = R * C
    codes = np.arange(2 ** (2 * m), dtype=np.int64)
    bits = ((codes[:, None] >> np.arange(2 * m)) & 1).astype(np.int8)
    h, v = bits[:, :m].reshape(-1, R, C), bits[:, m:].reshape(-1, R, C)
    deg = h + np.roll(h, 1, axis=2) + v + np.roll(v, 1, axis=1)
    ok = np.all(deg % 2 == t[None], axis=(1, 2))
    logw = (h * log_xh).sum(axis=(1, 2)) + (v * log_xv).sum(axis=(1, 2))
    a, b = h[:, :, C - 1].sum(axis=1) % 2, v[:, R - 1, :].sum(axis=1) % 2
    out = np.full((2, 2), -np.inf)
    for ca in range(2):
        for cb in range(2):
            sel = ok & (a == ca) & (b == cb)
            if sel.any():
                top = logw[sel].max()
                out[ca, cb] = top + math.log(np.exp(logw[sel] - top).sum())
    return out


@pytest.mark.parametrize("terminals", [(), (0, 4), (1, 2, 5, 8)])
def test_class_sums_equal_enumeration_of_every_edge_set(terminals):
    rng = np.random.default_rng(len(terminals))
    log_xh, log_xv = -rng.uniform(0, 3, (3, 3)), -rng.uniform(0, 3, (3, 3))
    log_xh[0, 0] = 0.0                                   # a weight of exactly 1 (p = 1/2)
    t = np.zeros(9, np.int64)
    t[list(terminals)] = 1
    t = t.reshape(3, 3)
    got, _ = _tt_class_logs(log_xh, log_xv, t)
    np.testing.assert_allclose(got, _enumerate_classes(log_xh, log_xv, t), rtol=1e-12, atol=1e-12)


def test_at_p_one_half_every_class_holds_a_quarter_of_the_t_joins():
    """x = 1: the torus has 2^(E - V + 1) = 2^(n + 1) T-joins of any even terminal set, 2^(n - 1) a class."""
    L = 6
    t = np.zeros((L, L), np.int64)
    t[0, 0] = t[2, 3] = t[5, 5] = t[4, 1] = 1
    got, _ = _tt_class_logs(np.zeros((L, L)), np.zeros((L, L)), t)
    np.testing.assert_allclose(got, np.full((2, 2), (L * L - 1) * math.log(2.0)), rtol=1e-13)


def _t18(L, p, seed, homology=None):
    task = get_task("T18")
    params = task.sample_params(np.random.default_rng(seed), L * L)
    params["p"] = p
    if homology is not None:
        params["homology"] = list(homology)
    return params, task.to_model(params, L * L)


@pytest.mark.parametrize("L", [3, 4])
@pytest.mark.parametrize("p", [0.3, 0.1, 1e-3, 1e-12, 0.5 - 1e-12])
def test_t18_class_probabilities_equal_chain_enumeration(L, p):
    """Every class: equal to enumeration of the chains, or (a class far below the likeliest, cold) refused."""
    answered = 0
    for cls in ((0, 0), (0, 1), (1, 0), (1, 1)):
        params, model = _t18(L, p, seed=L, homology=cls)
        _, defects, _ = tc.check_params(L, params)
        logs = tc.class_log_probabilities(L, p, defects)
        try:
            got = torus_pfaffian_log_z(model)
        except OutOfRange:
            assert logs.max() - logs[cls] > 5.0, "refused a class that float64 resolves"
            continue
        answered += 1
        assert got == pytest.approx(float(logs[cls]), rel=1e-10, abs=1e-10)
    assert answered >= 1


@pytest.mark.parametrize("L, p", [(5, 0.1), (6, 0.05), (6, 1e-12)])
def test_t18_equals_the_row_transfer(L, p):
    for seed in range(3):
        _, model = _t18(L, p, seed=seed)
        ref = exact_log_z(model, method="transfer_matrix").log_z
        try:
            got = torus_pfaffian_log_z(model)
        except OutOfRange:
            assert p < 0.01                                    # only cold minority classes are refused
            continue
        assert got == pytest.approx(ref, rel=1e-10)


@pytest.mark.parametrize("beta_j", [1e-160, 0.4406867935097715, 13.0, 1000.0])
def test_t12_pfaffian_equals_gauge_kaufman(beta_j):
    """The Mattis torus: four Pfaffians of its (unfrustrated) domain walls against Kaufman after the gauge."""
    task = get_task("T12")
    for n in (64, 144):
        params = {**task.sample_params(np.random.default_rng(n), n), "J": 1.0, "beta": beta_j}
        model = task.to_model(params, n)
        assert torus_pfaffian_applies(model) is None
        assert torus_pfaffian_log_z(model) == pytest.approx(exact_log_z(model, method="kaufman").log_z, rel=1e-13)


def test_a_glass_on_a_rectangular_torus_equals_the_transfer_matrix():
    rng = np.random.default_rng(7)
    R, C = 4, 6
    n = R * C
    site = np.arange(n)
    r, c = np.divmod(site, C)
    pairs = np.concatenate([np.stack([site, r * C + (c + 1) % C], 1), np.stack([site, ((r + 1) % R) * C + c], 1)])
    for beta in (0.3, 2.0, 9.0):
        model = IsingModel.from_arrays(n, beta, pairs, rng.normal(size=2 * n), lattice=Lattice(R, C, True, True))
        ref = exact_log_z(model, method="transfer_matrix").log_z
        try:
            assert torus_pfaffian_log_z(model) == pytest.approx(ref, rel=1e-10)
        except OutOfRange:
            assert beta > 2.0


def test_the_derived_t18_program_agrees_with_the_references(sandbox):
    d = derive(get_task("T18"), sandbox=sandbox)
    assert d.chain == "spin_variables -> dual_rbim -> torus_pfaffian" and d.tractable_class == "rbim_nishimori"
    namespace: dict = {}
    exec(compile(d.program, "<T18 derived>", "exec"), namespace)
    for L, p, cls in ((5, 0.1, (0, 1)), (6, 0.02, (1, 1)), (5, 1e-12, (0, 0)), (5, 1e-12, (1, 0)), (5, 1e-12, (1, 1))):
        params, model = _t18(L, p, seed=11, homology=cls)
        ref = exact_log_z(model, method="transfer_matrix").log_z       # exact in logs: every class, any p
        assert namespace["log_Z"](params, L * L) == pytest.approx(ref, rel=1e-9)
    # the sparse route beyond the probes, against the oracle's own sparse route (two dissections, double-double)
    task = get_task("T18")
    for L, p, cls in ((12, 0.05, (1, 0)), (32, None, None)):
        params, model = _t18(L, p, seed=2, homology=cls) if p else (task.probe_params(L * L, 0, 0), None)
        model = model or task.to_model(params, L * L)
        assert namespace["log_Z"](params, L * L) == pytest.approx(exact_log_z(model).log_z, rel=1e-12)
