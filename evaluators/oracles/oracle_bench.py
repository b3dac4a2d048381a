"""`evolve perf tn | planar | treewidth`: each new oracle path against the baseline it replaces,
measured in the same process (seconds, ratios, and the difference in log Z between the two).

- tn: P06 (random 3-regular +-1 glass, beta = 1): the oracle before its buffer pool and 2^24-float
  budget against now (:mod:`evaluators.oracles.tn_bench`).
- planar: P04 (+-J grid), CPU seconds: the oracle end to end; the elimination in float64 and in
  double-double, the cold layout against the plain one; the cost and size of the running bound.
- treewidth: complete binary tree with fields (heap-indexed): variable elimination against the
  tensor network and the transfer matrix.
"""

from __future__ import annotations

import time

import numpy as np

from evaluators.oracles.base import NotApplicable, TooLarge
from evaluators.oracles.tn_bench import bench_tn, format_tn
from tasks.model import IsingModel
from tasks.registry import get_task


def _timed(fn, *args, **kw):
    start = time.perf_counter()
    value = fn(*args, **kw)
    return value, time.perf_counter() - start


def _cpu_timed(fn, *args, **kw):
    """(value, CPU seconds of this process): the planar kernels are single-threaded, and CPU time
    does not count the waits for a core that a loaded machine adds to the wall clock."""
    start = time.process_time()
    value = fn(*args, **kw)
    return value, time.process_time() - start


def bench_planar(cases=((64, (1.0, 3.0, 8.0, 20.0)), (256, (1.0, 3.0, 5.0, 8.0, 20.0, 100.0))),
                 bounded_max_L: int = 64, seed: int = 0, warm_up: bool = True) -> list[dict]:
    """One row per (L, beta), CPU seconds: the oracle end to end (``planar_log_z``: its
    arithmetic and, cold, its certified ground-state line or a refusal), and the Pfaffian
    elimination alone in float64 and in double-double, each in the layout the oracle now uses
    (even-remainder separators above EVEN_SEPARATORS_ABOVE; one-triangle fronts in double-double)
    against the plain layout and full-storage kernel (the baseline), with delayed pivots and
    differences in log Z; up to bounded_max_L also float64 with the running error bound."""
    from evaluators.oracles.dual_pfaffian import dual_pfaffian_matrix
    from evaluators.oracles.planar import EVEN_SEPARATORS_ABOVE, _setup, planar_log_z
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
                row["oracle"], row["oracle_s"] = _cpu_timed(planar_log_z, model)
            except TooLarge:
                row["oracle"], row["oracle_s"] = None, None
            emb, K, _, _ = _setup(model, "low_t")
            A, _, group_ptr, coords = dual_pfaffian_matrix(emb, K)
            cold = float(np.abs(K).max()) > EVEN_SEPARATORS_ABOVE
            for name, ext, new in (("f64_old", False, False), ("f64", False, True),
                                   ("dd_old", True, False), ("dd", True, True)):
                stats: list = []
                row[name], row[f"{name}_s"] = _cpu_timed(log_abs_pfaffian, A, group_ptr, coords, extended=ext,
                                                         even_separators=new and cold, half_kernel=new and ext,
                                                         front_stats=stats)
                row[f"{name}_delayed"] = int(stats[0][:, 2].sum())
            row["abs_diff"] = abs(row["f64"] - row["dd"])
            row["dd_diff"] = abs(row["dd"] - row["dd_old"])
            row["float64_bound"] = row["float64_bound_s"] = None
            if L <= bounded_max_L:
                (_, row["float64_bound"]), row["float64_bound_s"] = _cpu_timed(log_abs_pfaffian_bounded, A,
                                                                               group_ptr, coords)
            rows.append(row)
    return rows


def format_planar(rows: list[dict]) -> str:
    def cell(r, key):
        return f"{r[key]:.2f} s" if r.get(key) is not None else "-"

    def ratio(r, name):
        return f"{r[f'{name}_old_s'] / max(r[f'{name}_s'], 1e-9):5.1f}x"

    head = (f"{'L':>4}  {'beta':>5}  {'oracle':>8}  {'f64 old':>8}  {'f64 new':>8}  {'ratio':>6}  {'dd old':>8}  "
            f"{'dd new':>8}  {'ratio':>6}  {'delayed old / new':>17}  {'|new - old|':>11}  {'|f64 - dd|':>10}  "
            f"{'f64+bound':>9}  {'bound':>8}")
    lines = ["P04, +-J grid, CPU seconds: the oracle end to end ('-': refused), and the Pfaffian elimination alone",
             "(matrix build excluded) in float64 and double-double, in the plain layout (old) and the cold layout",
             "the oracle now uses (new); delayed pivots and |new - old| of double-double",
             head, "-" * len(head)]
    for r in rows:
        b = f"{r['float64_bound']:.1e}" if r["float64_bound"] is not None else "-"
        delayed = f"{r['dd_old_delayed']} / {r['dd_delayed']}"
        lines.append(f"{r['L']:>4}  {r['beta']:>5g}  {cell(r, 'oracle_s'):>8}  {cell(r, 'f64_old_s'):>8}  "
                     f"{cell(r, 'f64_s'):>8}  {ratio(r, 'f64'):>6}  {cell(r, 'dd_old_s'):>8}  {cell(r, 'dd_s'):>8}  "
                     f"{ratio(r, 'dd'):>6}  {delayed:>17}  {r['dd_diff']:>11.1e}  {r['abs_diff']:>10.1e}  "
                     f"{cell(r, 'float64_bound_s'):>9}  {b:>8}")
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
