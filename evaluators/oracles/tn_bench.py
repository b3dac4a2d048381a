"""`evolve perf tn`: the tensor-network oracle against the configuration before issue 18's third pass,
in the same process (seconds, ratios, and the difference in log Z between the two).

P06 (random 3-regular +-1 glass, beta = 1, one spin fixed by the global flip in both). "before": a
serial KaHyPar-agglomerative search scored by flops + 256 x writes, stopped at best flops / 5e9 s,
its winner reconfigured and split in two for the slice threads, contracted by cotengra's executor
(stripped exponents, numpy transposes) with one BLAS thread and two slices at a time; refused
(TooLarge) above 3e11 flops. "now": ``tensor_network._tree(..., "auto")`` and ``contract_log``. With
``cross_executors``, now's tree is also contracted by the old executor: the executor's ratio on one
tree.
"""

from __future__ import annotations

import math
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import cotengra as ctg
import numpy as np
from cotengra.contract import einsum as ctg_einsum
from cotengra.contract import tensordot as ctg_tensordot
from threadpoolctl import threadpool_limits

from evaluators.oracles import tensor_network as tn
from evaluators.oracles.linear_contraction import TINY, RangeExceeded, log_sum
from evaluators.oracles.log_contraction import contract_log
from tasks.registry import get_task

BEFORE_MAX_FLOPS = 3e11  # the oracle before refused costlier paths (TooLarge)
BEFORE_COMBO = 256


def _timed(fn, *args, **kw):
    start = time.perf_counter()
    value = fn(*args, **kw)
    return value, time.perf_counter() - start


def cotengra_linear_log(tree, log_arrays, slice_workers: int = 2) -> float:
    """The float64 executor before: cotengra's own contraction with stripped exponents (abs, max
    and divide after each pairwise product) and numpy's transposes, each intermediate checked for
    underflow as in :mod:`evaluators.oracles.linear_contraction`; slices ``slice_workers`` at a
    time in threads, one BLAS thread."""

    def check(out, summed):
        if out.size and not float(out.min()) >= summed * TINY:
            raise RangeExceeded
        return out

    def checked_tensordot(a, b, axes):
        return check(ctg_tensordot(a, b, axes), math.prod(a.shape[i] for i in axes[0]))

    def checked_einsum(eq, a, b=None):
        out = ctg_einsum(eq, a, b)
        lhs, rhs = eq.split("->")
        sizes = {}
        for term, arr in zip(lhs.split(","), (a, b)):
            sizes.update(zip(term, arr.shape))
        return check(out, math.prod(sizes[c] for c in set(lhs.replace(",", "")) - set(rhs)))

    arrays = [np.exp(a) for a in log_arrays]

    def one_slice(i: int) -> float:
        mantissa, exponent10 = tree.contract_slice(arrays, i, strip_exponent=True,
                                                   implementation=(checked_einsum, checked_tensordot))
        return math.log(float(mantissa)) + float(exponent10) * math.log(10.0)

    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(max_workers=slice_workers) as pool:
        return log_sum(list(pool.map(one_slice, range(tree.nslices))))


def before_tree(net, max_width: float | None = None):
    """The path the oracle found before (see the module docstring), within 2^max_width floats
    (default ``tensor_network.DEFAULT_MAX_WIDTH``)."""
    max_width = max_width or tn.DEFAULT_MAX_WIDTH
    shapes = [a.shape for a in net.arrays]

    def combo(tree):
        return float(tree.combo_cost(factor=BEFORE_COMBO))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = tn._within_budget(ctg.array_contract_tree(net.inputs, output=(), shapes=shapes, optimize="greedy"),
                                 max_width)
        if tree.contraction_cost() > tn.GREEDY_ENOUGH_FLOPS:
            opt = ctg.HyperOptimizer(methods=["kahypar-agglom"], max_repeats=512, max_time="rate:5e9",
                                     minimize=f"combo-{BEFORE_COMBO}", parallel=False, progbar=False,
                                     slicing_opts={"target_size": 2 ** int(max_width)})
            searched = tn._within_budget(ctg.array_contract_tree(net.inputs, output=(), shapes=shapes, optimize=opt),
                                         max_width)
            better = tn._within_budget(searched.subtree_reconfigure(minimize=f"combo-{BEFORE_COMBO}"), max_width)
            searched = better if combo(better) < combo(searched) else searched
            tree = searched if combo(searched) < combo(tree) else tree
    if tree.nslices < 2 and tree.contraction_cost() > tn.SPLIT_FLOPS:
        tree = tree.slice(target_slices=2)
    return tree


