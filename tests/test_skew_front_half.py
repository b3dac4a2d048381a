"""The cold layout of the sparse skew Pfaffian: the one-triangle front kernel against the
full-storage kernel it replaces in double-double, and the even-remainder separators against the
plain ones (same values, the parity property they promise, fewer delayed pivots)."""

from __future__ import annotations

import numpy as np
import pytest

from evaluators.oracles.dual_pfaffian import dual_pfaffian_matrix
from evaluators.oracles.linalg.nested_dissection import grouped_dissection
from evaluators.oracles.planar import planar_inputs
from evaluators.oracles.linalg.skew_front import eliminate_front
from evaluators.oracles.linalg.skew_front_half import eliminate_front_half
from evaluators.oracles.linalg.skew_pfaffian import PfaffianSettings, LEAF_NODES, log_abs_pfaffian
from tasks.registry import get_task


def random_front(rng, f: int) -> np.ndarray:
    """Dense skew front, entries spanning 12 orders of magnitude, some of them zero."""
    S = rng.normal(size=(f, f)) * 10.0 ** rng.integers(-12, 1, (f, f))
    S[rng.random((f, f)) < rng.uniform(0.0, 0.7)] = 0.0
    S = np.triu(S, 1)
    return S - S.T


def p04_matrix(L: int, beta: float, seed: int = 0):
    task = get_task("P04")
    model = task.to_model(task.probe_params(L * L, seed, 0), L * L).with_beta(beta)
    emb, K, _, _ = planar_inputs(model, "low_t")
    return dual_pfaffian_matrix(emb, K)


@pytest.mark.parametrize("ext", [False, True])
def test_one_triangle_kernel_matches_the_full_kernel(ext):
    """Same pivots (continuous random entries: no ties), same sum of ln |pivot|, same Schur
    complement left over, on fronts with every share of fully summed nodes."""
    rng = np.random.default_rng(11)
    for trial in range(60):
        f = int(rng.integers(1, 40))
        k = int(rng.integers(0, f + 1))
        u = float(rng.choice([0.0, 0.01, 0.5]))
        S = random_front(rng, f)
        lo = np.zeros_like(S) if ext else np.zeros((1, 1))
        H1, L1 = S.copy(), lo.copy()
        s_full, n_full, loc_full, _ = eliminate_front(H1, L1, ext, np.zeros((1, 1)), False, k, u)
        H2, L2 = S.copy(), lo.copy()
        s_half, n_half, loc_half = eliminate_front_half(H2, L2, ext, k, u)
        assert n_half == n_full, trial
        assert abs(s_half - s_full) <= 1e-12 * max(1.0, abs(s_full)), trial
        assert sorted(loc_half[:n_half]) == sorted(loc_full[:n_full]), trial
        # the remaining blocks, each indexed by original position
        order_full = np.argsort(loc_full[:n_full])
        order_half = np.argsort(loc_half[:n_half])
        rest_full = (H1 + (L1 if ext else 0.0))[:n_full, :n_full][np.ix_(order_full, order_full)]
        rest_half = (H2 + (L2 if ext else 0.0))[:n_half, :n_half][np.ix_(order_half, order_half)]
        scale = max(1e-300, float(np.abs(rest_full).max(initial=0.0)))
        assert np.abs(rest_half - rest_full).max(initial=0.0) <= 1e-10 * scale, trial
        assert np.array_equal(rest_half, -rest_half.T), trial  # handed back in full skew storage


def test_even_remainder_separators_leave_every_cut_group_even_below():
    """Every group with nodes in a separator has an even number of nodes in the subtrees below
    it (nodes before the separator in the order); the plain separators do not promise that."""
    A, _, group_ptr, coords = p04_matrix(32, 8.0)
    csr = A.tocsr()
    group_of = np.repeat(np.arange(len(group_ptr) - 1), np.diff(group_ptr))
    odd = {}
    for even in (False, True):
        perm, own_lo, own_hi, _ = grouped_dissection(csr, group_ptr, coords, LEAF_NODES, even)
        assert np.array_equal(np.sort(perm), np.arange(A.shape[0]))
        position = np.empty_like(perm)
        position[perm] = np.arange(len(perm))
        odd[even] = 0
        for t in range(len(own_lo)):
            if t == 0 or own_hi[t] - own_lo[t] == 0:
                continue
            for g in np.unique(group_of[perm[own_lo[t]:own_hi[t]]]):
                nodes = np.arange(group_ptr[g], group_ptr[g + 1])
                below = int(np.sum(position[nodes] < own_lo[t]))
                odd[even] += below % 2
    assert odd[True] == 0
    assert odd[False] > 0


@pytest.mark.parametrize("beta", [4.0, 8.0, 12.0])
def test_cold_layout_gives_the_same_log_pfaffian_with_fewer_delayed_pivots(beta):
    """P04 32 x 32 (three draws): double-double in the cold layout against the plain layout and
    full kernel (an independent order of operations), and the delayed pivots it saves."""
    for seed in range(3):
        A, _, group_ptr, coords = p04_matrix(32, beta, seed)
        plain_stats, cold_stats = [], []
        plain = log_abs_pfaffian(A, group_ptr, coords, PfaffianSettings(extended=True, half_kernel=False),
                                 front_stats=plain_stats)
        cold = log_abs_pfaffian(A, group_ptr, coords, PfaffianSettings(extended=True, even_separators=True),
                                front_stats=cold_stats)
        assert abs(cold - plain) <= 1e-13 * abs(plain), (beta, seed)
        assert cold_stats[0][:, 2].sum() < 0.75 * plain_stats[0][:, 2].sum(), (beta, seed)
