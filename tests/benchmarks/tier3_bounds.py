"""Figures of docs/tier3.md: what the offline baselines reach on the Tier-3 tasks, against exact values.

    PYTHONPATH=. python -m tests.benchmarks.tier3_bounds [--samples K] [--quick]

For T22 (random 3-regular +-J glass), T23 (cubic +-J glass) and T24 (toric code, depolarizing noise; the
model after the derivation's dual_layers step) at each size: the mean-field lower bound and the
tree-reweighted upper bound (default options, as the derivation renders them), the exact value (the
verifier's reference: brute force, the task's own enumeration, or the exact oracles), the gap (hi - lo) / n
and each bound's distance to the exact value per spin, with the seconds each took; then the boundary-MPS
ladder on T24's effective model: log P at each chi and its error against the exact value (chi-convergence).
Every bound is also checked (lo <= exact <= hi up to rounding): a violation is printed as VIOLATED.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from evaluators.oracle_cache import reference
from search.derivation.actions.dual_layers import _act_dual_layers
from search.derivation.runtime import _rt_start
from search.derivation.solvers.boundary_mps import _sol_boundary_mps
from search.derivation.solvers.mean_field import OPTION_SPACE as MF_OPTIONS, _sol_mean_field
from search.derivation.solvers.tree_reweighted import OPTION_SPACE as TRW_OPTIONS, _sol_tree_reweighted
from tasks.formula_reader import compile_reader
from tasks.registry import get_task

SIZES = {"T22": (10, 16, 24, 40), "T23": (8, 27, 64), "T24": (9, 16, 25)}
CHI_SIZES = (9, 16)
QUICK = {"T22": (10, 16), "T23": (8, 27), "T24": (9, 16)}
CHIS = (2, 4, 8, 16, 32, 64)


def defaults(space: dict) -> dict:
    return {k: v[0] for k, v in space.items()}


def runtime_model(task, params, n):
    read = compile_reader(task.formula).load()(params, n)
    return _act_dual_layers(read, {}) if read.get("kind") == "constrained" else _rt_start(read)


def bounds_row(task, n, params) -> dict:
    model = runtime_model(task, params, n)
    shift = float(model["log_shift"])
    t0 = time.perf_counter()
    lo = _sol_mean_field(model, defaults(MF_OPTIONS)) + shift
    t1 = time.perf_counter()
    hi = _sol_tree_reweighted(model, defaults(TRW_OPTIONS)) + shift
    t2 = time.perf_counter()
    ref = reference(task, params, n)
    exact = float(ref.log_z)
    slack = 1e-9 * max(1.0, abs(exact))
    return {"n": n, "spins": int(model["n"]), "lo": lo, "hi": hi, "exact": exact, "method": ref.method,
            "gap": (hi - lo) / n, "below": (exact - lo) / n, "above": (hi - exact) / n,
            "valid": lo <= exact + slack and exact <= hi + slack, "t_mf": t1 - t0, "t_trw": t2 - t1}


def print_bounds(task_id: str, sizes, samples: int) -> None:
    task = get_task(task_id)
    print(f"\n{task_id} ({task.title}): bounds per spin, {samples} draws per size (mean; worst gap)")
    print("   n  spins  gap/n   (lo below exact)/n  (hi above exact)/n  valid  t_mf(s)  t_trw(s)  exact by")
    for n in sizes:
        rows = [bounds_row(task, n, task.probe_params(n, 0, k)) for k in range(samples)]
        ok = all(r["valid"] for r in rows)
        print(f"{n:4d} {rows[0]['spins']:6d}  {np.mean([r['gap'] for r in rows]):.4f}   "
              f"{np.mean([r['below'] for r in rows]):.4f}              {np.mean([r['above'] for r in rows]):.4f}"
              f"              {'yes' if ok else 'VIOLATED'}   {np.mean([r['t_mf'] for r in rows]):7.3f}  "
              f"{np.mean([r['t_trw'] for r in rows]):7.3f}   {rows[0]['method']}"
              f"   (worst gap {max(r['gap'] for r in rows):.4f})")


def print_chi(sizes, samples: int, p: float | None = None, chis=CHIS) -> None:
    task = get_task("T24")
    what = "sampled p" if p is None else f"p = {p}"
    print(f"\nT24 boundary MPS on the dual_layers model ({what}): |log P(chi) - log P| per draw, max over draws")
    print("   n  spins  " + "  ".join(f"chi={c:<6d}" for c in chis) + "  t(s) at the largest chi")
    for n in sizes:
        errs, times = {c: [] for c in chis}, []
        for k in range(samples):
            params = task.probe_params(n, 0, k)
            if p is not None:
                params = {**params, "p": p}
            model = runtime_model(task, params, n)
            exact = float(reference(task, params, n).log_z)
            got = {}
            for c in chis:
                t0 = time.perf_counter()
                got.update({int(a): b for a, b in _sol_boundary_mps(model, {"chis": (c,), "order": "auto"})})
                if c == chis[-1]:
                    times.append(time.perf_counter() - t0)
            for c in chis:
                errs[c].append(abs(got[c] + model["log_shift"] - exact) if c in got else float("nan"))
        print(f"{n:4d} {int(model['n']):6d}  " + "  ".join(f"{max(errs[c]):.2e}" for c in chis)
              + f"  {np.mean(times):.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="the two smallest sizes only")
    ap.add_argument("--chi-only", action="store_true", help="only the boundary-MPS ladder")
    ap.add_argument("--chis", default=",".join(map(str, CHIS)), help="the bond dimensions (comma-separated)")
    ap.add_argument("--chi-sizes", default=",".join(map(str, CHI_SIZES)), help="T24 sizes for the MPS ladder")
    args = ap.parse_args()
    sizes = QUICK if args.quick else SIZES
    chis = tuple(int(c) for c in args.chis.split(","))
    chi_sizes = tuple(int(c) for c in args.chi_sizes.split(","))
    if not args.chi_only:
        for task_id in ("T22", "T23", "T24"):
            print_bounds(task_id, sizes[task_id], args.samples)
    print_chi(chi_sizes, args.samples, chis=chis)
    print_chi(chi_sizes, args.samples, p=0.189, chis=chis)


if __name__ == "__main__":
    main()