def bench_tn(sizes=(100, 150, 200, 250), seeds=(0,), cross_executors: bool = True) -> list[dict]:
    """One row per (n, seed): the greedy path (cotengra's Rust finder), the oracle before and now
    (path search and contraction timed apart), and with ``cross_executors`` now's tree contracted
    by the old executor too."""
    task = get_task("P06")
    warm = task.to_model(task.probe_params(20, 0, 0), 20).with_beta(1.0)
    tn.tensor_network_log_z(warm)  # JIT warm-up
    cotengra_linear_log(tn._tree(tn._build(warm), "greedy", 26), tn._build(warm).arrays)
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

            before, row["before_path_s"] = _timed(before_tree, net)
            row.update(before_flops=float(before.contraction_cost()), before_slices=int(before.nslices))
            row["before_contract_s"] = row["before_total_s"] = None
            if before.contraction_cost() <= BEFORE_MAX_FLOPS:
                row["before_log_z"], row["before_contract_s"] = _timed(cotengra_linear_log, before, net.arrays)
                row["before_total_s"] = row["before_path_s"] + row["before_contract_s"]

            tn._TREE_CACHE.clear()
            now, row["now_path_s"] = _timed(tn._tree, net, "auto", tn.DEFAULT_MAX_WIDTH)
            row.update(now_flops=float(now.contraction_cost()), now_writes=float(now.total_write()),
                       now_slices=int(now.nslices))
            row["now_log_z"], row["now_contract_s"] = _timed(contract_log, now, net.arrays)
            row["now_total_s"] = row["now_path_s"] + row["now_contract_s"]
            row["abs_diff"] = abs(row["now_log_z"] - row["before_log_z"]) if row["before_contract_s"] else None
            row["old_executor_s"] = None
            if cross_executors:
                value, row["old_executor_s"] = _timed(cotengra_linear_log, now, net.arrays)
                row["executor_abs_diff"] = abs(value - row["now_log_z"])
            for key in ("now_log_z", "before_log_z"):
                if key in row:
                    row[key] += net.log_offset
            rows.append(row)
    return rows


def format_tn(rows: list[dict]) -> str:
    def secs(x):
        return f"{x:.1f} s" if x is not None else "-"

    head = (f"{'n':>4} {'seed':>4}  {'greedy':>14}  {'before: search':>14} {'flops':>8} {'slices':>6} {'contract':>8} "
            f"{'total':>8}  {'now: search':>11} {'flops':>8} {'slices':>6} {'contract':>8} {'total':>7}  "
            f"{'before/now':>10}  {'old executor, same tree':>23}  {'|dlogZ|':>7}")
    lines = ["P06, random 3-regular +-1 glass, beta = 1; before = serial search (flops + 256 x writes, best",
             "flops / 5e9 s), cotengra's executor, TooLarge above 3e11 flops ('-' = refused); now = search on",
             "both cores to the predicted contraction time (flops + 64 x writes), blocked-permute executor",
             head, "-" * len(head)]
    for r in rows:
        ratio = f"{r['before_total_s'] / r['now_total_s']:.1f}x" if r["before_total_s"] else "-"
        cross = "-"
        if r["old_executor_s"] is not None:
            cross = f"{r['old_executor_s']:.1f} s ({r['old_executor_s'] / r['now_contract_s']:.1f}x)"
        diffs = [d for d in (r["abs_diff"], r.get("executor_abs_diff")) if d is not None]
        lines.append(f"{r['n']:>4} {r['seed']:>4}  {r['greedy_path_s']:>6.3f} s {r['greedy_flops']:>5.0e}  "
                     f"{r['before_path_s']:>12.1f} s {r['before_flops']:>8.1e} {r['before_slices']:>6} "
                     f"{secs(r['before_contract_s']):>8} {secs(r['before_total_s']):>8}  "
                     f"{r['now_path_s']:>9.1f} s {r['now_flops']:>8.1e} {r['now_slices']:>6} {secs(r['now_contract_s']):>8} "
                     f"{secs(r['now_total_s']):>7}  {ratio:>10}  {cross:>23}  "
                     f"{(f'{max(diffs):.0e}' if diffs else '-'):>7}")
    return "\n".join(lines)
