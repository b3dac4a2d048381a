"""`evolve perf`: measured performance of the sandbox and the exact methods, with baselines, and of
the search strategies on a scripted model (``evolve perf strategies``, see evolve.strategy_bench)."""

from __future__ import annotations

import json


def register(sub) -> None:
    p = sub.add_parser("perf", help="measure performance against baselines",
                       description="Measure one component and print the figures with the baseline they replace.")
    p.add_argument("what", choices=["sandbox", "brute", "oracles", "strategies", "tn", "planar", "treewidth"],
                   help="tn / planar / treewidth: an oracle's new path against its old one (evaluators/oracles/"
                   "oracle_bench.py); sandbox: per-evaluation "
                   "overhead vs a fresh interpreter per probe set; brute: enumeration speed on 3-regular +-1 graphs; "
                   "oracles: each task's exact method at several sizes against the baseline it replaces; strategies: "
                   "islands vs tree vs refine on a scripted model whose first answers are wrong "
                   "(search/scripted_scenario.py), calls and evaluations to the first accepted program and best "
                   "fitness at a fixed LLM-call budget")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--repeats", type=int, default=30, help="runs per measurement (sandbox)")
    p.add_argument("--seeds", default="0,1,2", help="strategies: comma-separated seeds (samples of the scripted model)")
    p.add_argument("--budget", type=int, default=16, help="strategies: LLM calls per run")
    p.add_argument("--out", help="strategies: directory for the runs' records (default runs/strategies-<time>)")
    p.set_defaults(run=run)


def run(args) -> int:
    if args.what in ("tn", "planar", "treewidth"):
        from evaluators.oracles.oracle_bench import BENCHES

        measure, fmt = BENCHES[args.what]
        rows = measure()
        print(json.dumps(rows) if args.json else fmt(rows))
        return 0
    if args.what == "strategies":
        return run_strategies(args)
    if args.what == "sandbox":
        from evaluators.sandbox.perf import measure_overhead

        r = measure_overhead(repeats=args.repeats)
        if args.json:
            print(json.dumps(r))
        else:
            print(f"sandbox (warm fork server): median {r['sandbox_median_s'] * 1e3:8.2f} ms   p90 {r['sandbox_p90_s'] * 1e3:8.2f} ms")
            print(f"fresh interpreter (paper) : median {r['fresh_median_s'] * 1e3:8.2f} ms   p90 {r['fresh_p90_s'] * 1e3:8.2f} ms")
            print(f"ratio fresh / sandbox     : {r['ratio']:.1f}x")
        return 0
    if args.what == "oracles":
        from evaluators.oracles.oracle_perf import format_rows, measure_oracles

        rows = measure_oracles()
        print(json.dumps(rows) if args.json else format_rows(rows))
        return 0
    from evaluators.oracles.brute_perf import measure_brute

    r = measure_brute()
    if args.json:
        print(json.dumps(r))
        return 0
    print(f"brute force on a random 3-regular +-1 graph (P06), {r['threads']} threads, "
          f"JIT compile {r['compile_seconds']:.1f} s (once, then cached)")
    print(f"{'n':>4}  {'states':>12}  {'Gray-code float':>16}  {'M states/s':>10}  {'int64 histogram':>16}  {'M states/s':>10}")
    for n, row in sorted(r["sizes"].items(), key=lambda kv: int(kv[0])):
        print(f"{int(n):>4}  {row['enumerated_states']:>12}  {row['float_seconds']:>14.2f} s  "
              f"{row['float_configs_per_second'] / 1e6:>10.0f}  {row['histogram_seconds']:>14.2f} s  "
              f"{row['histogram_configs_per_second'] / 1e6:>10.0f}")
    return 0


def run_strategies(args) -> int:
    import time
    from dataclasses import asdict
    from pathlib import Path

    from evolve.cli import UsageError
    from evolve.strategy_bench import BenchSetup, compare, format_table

    try:
        seeds = [int(x) for x in args.seeds.split(",") if x.strip()]
        setup = BenchSetup(budget=args.budget)
    except ValueError as exc:
        raise UsageError(f"--seeds is a comma-separated list of integers and --budget at least 1 ({exc})") from None
    out = Path(args.out or f"runs/strategies-{time.strftime('%Y%m%d-%H%M%S')}")
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out} is not empty: give a new --out")
    rows = compare(seeds, setup, out, log=(lambda line: None) if args.json else print)
    if args.json:
        print(json.dumps([asdict(r) for r in rows]))
    else:
        print(format_table(rows, setup.budget))
        print(f"records: {out}")
    return 0
