"""`evolve perf tn`: the tensor-network oracle against its configuration before the buffer pool, in
the same process (seconds, ratios, and the difference in log Z between the two).

P06 (random 3-regular +-1 glass, beta = 1, one spin fixed by the global flip in both). "before": the
oracle as it was (``tensor_network._tree`` with the 2^26-float budget of then, its slices contracted
by the same executor but every product and permuted copy a fresh allocation: :func:`unpooled_linear_log`).
"now": ``tensor_network._tree(..., "auto", DEFAULT_MAX_WIDTH)`` (2^24 floats) and ``contract_log``
(pooled buffers, one pool per slice worker). Both search their own path (the search is randomised,
so the trees differ); with ``cross_executors``, now's tree is also contracted without the pool: the
executor's ratio on one tree.
"""

from __future__ import annotations

import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import cotengra as ctg
import numpy as np
from threadpoolctl import threadpool_limits

from evaluators.oracles import linear_contraction as lc
from evaluators.oracles import tensor_network as tn
from evaluators.oracles.log_contraction import SLICE_WORKERS, contract_log
from tasks.registry import get_task

BEFORE_MAX_WIDTH = 26  # the memory budget before: 2^26 floats


def _timed(fn, *args, **kw):
    start = time.perf_counter()
    value = fn(*args, **kw)
    return value, time.perf_counter() - start


def _timed_cpu(fn, *args, **kw):
    """The value, wall seconds and CPU seconds of this process (all threads): on the shared cores
    here the CPU seconds vary less with the other work than the wall clock does."""
    cpu = time.process_time()
    value, wall = _timed(fn, *args, **kw)
    return value, wall, time.process_time() - cpu


class _FreshBuffers(lc.Buffers):
    """Never takes a buffer back: every take is a fresh ``np.empty``, as before the pool."""

    def give(self, buffer) -> None:
        pass


def unpooled_linear_log(tree, log_arrays, slice_workers: int = SLICE_WORKERS) -> float:
    """The float64 executor before the pool: the same pairwise contractions and range checks, every
    intermediate a fresh allocation; slices ``slice_workers`` at a time in threads, one BLAS thread."""
    arrays = [np.exp(a) for a in log_arrays]
    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(max_workers=slice_workers) as pool:
        return lc.log_sum(list(pool.map(lambda i: lc._contract_slice(tree, arrays, i, _FreshBuffers()),
                                        range(tree.nslices))))


def bench_tn(sizes=(100, 150, 200, 250), seeds=(0,), cross_executors: bool = True) -> list[dict]:
    """One row per (n, seed): the greedy path (cotengra's Rust finder), the oracle before and now
    (path search and contraction timed apart), and with ``cross_executors`` now's tree contracted
    without the pool too."""
    task = get_task("P06")
    warm = tn._build(task.to_model(task.probe_params(20, 0, 0), 20).with_beta(1.0))
    contract_log(tn._tree(warm, "greedy", 26), warm.arrays)  # JIT warm-up
    rows = []
    for n in sizes:
        for seed in seeds:
            net = tn._build(task.to_model(task.probe_params(n, seed, 0), n).with_beta(1.0))
            shapes = [a.shape for a in net.arrays]
            row = {"n": n, "seed": seed}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                greedy, row["greedy_path_s"] = _timed(ctg.array_contract_tree, net.inputs, output=(), shapes=shapes,
                                                      optimize="greedy")
            row["greedy_flops"] = float(greedy.contraction_cost())

            tn._TREE_CACHE.clear()
            before, row["before_path_s"] = _timed(tn._tree, net, "auto", BEFORE_MAX_WIDTH)
            row.update(before_flops=float(before.contraction_cost()), before_slices=int(before.nslices))
            row["before_log_z"], row["before_contract_s"], row["before_contract_cpu_s"] = _timed_cpu(
                unpooled_linear_log, before, net.arrays)
            row["before_total_s"] = row["before_path_s"] + row["before_contract_s"]

            tn._TREE_CACHE.clear()
            now, row["now_path_s"] = _timed(tn._tree, net, "auto", tn.DEFAULT_MAX_WIDTH)
            row.update(now_flops=float(now.contraction_cost()), now_writes=float(now.total_write()),
                       now_slices=int(now.nslices))
            row["now_log_z"], row["now_contract_s"], row["now_contract_cpu_s"] = _timed_cpu(contract_log, now, net.arrays)
            row["now_total_s"] = row["now_path_s"] + row["now_contract_s"]
            row["abs_diff"] = abs(row["now_log_z"] - row["before_log_z"])
            row["old_executor_s"] = None
            if cross_executors:
                value, row["old_executor_s"], row["old_executor_cpu_s"] = _timed_cpu(unpooled_linear_log, now, net.arrays)
                row["executor_abs_diff"] = abs(value - row["now_log_z"])
            for key in ("now_log_z", "before_log_z"):
                row[key] += net.log_offset
            rows.append(row)
    return rows


def format_tn(rows: list[dict]) -> str:
    head = (f"{'n':>4} {'seed':>4}  {'greedy':>14}  {'before: search':>14} {'flops':>8} {'slices':>6} {'contract':>8} "
            f"{'total':>8}  {'now: search':>11} {'flops':>8} {'slices':>6} {'contract':>8} {'total':>7}  {'CPU contract':>14}  "
            f"{'before/now':>10}  {'unpooled, same tree':>20}  {'|dlogZ|':>7}")
    lines = ["P06, random 3-regular +-1 glass, beta = 1; before = budget 2^26 floats, every intermediate a fresh",
             "allocation; now = budget 2^24 floats, buffers reused across each slice worker's slices; CPU",
             "contract = CPU seconds of the contraction, before / now",
             head, "-" * len(head)]
    for r in rows:
        cross = "-"
        if r["old_executor_s"] is not None:
            cross = f"{r['old_executor_s']:.1f} s ({r['old_executor_s'] / r['now_contract_s']:.1f}x)"
        diff = max(r["abs_diff"], r.get("executor_abs_diff") or 0.0)
        lines.append(f"{r['n']:>4} {r['seed']:>4}  {r['greedy_path_s']:>6.3f} s {r['greedy_flops']:>5.0e}  "
                     f"{r['before_path_s']:>12.1f} s {r['before_flops']:>8.1e} {r['before_slices']:>6} "
                     f"{r['before_contract_s']:>6.1f} s {r['before_total_s']:>6.1f} s  "
                     f"{r['now_path_s']:>9.1f} s {r['now_flops']:>8.1e} {r['now_slices']:>6} {r['now_contract_s']:>6.1f} s "
                     f"{r['now_total_s']:>5.1f} s  {r['before_contract_cpu_s']:>6.1f}/{r['now_contract_cpu_s']:<5.1f} s  "
                     f"{r['before_total_s'] / r['now_total_s']:>9.1f}x  {cross:>20}  "
                     f"{diff:>7.0e}")
    return "\n".join(lines)
