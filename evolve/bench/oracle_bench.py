"""`evolve perf tn | planar | treewidth`: each new oracle path against the baseline it replaces,
measured in the same process (seconds, ratios, and the difference in log Z between the two).

- tn: P06 (random 3-regular +-1 glass, beta = 1): the path search's previous settings and permute
  blocks against now (:mod:`evolve.bench.tn_bench`).
- planar: P04 (+-J grid): the oracle end to end in one thread against the elimination's subtrees
  in threads (wall and CPU seconds); the elimination in float64 and in double-double; the cost
  and size of the running bound; with threads, the lone fronts' dense updates shared or not.
- treewidth: complete binary tree with fields (heap-indexed): variable elimination against the
  tensor network and the transfer matrix.
"""

from __future__ import annotations

import time

import numpy as np

from evaluators.oracles.base import NotApplicable, TooLarge
from evaluators.oracles.dual_pfaffian import dual_pfaffian_matrix
from evaluators.oracles.elimination import elimination_log_z
from evaluators.oracles.linalg.skew_pfaffian import (PfaffianSettings, SkewSystem, log_abs_pfaffian,
                                                     log_abs_pfaffian_bounded, multifrontal_log_pf)
from evaluators.oracles.linalg.subtree_threads import default_threads
from evaluators.oracles.planar import EVEN_SEPARATORS_ABOVE, planar_inputs, planar_log_z
from evaluators.oracles.tensor_network import tensor_network_log_z
from evaluators.oracles.transfer_matrix import transfer_matrix_log_z
from evolve.bench.tn_bench import bench_tn, format_tn
from tasks.model import IsingModel
from tasks.registry import get_task


def _timed(fn, *args, **kw):
    start = time.perf_counter()
    value = fn(*args, **kw)
    return value, time.perf_counter() - start


def _wall_cpu_timed(fn, *args, **kw):
    """(value, wall seconds, CPU seconds of this process, all its threads): with threads the CPU
    time exceeds the wall time; on a loaded machine the wall time also counts waits for a core."""
    start, cpu = time.perf_counter(), time.process_time()
    value = fn(*args, **kw)
    return value, time.perf_counter() - start, time.process_time() - cpu


def bench_planar(cases=((64, (1.0, 3.0, 8.0, 20.0)), (256, (1.0, 3.0, 5.0, 8.0))),
                 bounded_max_L: int = 64, seed: int = 0, warm_up: bool = True, repeats: int = 2) -> list[dict]:
    """One row per (L, beta): the oracle end to end (``planar_log_z``: embedding, matrix,
    arithmetic choice, elimination; cold, its certified ground-state line or a refusal) in one
    thread (the baseline) and with the elimination's subtrees in threads (the default), wall and
    CPU seconds and the difference in log Z (0: the same pivots), each the fastest of `repeats`
    runs taken in turns (the machine's other load comes and goes); then the Pfaffian elimination
    alone (threaded, in the oracle's layout) in float64 and in double-double, its delayed pivots
    and their difference; up to bounded_max_L also float64 with the running error bound."""

    if warm_up:  # compile every kernel first (numba), so no row pays for it
        bench_planar(cases=((6, (1.0, 20.0)),), bounded_max_L=6, warm_up=False)
    task = get_task("P04")
    rows = []
    for L, betas in cases:
        base = task.to_model(task.probe_params(L * L, seed, 0), L * L)
        for beta in betas:
            model = base.with_beta(beta)
            emb, K, _, _ = planar_inputs(model, "low_t")
            A, _, group_ptr, coords = dual_pfaffian_matrix(emb, K)
            # the threaded runs use every usable core whatever the load; "now" is what the oracle's
            # default would take at this moment (one thread while other work leaves no core free)
            row = {"L": L, "beta": beta, "threads": default_threads(A.shape[0], others=None),
                   "default_now": default_threads(A.shape[0])}
            for name in ("serial", "threaded"):
                row[name] = row[f"{name}_s"] = row[f"{name}_cpu"] = None
            for _ in range(repeats):
                for name, threads in (("serial", 1), ("threaded", row["threads"])):
                    try:
                        value, wall, cpu = _wall_cpu_timed(planar_log_z, model, threads=threads)
                    except TooLarge:
                        continue
                    if row[f"{name}_s"] is None or wall < row[f"{name}_s"]:
                        row[name], row[f"{name}_s"], row[f"{name}_cpu"] = value, wall, cpu
            row["thread_diff"] = abs(row["threaded"] - row["serial"]) if row["serial"] is not None else None
            cold = float(np.abs(K).max()) > EVEN_SEPARATORS_ABOVE
            for name, ext in (("f64", False), ("dd", True)):
                stats: list = []
                settings = PfaffianSettings(extended=ext, even_separators=cold, threads=row["threads"])
                row[name], row[f"{name}_s"], _ = _wall_cpu_timed(log_abs_pfaffian, A, group_ptr, coords, settings,
                                                                 front_stats=stats)
                row[f"{name}_delayed"] = int(stats[0][:, 2].sum())
            row["abs_diff"] = abs(row["f64"] - row["dd"])
            # the fronts near the root with their dense updates shared or not (the default), in turns
            row["dd_shared_s"] = row["dd_unshared_s"] = row["shared_diff"] = None
            if row["threads"] > 1:
                settings = PfaffianSettings(extended=True, even_separators=cold, threads=row["threads"])
                for _ in range(repeats):
                    for key, share in (("dd_unshared_s", False), ("dd_shared_s", True)):
                        value, wall, _ = _wall_cpu_timed(_shared_or_not, A, group_ptr, coords, settings, share)
                        row["shared_diff"] = max(row["shared_diff"] or 0.0, abs(value - row["dd"]))
                        row[key] = wall if row[key] is None else min(row[key], wall)
            row["float64_bound"] = row["float64_bound_s"] = None
            if L <= bounded_max_L:
                (_, row["float64_bound"]), row["float64_bound_s"], _ = _wall_cpu_timed(log_abs_pfaffian_bounded, A,
                                                                                       group_ptr, coords)
            rows.append(row)
    return rows


