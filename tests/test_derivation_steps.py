"""Each derivation action and solver against an independent exact value (brute force over every
configuration, the task's own references, closed forms), from warm to cold: beta |J| up to 50."""

import math

import numpy as np
import pytest

from evaluators.oracle_cache import reference
from evaluators.oracles.brute import brute_log_z
from evaluators.oracles.kaufman import kaufman_torus_log_z
from search.derivation.actions import (components, decoration, degree_one, dual_rbim, free_terms, gauge, ghost_spin,
                                       nishimori, star_triangle)
from search.derivation.checks import exact_value
from search.derivation.runtime import _rt_merge, _rt_start
from search.derivation.solvers import enumeration, kaufman, magnetisation, product
from search.derivation.view import odd_cycle, to_ising
from tasks.formula_reader import compile_reader
from tasks.paraphrase import paraphrase
from tasks.registry import get_task
from tasks.rotation_system import drawing_is_planar

BETAS = (0.05, 0.7, 3.0, 50.0)


def _model(n, terms, beta, positions=None, coords=None, rank_one=()):
    """A runtime model from (index tuple, weight) terms in energy units at inverse temperature beta."""
    parts = [(np.array([t], dtype=np.int64), np.array([beta * w])) for t, w in terms]
    return {"n": n, "beta": beta, "terms": _rt_merge(parts), "rank_one": [(np.asarray(u, float), beta * a) for u, a in rank_one],
            "log_shift": 0.0, "energy_shift": 0.0, "positions": positions, "coords": coords, "statistic": "log_z"}


def _log_z(model):
    return brute_log_z(to_ising(model))


def _random_graph_model(rng, n, beta, p=0.5, fields=True):
    terms = [((i, j), rng.uniform(-1.5, 1.5)) for i in range(n) for j in range(i + 1, n) if rng.random() < p]
    if fields:
        terms += [((i,), rng.uniform(-1.0, 1.0)) for i in range(n)]
    return _model(n, terms, beta)


@pytest.mark.parametrize("beta", BETAS)
def test_summing_out_degree_one_two_three_keeps_log_z(beta):
    rng = np.random.default_rng(int(beta * 100))
    for trial in range(4):
        # a tree with fields (degree one), a ring with chords' decorations (two), a model with 3-spin stars (three)
        tree = _model(9, [((i, int(rng.integers(i))), rng.uniform(-1.5, 1.5)) for i in range(1, 9)]
                      + [((i,), rng.uniform(-1, 1)) for i in range(9)], beta)
        after = degree_one.ENTRY(tree, {"repeat": True})
        assert after["n"] == 1
        assert exact_value(after) == pytest.approx(_log_z(tree), rel=1e-12, abs=1e-12)
        model = _random_graph_model(rng, 10, beta, p=0.35, fields=trial % 2 == 0)
        for action in (decoration, star_triangle):
            out = action.ENTRY(model, {})
            assert _log_z(out) == pytest.approx(_log_z(model), rel=1e-12, abs=1e-12), action.NAME


def test_a_zero_field_decoration_leaves_no_field_and_star_triangle_no_three_spin_term():
    rng = np.random.default_rng(4)
    model = _random_graph_model(rng, 12, 1.3, p=0.3, fields=False)
    for action in (decoration, star_triangle):
        out = action.ENTRY(model, {})
        assert out["n"] < model["n"]
        assert all(i.shape[1] == 2 for i, _ in out["terms"]), action.NAME        # exactly: no residue terms


@pytest.mark.parametrize("beta", BETAS)
def test_gauge_makes_balanced_signs_ferromagnetic_and_proves_frustration(beta):
    rng = np.random.default_rng(1)
    n = 9
    tau = rng.choice([-1.0, 1.0], n)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.5]
    model = _model(n, [((i, j), tau[i] * tau[j] * rng.uniform(0.2, 1.5)) for i, j in pairs]
                   + [((i,), rng.uniform(-1, 1)) for i in range(n)], beta)
    out = gauge.ENTRY(model, {})
    assert all(np.all(w > 0) for i, w in out["terms"] if i.shape[1] == 2)
    assert _log_z(out) == pytest.approx(_log_z(model), rel=1e-13)
    triangle = _model(3, [((0, 1), 1.0), ((1, 2), 1.0), ((0, 2), -1.0)], beta)
    with pytest.raises(ValueError, match="frustrated"):
        gauge.ENTRY(triangle, {})
    cycle = odd_cycle(3, triangle["terms"][0][0], triangle["terms"][0][1])
    assert sorted(cycle) == [0, 1, 2]


def test_gauge_of_a_mattis_block_gives_curie_weiss():
    rng = np.random.default_rng(2)
    xi = rng.choice([-1.0, 1.0], 10)
    for beta in BETAS:
        model = _model(10, [((i,), 0.3) for i in range(10)], beta, rank_one=[(xi, 1.0 / 10)])
        out = gauge.ENTRY(model, {})
        assert np.all(out["rank_one"][0][0] == 1.0)
        assert magnetisation.ENTRY(out, {}) + out["log_shift"] == pytest.approx(_log_z(model), rel=1e-12)


