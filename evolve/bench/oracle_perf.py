"""`evolve perf oracles`: each task's exact method at several sizes, timed against the baseline it
replaces (brute force where brute force can still run, dense linear algebra for the planar method).
"""

from __future__ import annotations

import time

from evaluators.oracles.brute import brute_log_z
from evaluators.oracles.planar import planar_dense_baseline_log_z
from evaluators.oracles.registry import exact_log_z
from tasks.registry import get_task

BRUTE_BASELINE_MAX_N = 26
DENSE_BASELINE_MAX_N = 1024  # dense slogdet grows as L^6: 32 x 32 takes seconds

# (task, n) rows of the table: small sizes have a brute-force baseline, large ones have none
SIZES = {
    "P01": (20, 100_000), "P02": (20, 100_000), "P03": (16, 25, 4096, 65536),
    "P04": (16, 25, 1024, 4096, 16384, 65536), "P05": (24, 10_000), "P06": (24, 26, 100, 150),
}


def _timed(fn, *args) -> tuple[float, float]:
    start = time.perf_counter()
    value = fn(*args)
    return value, time.perf_counter() - start


def measure_oracles(seed: int = 0, sizes: dict | None = None) -> list[dict]:
    """One row per (task, n): method, seconds, baseline name and seconds, ratio, |difference| in log Z."""
    brute_log_z(get_task("P06").to_model(get_task("P06").probe_params(8, 0, 0), 8))  # JIT warm-up
    rows = []
    for task_id, ns in (sizes or SIZES).items():
        task = get_task(task_id)
        for n in ns:
            model = task.to_model(task.probe_params(n, seed, 0), n)
            exact_log_z(model)  # warm caches and compilation: time the second call
            res = exact_log_z(model)
            row = {"task": task_id, "n": n, "method": res.method, "seconds": res.seconds, "log_z": res.log_z,
                   "baseline": None, "baseline_seconds": None, "ratio": None, "abs_diff": None}
            base = None
            if n <= BRUTE_BASELINE_MAX_N and res.method != "brute":
                base = ("brute", brute_log_z)
            elif res.method == "planar" and n <= DENSE_BASELINE_MAX_N:
                base = ("dense slogdet", planar_dense_baseline_log_z)
            if base is not None:
                value, secs = _timed(base[1], model)
                row.update(baseline=base[0], baseline_seconds=secs, ratio=secs / max(res.seconds, 1e-9),
                           abs_diff=abs(value - res.log_z))
            rows.append(row)
    return rows


def format_rows(rows: list[dict]) -> str:
    head = f"{'task':4}  {'n':>12}  {'method':16} {'seconds':>9}  {'baseline':14} {'seconds':>9}  {'ratio':>8}  {'|dlogZ|':>8}"
    lines = [head, "-" * len(head)]
    for r in rows:
        b = r["baseline"] or "-"
        bs = f"{r['baseline_seconds']:9.4f}" if r["baseline_seconds"] is not None else f"{'-':>9}"
        ratio = f"{r['ratio']:7.1f}x" if r["ratio"] is not None else f"{'-':>8}"
        diff = f"{r['abs_diff']:8.1e}" if r["abs_diff"] is not None else f"{'-':>8}"
        lines.append(f"{r['task']:4}  {r['n']:>12}  {r['method']:16} {r['seconds']:9.4f}  {b:14} {bs}  {ratio}  {diff}")
    return "\n".join(lines)