def _shared_or_not(A, group_ptr, coords, settings: PfaffianSettings, share_fronts: bool) -> float:
    """:func:`log_abs_pfaffian` (the matrix's dissection included) with a lone front's dense updates
    shared with helper threads or not: the oracle never shares them (measured slower), so the
    choice is the elimination's own (``multifrontal_log_pf``), not a setting of the oracle's."""
    threads = settings.threads_for(A.shape[0])
    system = SkewSystem.of(A, group_ptr, coords, settings, threads)
    return float(multifrontal_log_pf(system, settings, threads, share_fronts=share_fronts)[0])


def format_planar(rows: list[dict]) -> str:
    def cell(r, key):
        return f"{r[key]:.2f} s" if r.get(key) is not None else "-"

    head = (f"{'L':>4}  {'beta':>5}  {'threads':>7}  {'now':>3}  {'serial wall':>11}  {'cpu':>7}  "
            f"{'threaded wall':>13}  {'cpu':>7}  {'ratio':>6}  {'|diff|':>7}  {'f64':>7}  {'dd':>7}  {'delayed':>7}  {'|f64 - dd|':>10}  "
            f"{'f64+bound':>9}  {'bound':>8}  {'dd unshared':>11}  {'dd shared':>9}  {'|diff|':>7}")
    lines = ["P04, +-J grid: the oracle end to end ('-': refused) in one thread and with the elimination's subtrees",
             "in threads ('threads': the usable cores; 'now': the default's choice at the load of the moment)",
             "(wall and CPU seconds, the faster of runs taken in turns; ratio of wall times; |difference|",
             "in log Z), and the Pfaffian elimination alone (matrix build excluded, threaded, wall) in float64 and",
             "double-double; then double-double with the lone fronts' dense updates not shared (the default)",
             "and shared (faster of runs in turns, wall; |difference| of the values)",
             head, "-" * len(head)]
    for r in rows:
        b = f"{r['float64_bound']:.1e}" if r["float64_bound"] is not None else "-"
        ratio = f"{r['serial_s'] / max(r['threaded_s'], 1e-9):.2f}x" if r["serial_s"] is not None else "-"
        diff = f"{r['thread_diff']:.0e}" if r["thread_diff"] is not None else "-"
        shared = f"{r['shared_diff']:.0e}" if r.get("shared_diff") is not None else "-"
        lines.append(f"{r['L']:>4}  {r['beta']:>5g}  {r['threads']:>7}  {r['default_now']:>3}  "
                     f"{cell(r, 'serial_s'):>11}  {cell(r, 'serial_cpu'):>7}  {cell(r, 'threaded_s'):>13}  {cell(r, 'threaded_cpu'):>7}  "
                     f"{ratio:>6}  {diff:>7}  {cell(r, 'f64_s'):>7}  {cell(r, 'dd_s'):>7}  {r['dd_delayed']:>7}  "
                     f"{r['abs_diff']:>10.1e}  {cell(r, 'float64_bound_s'):>9}  {b:>8}  "
                     f"{cell(r, 'dd_unshared_s'):>11}  {cell(r, 'dd_shared_s'):>9}  {shared:>7}")
    return "\n".join(lines)


def heap_tree(n: int, beta: float, seed: int = 0) -> IsingModel:
    """Complete binary tree (parent of i is (i - 1) // 2), Gaussian couplings and fields."""
    rng = np.random.default_rng(seed)
    i = np.arange(1, n)
    return IsingModel.from_arrays(n, beta, np.stack([i, (i - 1) // 2], 1), rng.normal(size=n - 1), rng.normal(size=n))


def bench_treewidth(sizes=(1023, 4095, 32767), baseline_max_n: int = 4095) -> list[dict]:
    """One row per n: variable elimination against the tensor network and the transfer matrix."""

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