@pytest.mark.parametrize("beta", BETAS)
def test_components_free_terms_and_product(beta):
    model = _model(8, [((0, 1), 0.7), ((1, 2), -1.1), ((3,), 0.4), ((5,), -2.0)], beta)
    out = components.ENTRY(model, {})
    assert out["n"] == 3 and _log_z(out) == pytest.approx(_log_z(model), rel=1e-13)
    # T13's plaquettes peel off one by one: fields on private spins, Z unchanged
    t13 = get_task("T13")
    params = {**t13.probe_params(16, 0, 0), "beta": beta}
    plaq = _rt_start(compile_reader(t13.formula).load()(params, 16))
    freed = free_terms.ENTRY(plaq, {})
    assert all(i.shape[1] == 1 for i, _ in freed["terms"])
    assert product.ENTRY(freed, {}) + freed["log_shift"] == pytest.approx(_log_z(plaq), rel=1e-13)
    with pytest.raises(ValueError, match="not independent"):
        free_terms.ENTRY(_model(3, [((0, 1), 1.0), ((1, 2), 1.0), ((0, 2), 1.0)], beta), {})


def test_ghost_spin_doubles_z_and_keeps_a_ring_planar():
    rng = np.random.default_rng(5)
    n = 8
    angle = 2 * np.pi * np.arange(n) / n
    ring = _model(n, [((i, (i + 1) % n), rng.uniform(-1, 1)) for i in range(n)] + [((i,), rng.uniform(-1, 1)) for i in range(n)],
                  1.7, positions=np.stack([np.cos(angle), np.sin(angle)], 1))
    wheel = ghost_spin.ENTRY(ring, {"place": "centroid"})
    assert wheel["n"] == n + 1 and all(i.shape[1] == 2 for i, _ in wheel["terms"])
    assert _log_z(wheel) == pytest.approx(_log_z(ring), rel=1e-13)
    assert drawing_is_planar(n + 1, wheel["terms"][0][0], wheel["positions"])


@pytest.mark.parametrize("seed", [None, 0, 1])
@pytest.mark.parametrize("p", [1e-12, 0.03, 0.2, 0.45])
def test_nishimori_average_against_the_formula_and_the_identities(seed, p):
    """T19's [<H>] and T20's [Z(beta)/Z(b_N)] after the Nishimori step and free bond variables, against
    the formula's own enumeration (2^8 signs x 2^4 spins at n = 4) and the closed forms on N_B bonds."""
    for task_id in ("T19", "T20"):
        task = get_task(task_id)
        f = task.formula if seed is None else paraphrase(task, seed).formula
        for beta in (0.0, 0.4, 50.0):
            params = {"p": p, "J": 0.9, "beta": beta}
            problem = compile_reader(f).load()(params, 4)
            joint = nishimori.ENTRY(problem, {})
            freed = free_terms.ENTRY(joint, {})
            bN = 0.5 * (math.log1p(-p) - math.log(p)) / 0.9
            if task_id == "T19":
                value = product.ENERGY(freed, {})
                assert value == pytest.approx(-8 * 0.9 * (1 - 2 * p), rel=1e-12)
                if p > 1e-6:
                    assert value == pytest.approx(f.value(params, 4), rel=1e-10)
            else:
                value = product.ENTRY(freed, {}) + freed["log_shift"]
                closed = 8 * (_log_cosh(beta * 0.9) - _log_cosh(bN * 0.9))
                assert value == pytest.approx(closed, rel=1e-12, abs=1e-12)
                if p > 1e-6:
                    assert value == pytest.approx(f.value(params, 4), rel=1e-10, abs=1e-10)


def _log_cosh(x):
    x = abs(x)
    return x + math.log1p(math.exp(-2 * x)) - math.log(2)


def test_nishimori_refuses_off_the_line():
    f = get_task("T20").formula
    problem = compile_reader(f).load()({"p": 0.1, "J": 1.0, "beta": 0.5}, 4)
    problem["reference_beta"] *= 1.01
    with pytest.raises(ValueError, match="off the Nishimori line"):
        nishimori.ENTRY(problem, {})


@pytest.mark.parametrize("p", [1e-6, 0.02, 0.109, 0.2])
def test_dual_random_bond_model_gives_the_class_probability(p):
    """The toric-code class probability from the dual model (brute force over the faces) against the
    task's own chain enumeration, every class, L = 3 and 4."""
    t18 = get_task("T18")
    reader = compile_reader(t18.formula).load()
    rng = np.random.default_rng(int(p * 1e6))
    for n in (9, 16):
        L = int(round(n ** 0.5))
        errors = (rng.random(2 * L * L) < max(p, 0.05)).astype(int)
        from tasks.toric_code import syndrome
        for cls in ([0, 0], [0, 1], [1, 0], [1, 1]):
            params = {"p": p, "syndrome": syndrome(L, errors).tolist(), "homology": cls}
            dual = dual_rbim.ENTRY(reader(params, n), {})
            assert dual["n"] == n
            assert _log_z(dual) == pytest.approx(reference(t18, params, n, method="brute").log_z, rel=1e-11)


