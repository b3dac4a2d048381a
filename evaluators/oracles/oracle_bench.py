"""`evolve perf tn | planar | treewidth`: each new oracle path against the baseline it replaces,
measured in the same process (seconds, ratios, and the difference in log Z between the two).

- tn: P06 (random 3-regular +-1 glass, beta = 1): the greedy path (Rust and Python path
  finders), the landed search and executor settings, and the current ones.
- planar: P04 (+-J grid): the oracle end to end; the elimination in float64 and double-double,
  face-grouped order against the single-unit order; the cost and size of the running error bound.
- treewidth: complete binary tree with fields (heap-indexed): variable elimination against the
  tensor network and the transfer matrix.
"""

from __future__ import annotations

import math
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from cotengra.contract import einsum as ctg_einsum
from cotengra.contract import tensordot as ctg_tensordot
from threadpoolctl import threadpool_limits

from evaluators.oracles.base import NotApplicable, TooLarge
from evaluators.oracles.linear_contraction import TINY, RangeExceeded, log_sum
from tasks.model import IsingModel
from tasks.registry import get_task

BASELINE_MAX_FLOPS = 3e10  # contract a baseline path only when it is predicted to take under a minute


def _timed(fn, *args, **kw):
    start = time.perf_counter()
    value = fn(*args, **kw)
    return value, time.perf_counter() - start


def _cotengra_linear_log(tree, log_arrays, slice_workers: int = 2) -> float:
    """The float64 executor before issue 18's third pass (the baseline of the executor's ratio):
    cotengra's own contraction with stripped exponents (abs, max and divide after each pairwise
    product) and numpy's transposes, each intermediate checked for underflow as in
    :mod:`evaluators.oracles.linear_contraction`; slices ``slice_workers`` at a time in threads,
    with one BLAS thread."""
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


