"""A front's dense updates shared by threads (:mod:`evaluators.oracles.linalg.skew_front_split`): the
same front as the one-thread kernel bit for bit (pivots, logs, what remains), alone and inside
the threaded elimination of P04 grids, where only a front running alone shares its updates."""

from __future__ import annotations

import multiprocessing
import threading

import numpy as np
import pytest

from evaluators.oracles.linalg import skew_front_split
from evaluators.oracles.dual_pfaffian import dual_pfaffian_matrix
from evaluators.oracles.planar import planar_inputs
from evaluators.oracles.linalg.skew_front_half import eliminate_front_half
from evaluators.oracles.linalg.skew_front_split import FrontHelpers, eliminate_front_half_split, row_bounds
from evaluators.oracles.linalg.skew_pfaffian import PfaffianSettings, SkewSystem, log_abs_pfaffian, multifrontal_log_pf
from tasks.registry import get_task


def random_front(rng, f: int, zeros: float) -> np.ndarray:
    """Dense skew front, entries spanning 12 orders of magnitude, a share `zeros` of them zero."""
    S = rng.normal(size=(f, f)) * 10.0 ** rng.integers(-12, 1, (f, f))
    S[rng.random((f, f)) < zeros] = 0.0
    S = np.triu(S, 1)
    return S - S.T


@pytest.fixture
def small_split(monkeypatch):
    """Share every dense update from 8 active rows on, so small fronts exercise the split."""
    monkeypatch.setattr(skew_front_split, "SPLIT_MIN_ROWS", 8)


def test_row_bounds_split_the_triangle_evenly():
    for na, parts in ((1000, 2), (1000, 3), (9, 4), (300, 1)):
        b = row_bounds(na, parts)
        assert b[0] == 0 and b[-1] == na and b == sorted(b) and len(b) == parts + 1
        work = [(hi * hi - lo * lo) / 2 for lo, hi in zip(b, b[1:])]
        if na >= 300:
            assert max(work) - min(work) <= 0.01 * na * na / 2 + na


@pytest.mark.parametrize("ext", [False, True])
@pytest.mark.parametrize("parts", [2, 3])
def test_split_front_is_the_serial_front_bit_for_bit(small_split, ext, parts):
    rng = np.random.default_rng(7)
    helpers = FrontHelpers(parts - 1)
    split_steps = 0
    try:
        for trial in range(40):
            f = int(rng.integers(1, 120))
            k = int(rng.integers(0, f + 1))
            u = float(rng.choice([0.0, 0.01, 0.5]))
            S = random_front(rng, f, float(rng.choice([0.0, 0.0, 0.3, 0.7])))
            lo = np.zeros_like(S) if ext else np.zeros((1, 1))
            H1, L1 = S.copy(), lo.copy()
            serial = eliminate_front_half(H1, L1, ext, k, u)
            H2, L2 = S.copy(), lo.copy()
            calls = []
            split = eliminate_front_half_split(H2, L2, ext, k, u, helpers, alone=lambda: calls.append(1) or True)
            split_steps += len(calls)
            assert split[0] == serial[0] and split[1] == serial[1], trial
            assert np.array_equal(split[2], serial[2]), trial
            assert np.array_equal(H1, H2) and np.array_equal(L1, L2), trial
    finally:
        helpers.close()
    assert split_steps > 100  # dense updates were shared


def p04_matrix(L: int, beta: float, seed: int = 0):
    task = get_task("P04")
    model = task.to_model(task.probe_params(L * L, seed, 0), L * L).with_beta(beta)
    emb, K, _, _ = planar_inputs(model, "low_t")
    return dual_pfaffian_matrix(emb, K)


def test_threaded_elimination_shares_the_lone_fronts_and_keeps_the_value(small_split, monkeypatch):
    """P04 64 x 64 at beta = 8 (double-double, cold layout): the threaded run with the top
    fronts' updates shared gives the one-thread value and front statistics bit for bit, and the
    helpers did run (counted by the threads that ran a part of an update)."""
    ran_in = []
    kernel = skew_front_split.dense_rows

    def counted(*args):
        ran_in.append(threading.current_thread().name)
        return kernel(*args)

    monkeypatch.setattr(skew_front_split, "dense_rows", counted)
    A, _, group_ptr, coords = p04_matrix(64, 8.0)
    stats = {1: [], 2: []}
    values = {threads: _shared(A, group_ptr, coords, threads, stats[threads]) for threads in (1, 2)}
    assert np.isfinite(values[1]) and values[2] == values[1]
    assert np.array_equal(stats[2][0], stats[1][0])
    assert any(name.startswith("front-helper") for name in ran_in)


def _shared(A, group_ptr, coords, threads: int, stats: list | None = None) -> float:
    """The cold double-double elimination with a lone front's dense updates shared with helper
    threads (``multifrontal_log_pf``'s share_fronts: not a setting of the oracle, which never shares)."""
    settings = PfaffianSettings(extended=True, even_separators=True, threads=threads)
    system = SkewSystem.of(A, group_ptr, coords, settings, threads)
    front_stats = np.zeros((system.fronts, 3), np.int64)
    value = multifrontal_log_pf(system, settings, threads, front_stats=front_stats, share_fronts=True)[0]
    if stats is not None:
        stats.append(front_stats)
    return float(value)


def _shared_fronts_log_pf(L: int) -> float:
    """Threaded, with every dense update of 8 rows and more shared (for a forked process)."""
    skew_front_split.SPLIT_MIN_ROWS = 8
    A, _, group_ptr, coords = p04_matrix(L, 8.0)
    return _shared(A, group_ptr, coords, 2)


def test_shared_fronts_in_a_forked_process():
    A, _, group_ptr, coords = p04_matrix(40, 8.0)
    serial = log_abs_pfaffian(A, group_ptr, coords, PfaffianSettings(extended=True, even_separators=True, threads=1))
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply(_shared_fronts_log_pf, (40,)) == serial
