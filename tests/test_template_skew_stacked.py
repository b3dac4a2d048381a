"""The skew elimination's stacked path (many small fronts eliminated together, P04's cold program)
against the one-front path and rational arithmetic, and the planar Pfaffian template against the
planar oracle's certified values on +-J grids from beta |J| = 0.3 to 50."""

from fractions import Fraction

import numpy as np
import pytest

from evaluators.oracles.naive import naive_log_z
from evaluators.oracles.planar import planar_log_z
from search.structural.templates import planar_pfaffian, skew_elimination
from search.structural.templates.double_double import _dd_stack_rank2_update
from search.structural.templates.skew_elimination import _eliminate_front, _eliminate_fronts, skew_log_abs_pfaffian
from tasks.model import IsingModel
from test_template_skew_elimination import _random_skew


def _front(rng, f, density):
    """A dense double-double skew front (H, L) with entries of either sign over 12 orders of
    magnitude, about ``density`` of them nonzero; some rows tiny, so some pivots are delayed."""
    hi = rng.choice([-1.0, 1.0], (f, f)) * 10.0 ** rng.uniform(-12.0, 0.0, (f, f))
    hi *= rng.random((f, f)) < density
    hi[rng.random(f) < 0.15] *= 1e-9
    hi = np.triu(hi, 1)
    lo = hi * 2.0 ** -60 * rng.uniform(-1.0, 1.0, (f, f))
    return hi - hi.T, lo - lo.T


@pytest.mark.parametrize("density", [0.15, 0.9])
def test_stacked_fronts_eliminate_like_single_fronts(density):
    """Fronts of different sizes zero-padded into one stack: the same pivots, permutations,
    delayed counts, pivot logs and Schur complements as _eliminate_front on each alone."""
    rng = np.random.default_rng(20)
    sizes = [40, 33, 33, 20, 9, 2, 1]
    fronts = [_front(rng, f, density) for f in sizes]
    n_full = np.array([30, 33, 16, 20, 3, 2, 1])
    f = max(sizes)
    Hs, Ls = np.zeros((len(sizes), f, f)), np.zeros((len(sizes), f, f))
    for b, (H, L) in enumerate(fronts):
        Hs[b, :sizes[b], :sizes[b]], Ls[b, :sizes[b], :sizes[b]] = H, L
    logs, perm, done = _eliminate_fronts(Hs, Ls, n_full)
    singles = []
    for b, (H, L) in enumerate(fronts):
        H, L = H.copy(), L.copy()
        lg, p, d = _eliminate_front(H, L, int(n_full[b]))
        singles.append(lg)
        m = sizes[b]
        assert done[b] == d and np.array_equal(perm[b, :m], p), b
        assert np.all(Hs[b, m:] == 0.0) and np.all(Hs[b, :, m:] == 0.0)       # the padding stays zero
        # the one-front update leaves rounding-level values (1e-64 here) on the diagonal; the
        # stacked one is exactly skew
        assert np.all(np.diagonal(Hs[b]) == 0.0)
        off = ~np.eye(m - d, dtype=bool)
        diff = np.abs(Hs[b, d:m, d:m] - H[d:, d:])[off]
        assert np.all(diff <= 1e-13 * np.abs(H[d:, d:])[off] + 1e-26 * np.abs(fronts[b][0]).max()), b
    assert sum(done) < sum(n_full) - 2                           # some pivots were delayed
    assert abs(np.sum(logs) - sum(singles)) <= 1e-13 * abs(sum(singles))


@pytest.mark.parametrize("zeros", [0, 12])
def test_stacked_rank2_update_is_exact_to_2_to_the_minus_100_and_skew(zeros):
    """(H + L) - (u w^T - w u^T) on a stack of three fronts against rational arithmetic; with
    zero rows of u and w (a different number per front) the update is gathered. The result is
    exactly skew (the update is formed as X - X^T)."""
    rng = np.random.default_rng(21)
    B, m = 3, 20

    def dd(shape):
        hi = rng.choice([-1.0, 1.0], shape) * 10.0 ** rng.uniform(-8.0, 2.0, shape)
        return hi, hi * 2.0 ** -60 * rng.uniform(-1.0, 1.0, shape)

    (uh, ul), (wh, wl) = dd((B, m)), dd((B, m))
    for b in range(B):
        dead = rng.choice(m, max(0, zeros - 3 * b), replace=False)
        uh[b, dead] = ul[b, dead] = wh[b, dead] = wl[b, dead] = 0.0
    Hh, Hl = dd((B, m, m))
    Hh, Hl = np.triu(Hh, 1), np.triu(Hl, 1)
    Hh, Hl = Hh - Hh.transpose(0, 2, 1), Hl - Hl.transpose(0, 2, 1)
    F = np.vectorize(Fraction, otypes=[object])
    H, L = Hh.copy(), Hl.copy()
    _dd_stack_rank2_update(H, L, uh, ul, wh, wl)
    assert np.array_equal(H, -H.transpose(0, 2, 1)) and np.array_equal(L, -L.transpose(0, 2, 1))
    for b in range(B):
        u, w, S = F(uh[b]) + F(ul[b]), F(wh[b]) + F(wl[b]), F(Hh[b]) + F(Hl[b])
        exact = S - (np.outer(u, w) - np.outer(w, u))
        scale = np.abs(Hh[b]) + np.abs(np.outer(uh[b], wh[b])) + np.abs(np.outer(wh[b], uh[b]))
        err = np.abs((F(H[b]) + F(L[b]) - exact).astype(float))
        assert np.all(err <= 2.0 ** -100 * scale), float(np.max(err / np.maximum(scale, 1e-300)))