def _landed_tree(tn, net, max_width):
    """The path the oracle used before issue 18's second pass (the baseline; it was contracted
    with default BLAS threads, one slice at a time): greedy, then a KaHyPar-agglomerative
    search scored by "combo" with every trial sliced to the budget and no subtree
    reconfiguration, stopped at best flops / 2e9 seconds."""
    import cotengra as ctg

    shapes = [a.shape for a in net.arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        greedy = ctg.array_contract_tree(net.inputs, output=(), shapes=shapes, optimize="greedy")
        if greedy.contraction_cost() <= tn.GREEDY_ENOUGH_FLOPS:
            return tn._within_budget(greedy, max_width)
        opt = ctg.HyperOptimizer(methods=["kahypar-agglom"], max_repeats=512, max_time="rate:2e9", minimize="combo",
                                 parallel=False, progbar=False, slicing_opts={"target_size": 2 ** int(max_width)})
        searched = ctg.array_contract_tree(net.inputs, output=(), shapes=shapes, optimize=opt)
    return searched if searched.contraction_cost() < greedy.contraction_cost() else tn._within_budget(greedy, max_width)


def bench_tn(sizes=(100, 150, 200, 250), seed: int = 0, baseline_max_flops: float = BASELINE_MAX_FLOPS) -> list[dict]:
    """One row per n: the greedy path (Python and Rust finders), the landed path search and
    contraction (baseline: combo-scored sliced trials, BLAS at its default thread count) against
    the current one (``_tree(..., "auto")`` and ``contract_log`` with one BLAS thread), and the
    current path contracted with default BLAS threads (the executor's ratio on the same path).
    Baselines predicted to cost more than ``baseline_max_flops`` are not contracted."""
    import cotengra as ctg
    from cotengra.pathfinders.path_basic import GreedyOptimizer

    from evaluators.oracles import tensor_network as tn

    task = get_task("P06")
    tn.tensor_network_log_z(task.to_model(task.probe_params(20, 0, 0), 20).with_beta(1.0))  # JIT warm-up
    rows = []
    for n in sizes:
        model = task.to_model(task.probe_params(n, seed, 0), n).with_beta(1.0)
        net = tn._build(model)
        shapes = [a.shape for a in net.arrays]
        row = {"n": n}
        for name, opt in (("greedy_python", GreedyOptimizer(accel=False)), ("greedy", "greedy")):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree, secs = _timed(ctg.array_contract_tree, net.inputs, output=(), shapes=shapes, optimize=opt)
            row[f"{name}_path_s"] = secs
        row["greedy_flops"] = float(tree.contraction_cost())
        row["greedy_width"] = float(tree.contraction_width())

        tn._TREE_CACHE.clear()
        hyper, row["auto_path_s"] = _timed(tn._tree, net, "auto", tn.DEFAULT_MAX_WIDTH)
        row.update(auto_flops=float(hyper.contraction_cost()), auto_width=float(hyper.contraction_width()),
                   auto_slices=int(hyper.nslices))
        value, row["auto_contract_s"] = _timed(tn.contract_log, hyper, net.arrays)
        row["auto_total_s"] = row["auto_path_s"] + row["auto_contract_s"]
        row["log_z"] = net.log_offset + value
        row["threads_contract_s"] = None
        if hyper.contraction_cost() <= baseline_max_flops:
            threads_value, row["threads_contract_s"] = _timed(tn.contract_log, hyper, net.arrays, blas_threads=None)
            row["threads_abs_diff"] = abs(threads_value - value)

        landed, row["landed_path_s"] = _timed(_landed_tree, tn, net, tn.DEFAULT_MAX_WIDTH)
        row.update(landed_flops=float(landed.contraction_cost()), landed_slices=int(landed.nslices))
        row["landed_contract_s"] = None
        if landed.contraction_cost() <= baseline_max_flops:
            landed_value, row["landed_contract_s"] = _timed(tn.contract_log, landed, net.arrays, blas_threads=None,
                                                            slice_workers=1)
            row["landed_abs_diff"] = abs(landed_value - value)
        rows.append(row)
    return rows


def format_tn(rows: list[dict]) -> str:
    def secs(x):
        return f"{x:.1f} s" if x is not None else "not run"

    head = (f"{'n':>4}  {'greedy path (py / rust)':>24}  {'greedy flops':>12}  "
            f"{'landed search':>13}  {'flops':>8}  {'contract':>8}  {'total':>8}  "
            f"{'search':>7}  {'flops':>8}  {'slices':>6}  {'contract':>8}  {'total':>7}  "
            f"{'same path, BLAS threads':>23}  {'landed/now':>10}")
    lines = ["P06, random 3-regular +-1 glass, beta = 1 (one spin fixed by the global flip in every variant);",
             "landed = the previous search, BLAS threads, one slice at a time; now = reconfigured search, one BLAS",
             "thread, two slices at a time",
             head, "-" * len(head)]
    for r in rows:
        landed_total = (r["landed_path_s"] + r["landed_contract_s"]) if r["landed_contract_s"] is not None else None
        ratio = f"{landed_total / r['auto_total_s']:.1f}x" if landed_total is not None else "-"
        lines.append(f"{r['n']:>4}  {r['greedy_python_path_s']:>10.3f} / {r['greedy_path_s']:.3f} s  "
                     f"{r['greedy_flops']:>12.2e}  {r['landed_path_s']:>11.1f} s  {r['landed_flops']:>8.1e}  "
                     f"{secs(r['landed_contract_s']):>8}  {secs(landed_total):>8}  "
                     f"{r['auto_path_s']:>5.1f} s  {r['auto_flops']:>8.1e}  {r['auto_slices']:>6}  "
                     f"{r['auto_contract_s']:>6.1f} s  {r['auto_total_s']:>5.1f} s  {secs(r['threads_contract_s']):>23}  "
                     f"{ratio:>10}")
    return "\n".join(lines)


def bench_planar(cases=((64, (1.0, 3.0, 8.0, 20.0)), (256, (1.0, 3.0, 8.0, 20.0, 100.0))),
                 bounded_max_L: int = 64, baseline_max_L: int = 256, seed: int = 0, warm_up: bool = True) -> list[dict]:
    """One row per (L, beta): the oracle end to end (``planar_log_z``: its arithmetic and, cold,
    its certified ground-state line or a refusal), and the elimination alone in float64 and
    double-double, in the face-grouped order against the single-unit order it replaced (the
    baseline, up to baseline_max_L), with their differences in log Z; up to bounded_max_L also
    float64 with the running error bound."""
    from evaluators.oracles.dual_pfaffian import dual_pfaffian_matrix
    from evaluators.oracles.planar import _setup, planar_log_z
    from evaluators.oracles.skew_pfaffian import log_abs_pfaffian, log_abs_pfaffian_bounded

    if warm_up:  # compile every kernel first (numba), so no row pays for it
        bench_planar(cases=((6, (1.0, 20.0)),), bounded_max_L=6, warm_up=False)
    task = get_task("P04")
    rows = []
    for L, betas in cases:
        base = task.to_model(task.probe_params(L * L, seed, 0), L * L)
        for beta in betas:
            model = base.with_beta(beta)
            row = {"L": L, "beta": beta}
            try:
                row["oracle"], row["oracle_s"] = _timed(planar_log_z, model)
            except TooLarge:
                row["oracle"], row["oracle_s"] = None, None
            emb, K, _, _ = _setup(model, "low_t")
            for order, units in (("face", 4), ("unit", 1)):
                for arith, ext in (("f64", False), ("dd", True)):
                    row[f"{order}_{arith}"] = row[f"{order}_{arith}_s"] = None
                    if order == "unit" and L > baseline_max_L:
                        continue
                    A, _, group_ptr, coords = dual_pfaffian_matrix(emb, K, units)
                    row[f"{order}_{arith}"], row[f"{order}_{arith}_s"] = _timed(
                        log_abs_pfaffian, A, group_ptr, coords, extended=ext)
            row["abs_diff"] = abs(row["face_f64"] - row["face_dd"])
            row["float64_bound"] = row["float64_bound_s"] = None
            if L <= bounded_max_L:
                A, _, group_ptr, coords = dual_pfaffian_matrix(emb, K)
                (_, row["float64_bound"]), row["float64_bound_s"] = _timed(log_abs_pfaffian_bounded, A, group_ptr, coords)
            rows.append(row)
    return rows


def format_planar(rows: list[dict]) -> str:
    def cell(r, key):
        return f"{r[key]:.2f} s" if r.get(key) is not None else "-"

    head = (f"{'L':>4}  {'beta':>5}  {'oracle':>8}  {'f64 face':>8}  {'f64 unit':>8}  {'ratio':>6}  {'dd face':>8}  "
            f"{'dd unit':>8}  {'ratio':>6}  {'|f64 - dd|':>10}  {'|face-unit|':>11}  {'f64+bound':>9}  {'bound':>8}")
    lines = ["P04, +-J grid: the oracle end to end ('-': refused), and the Pfaffian elimination alone in the",
             "face-grouped order against the single-unit order (baseline); matrix build excluded",
             head, "-" * len(head)]
    for r in rows:
        ratios = [f"{r[f'unit_{a}_s'] / r[f'face_{a}_s']:5.1f}x" if r[f"unit_{a}_s"] else "-" for a in ("f64", "dd")]
        diff = f"{abs(r['face_dd'] - r['unit_dd']):.1e}" if r["unit_dd"] is not None else "-"
        b = f"{r['float64_bound']:.1e}" if r["float64_bound"] is not None else "-"
        lines.append(f"{r['L']:>4}  {r['beta']:>5g}  {cell(r, 'oracle_s'):>8}  {cell(r, 'face_f64_s'):>8}  "
                     f"{cell(r, 'unit_f64_s'):>8}  {ratios[0]:>6}  {cell(r, 'face_dd_s'):>8}  {cell(r, 'unit_dd_s'):>8}  "
                     f"{ratios[1]:>6}  {r['abs_diff']:>10.1e}  {diff:>11}  {cell(r, 'float64_bound_s'):>9}  {b:>8}")
    return "\n".join(lines)


def heap_tree(n: int, beta: float, seed: int = 0) -> IsingModel:
    """Complete binary tree (parent of i is (i - 1) // 2), Gaussian couplings and fields."""
    rng = np.random.default_rng(seed)
    i = np.arange(1, n)
    return IsingModel.from_arrays(n, beta, np.stack([i, (i - 1) // 2], 1), rng.normal(size=n - 1), rng.normal(size=n))


def bench_treewidth(sizes=(1023, 4095, 32767), baseline_max_n: int = 4095) -> list[dict]:
    """One row per n: variable elimination against the tensor network and the transfer matrix."""
    from evaluators.oracles.elimination import elimination_log_z
    from evaluators.oracles.tensor_network import tensor_network_log_z
    from evaluators.oracles.transfer_matrix import transfer_matrix_log_z

    elimination_log_z(heap_tree(31, 1.0))  # JIT warm-up
    rows = []
    for n in sizes:
        model = heap_tree(n, 1.0)
        value, secs = _timed(elimination_log_z, model)
        row = {"n": n, "elimination_s": secs, "log_z": value}
        for name, fn in (("tensor_network", tensor_network_log_z), ("transfer_matrix", transfer_matrix_log_z)):
            row[f"{name}_s"] = row[f"{name}_abs_diff"] = None
            if n > baseline_max_n:
                continue
            try:
                other, row[f"{name}_s"] = _timed(fn, model)
                row[f"{name}_abs_diff"] = abs(other - value)
            except (NotApplicable, TooLarge) as exc:
                row[f"{name}_s"] = f"refused ({type(exc).__name__})"
        rows.append(row)
    return rows


def format_treewidth(rows: list[dict]) -> str:
    head = f"{'n':>6}  {'elimination':>11}  {'tensor network':>22}  {'transfer matrix':>22}  {'|dlogZ|':>8}"
    lines = ["complete binary tree with fields (heap-indexed), beta = 1", head, "-" * len(head)]
    for r in rows:
        cells, diffs = [], []
        for name in ("tensor_network", "transfer_matrix"):
            s = r[f"{name}_s"]
            if isinstance(s, float):
                cells.append(f"{s:.3f} s ({s / r['elimination_s']:.0f}x)")
                diffs.append(r[f"{name}_abs_diff"])
            else:
                cells.append(s or "not run")
        diff = f"{max(diffs):.1e}" if diffs else "-"
        lines.append(f"{r['n']:>6}  {r['elimination_s']:>9.3f} s  {cells[0]:>22}  {cells[1]:>22}  {diff:>8}")
    return "\n".join(lines)


BENCHES = {"tn": (bench_tn, format_tn), "planar": (bench_planar, format_planar),
           "treewidth": (bench_treewidth, format_treewidth)}