def test_kaufman_anisotropic_torus_against_brute_force_and_the_oracle():
    for R, C in ((3, 3), (3, 4), (4, 3), (3, 5), (4, 4)):
        for Kh, Kv in ((0.3, 0.7), (0.7, 0.3), (0.4406867935, 0.4406867935), (2.5, 4.0), (0.05, 0.1)):
            site = np.arange(R * C)
            r, c = np.divmod(site, C)
            terms = [((int(s), int(r_ * C + (c_ + 1) % C)), Kh) for s, r_, c_ in zip(site, r, c)]
            terms += [((int(s), int(((r_ + 1) % R) * C + c_)), Kv) for s, r_, c_ in zip(site, r, c)]
            model = _model(R * C, terms, 1.0, coords=np.stack([r, c], 1))
            assert kaufman.ENTRY(model, {}) == pytest.approx(_log_z(model), rel=1e-13)
    Kc = 0.5 * math.log(1 + math.sqrt(2))
    for L in (8, 64, 501):
        for K in (0.1, Kc, Kc * (1 + 1e-9), 0.6, 6.0, 50.0):
            assert kaufman._sol_kaufman_torus(K, K, L, L) == pytest.approx(kaufman_torus_log_z(K, L, L), rel=1e-13)
    # the signed zero mode: |g_0| would be wrong above T_c (0.558 in log Z at 4 x 4, K = 0.3)
    assert kaufman._sol_kaufman_torus(0.3, 0.3, 4, 4) == pytest.approx(kaufman_torus_log_z(0.3, 4, 4), rel=1e-14)
    # far beyond the oracle's float range: the ground state 2 K n + log 2 (two ferromagnetic states)
    assert kaufman._sol_kaufman_torus(300.0, 300.0, 64, 64) == pytest.approx(2 * 300.0 * 4096 + math.log(2), rel=1e-15)


def test_magnetisation_with_uniform_and_varied_fields_and_enumeration_energy():
    rng = np.random.default_rng(6)
    for beta in BETAS:
        uniform = _model(11, [((i,), 0.4) for i in range(11)], beta, rank_one=[(np.r_[np.ones(9), 0, 0], 0.2)])
        varied = _model(11, [((i,), rng.uniform(-1, 1)) for i in range(11)], beta, rank_one=[(np.r_[np.ones(9), 0, 0], -0.3)])
        for m in (uniform, varied):
            assert magnetisation.ENTRY(m, {}) == pytest.approx(_log_z(m), rel=1e-12)
        assert enumeration.ENTRY(varied, {}) == pytest.approx(_log_z(varied), rel=1e-13)
        E = enumeration.ENERGY(varied, {})
        h = 1e-5                                      # -d log Z / d beta by a central difference, loosely
        up, down = ({**varied, "terms": [(i, w * (1 + s * h)) for i, w in varied["terms"]],
                     "rank_one": [(u, a * (1 + s * h)) for u, a in varied["rank_one"]]} for s in (1, -1))
        assert E == pytest.approx(-(_log_z(up) - _log_z(down)) / (2 * h * beta), rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("L", [3, 4, 6, 9])
def test_dual_rbim_graph_route_equals_dense_gf2(L):
    """The O(n) graph route of dual_rbim (spanning forest, T-join, cotree cycles for the homology rows)
    against dense Gaussian elimination over GF(2): the same rank, a solution of every row, the faces' rank."""
    from tasks.toric_code import dual_bonds, syndrome
    rng = np.random.default_rng(L)
    N = 2 * L * L
    _, pairs = dual_bonds(L)                      # edge -> its two plaquettes: faces of the primal drawing
    r, c = np.divmod(np.arange(L * L), L)
    ends = np.concatenate([np.stack([r * L + c, r * L + (c + 1) % L], 1), np.stack([r * L + c, ((r + 1) % L) * L + c], 1)])
    for cls in ([0, 0], [1, 1]):
        s = syndrome(L, (rng.random(N) < 0.2).astype(int)).ravel()
        E = np.zeros((2, N), dtype=np.int64)
        E[0, (np.arange(L) * L + L - 1)] = 1                   # h(r, L - 1)
        E[1, L * L + (L - 1) * L + np.arange(L)] = 1           # v(L - 1, c)
        rank, x = dual_rbim._act_dual_graph_solve(L * L, ends, s, E, np.array(cls), N)
        A = np.zeros((L * L + 2, N), dtype=np.int64)
        A[ends[:, 0], np.arange(N)] += 1
        A[ends[:, 1], np.arange(N)] += 1
        A[L * L:] = E
        A %= 2
        rhs = np.concatenate([s, cls])
        assert rank == dual_rbim._act_dual_gf2(A, rhs)[0]
        assert not np.any((A @ x - rhs) % 2)
    forest = dual_rbim._act_dual_forest(L * L, pairs[:, 0], pairs[:, 1])
    G = np.zeros((L * L, N), dtype=np.int64)
    G[pairs[:, 0], np.arange(N)] += 1
    G[pairs[:, 1], np.arange(N)] += 1
    assert L * L - forest[3] == dual_rbim._act_dual_gf2(G % 2)[0]
