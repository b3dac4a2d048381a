"""The oracle benchmarks run end to end at tiny sizes and their two paths agree (no timing asserted)."""

from evaluators.oracles.contraction.binary_permute import PermuteKernel
from evaluators.oracles.contraction import path_search as ps
from evaluators.oracles import tensor_network as tn
from evaluators.oracles.contraction import executor_rates
from evaluators.oracles.contraction.executor_rates import DEFAULT_RATES
from evolve.bench.oracle_bench import (
    bench_planar,
    bench_tn,
    bench_treewidth,
    format_planar,
    format_tn,
    format_treewidth,
)


def test_tn_bench_paths_agree():
    rows = bench_tn(sizes=(24,))
    assert rows[0]["abs_diff"] < 1e-10 and rows[0]["old_blocks_s"] is not None
    assert "P06" in format_tn(rows)


def test_tn_bench_compares_the_old_and_new_search_on_searched_sliced_trees(monkeypatch, tmp_path):
    """Where a search runs (every greedy path deemed costly) and the trees are sliced, the before
    and now search settings and permute kernels agree on log Z.
    Now's costs are learned (records of a write worth 300 flops), before's the fixed default."""
    monkeypatch.setenv("STATMECH_CACHE", str(tmp_path))
    monkeypatch.delenv(executor_rates.SWITCH, raising=False)
    for f, r in ((2e11, 0.01), (5e11, 0.02), (3e11, 0.04), (7e11, 0.08)):
        executor_rates.record_contraction(f, f * r, 1e-11 * f + 3e-9 * f * r)
    monkeypatch.setattr(tn, "GREEDY_ENOUGH_FLOPS", 0.0)
    monkeypatch.setattr(tn, "DEFAULT_MAX_WIDTH", 8)
    # numba copies from 2^5 entries: now's tiles of runs of 2^2, before's gather kernel in blocks of 2^4
    rows = bench_tn(sizes=(60,), seeds=(0, 1), now_permute=PermuteKernel(run_bits=2, block_bits=2),
                    before_permute=PermuteKernel(run_bits=0, block_bits=2))
    assert len(rows) == 2 and all(r["now_slices"] > 1 and r["before_slices"] > 1 for r in rows)
    assert all(r["abs_diff"] < 1e-10 for r in rows)
    assert executor_rates.current() is DEFAULT_RATES   # each side's rates were passed, no scope left open
    assert all(r["before_rates"] == f"{DEFAULT_RATES.combo_factor} (default)" for r in rows)
    assert all(r["now_rates"] == "300 (fitted)" for r in rows)


def test_planar_bench_arithmetics_and_threads_agree_when_warm():
    rows = bench_planar(cases=((6, (0.5, 8.0)),), bounded_max_L=6)
    assert rows[0]["abs_diff"] < 1e-12 and rows[0]["float64_bound"] is not None
    assert all(r["thread_diff"] == 0.0 and r["serial"] == r["threaded"] for r in rows)
    assert "P04" in format_planar(rows)


def test_treewidth_bench_elimination_agrees_with_the_tensor_network():
    rows = bench_treewidth(sizes=(63,))
    assert rows[0]["tensor_network_abs_diff"] < 1e-10
    assert "binary tree" in format_treewidth(rows)