@pytest.mark.parametrize("stack_max,entries", [(0, 1), (10 ** 6, 1), (10 ** 6, 10 ** 6)])
def test_every_stacking_matches_the_dense_determinant(monkeypatch, stack_max, entries):
    """Nothing stacked, every front stacked alone, every front of a level stacked together: the
    same log |Pf A| = 1/2 log |det A| on random sparse skew matrices (small leaves: many levels)."""
    monkeypatch.setattr(skew_elimination, "STACK_MAX", stack_max)
    monkeypatch.setattr(skew_elimination, "STACK_ENTRIES", entries)
    monkeypatch.setattr(skew_elimination, "LEAF", 8)
    rng = np.random.default_rng(22)
    for n in (2, 10, 60, 240):
        for _ in range(2):
            A, xy = _random_skew(rng, n, int(rng.integers(2, 6)))
            group = np.repeat(np.arange(n), rng.integers(1, 7, n))[:n]
            ref = 0.5 * np.linalg.slogdet(A.toarray())[1]
            got = skew_log_abs_pfaffian(A, xy, group)
            assert abs(got - ref) <= 1e-9 * max(1.0, abs(ref)), (n, got, ref)


def _pm_j_grid(L, seed):
    n = L * L
    r, c = np.divmod(np.arange(n), L)
    right, down = (r * L + c)[c < L - 1], (r * L + c)[r < L - 1]
    edges = np.concatenate([np.stack([right, right + 1], 1), np.stack([down, down + L], 1)])
    J = np.random.default_rng(seed).choice([-1.0, 1.0], len(edges))
    return n, edges, J, np.stack([c, -r], 1).astype(float)


def _tolerance(beta):
    """Relative: 1e-12; colder than TRUSTED_BETA_J the template returns only what its running bound
    vouches for (1e-9 absolute, directly or from its certified ground-state line), and so does the
    oracle: 2e-9 of |log Z| >= 70 here covers both (it was 1e-11, when the template read its line
    off unbounded runs)."""
    return 1e-12 if beta <= planar_pfaffian.TRUSTED_BETA_J else 3e-11


def _check_against_the_oracle(L, seeds, betas):
    for seed in seeds:
        n, edges, J, positions = _pm_j_grid(L, seed)
        for beta in betas:
            ref = planar_log_z(IsingModel.from_arrays(n, beta, edges, J))
            got = planar_pfaffian._method_log_z(edges, J, np.zeros(n), [], positions, beta, n, {})
            assert abs(got - ref) <= _tolerance(beta) * abs(ref), (L, seed, beta, got, ref)


BETAS = (0.3, 1.0, 6.0, 8.0, 10.0, 13.0, 20.0, 50.0)


@pytest.mark.parametrize("L", [16, pytest.param(32, marks=pytest.mark.slow)])    # 32: 31 s, -m slow
def test_planar_pfaffian_equals_the_certified_oracle(L):
    """Warm (float64 route), cold (double-double elimination, stacked fronts) and colder than
    beta |J| = 12 (the ground-state line) on +-J grids, two seeds."""
    _check_against_the_oracle(L, (0, 1), BETAS)


@pytest.mark.slow
def test_planar_pfaffian_equals_the_certified_oracle_on_64_by_64():
    """(The oracle certifies no value colder than beta |J| = 10 at this size.)"""
    _check_against_the_oracle(64, (0, 1), BETAS[:5])


def test_planar_pfaffian_equals_brute_force_on_4_by_4():
    """Every beta of the oracle checks (and the line from 12 on) against enumeration of 2^16 states."""
    for seed in range(4):
        n, edges, J, positions = _pm_j_grid(4, seed)
        for beta in BETAS:
            ref = naive_log_z(IsingModel.from_arrays(n, beta, edges, J))
            got = planar_pfaffian._method_log_z(edges, J, np.zeros(n), [], positions, beta, n, {})
            assert abs(got - ref) <= _tolerance(beta) * abs(ref), (seed, beta, got, ref)
