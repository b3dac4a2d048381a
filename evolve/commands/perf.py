"""`evolve perf`: measured performance of the sandbox and the exact methods, with baselines.

(The search strategies are compared on a scripted model by tests/benchmarks/strategies.py,
``make bench-strategies``: the scripted model is a test double and lives with the tests.)"""

from __future__ import annotations

import dataclasses

from evolve.commands.common import UsageError, check_count, print_json, task_arg


def register(sub) -> None:
    p = sub.add_parser("perf", help="measure performance against baselines",
                       description="Measure one component and print the figures with the baseline they replace.")
    p.add_argument("what", choices=["search", "sandbox", "brute", "oracles", "tn", "planar", "treewidth"],
                   help="search: judged programs per minute of a fixed short search (structural proposer, P04 and "
                   "P01) and where an evaluation's time goes, per stage; tn / planar / treewidth: an oracle's new path against its old one (evolve/bench/"
                   "oracle_bench.py); sandbox: per-evaluation "
                   "overhead vs a fresh interpreter per probe set; brute: enumeration speed on 3-regular +-1 graphs; "
                   "oracles: each task's exact method at several sizes against the baseline it replaces")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--repeats", type=int, default=30, help="runs per measurement (sandbox)")
    # the search's defaults (evolve.bench.search_perf.SearchPlan, SEARCH_TASKS) are filled in by run():
    # that module imports Ray and the engine, which building the parser must not
    p.add_argument("--evaluations", type=int, default=None, help="judged programs per task (search)")
    p.add_argument("--workers", type=int, default=None, help="evaluator processes (search)")
    p.add_argument("--lockstep", action="store_true",
                   help="search: also run it with generations in lockstep (run.overlap_generations: false) "
                        "first, and report the ratio")
    p.add_argument("--tasks", default=None, help="comma-separated task ids (search)")
    p.add_argument("--sizes", default=None, help="comma-separated n (tn; default 100,150,200,250)")
    p.add_argument("--seeds", default=None, help="comma-separated instance seeds (tn; default 0)")
    p.set_defaults(run=run)


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UsageError(f"--sizes must be comma-separated integers, got {text!r}") from None
    if not sizes or min(sizes) < 4 or max(sizes) > 400:
        raise UsageError("--sizes must name n between 4 and 400")
    return sizes


def _seeds(text: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UsageError(f"--seeds must be comma-separated integers, got {text!r}") from None
    if not seeds:
        raise UsageError("--seeds names no seed")
    if min(seeds) < 0:
        raise UsageError("--seeds must name seeds >= 0")
    return seeds


def run(args) -> int:
    check_count(args.repeats, "--repeats", 1, 10000)
    if args.what == "search":
        from evolve.bench.search_perf import SEARCH_TASKS, SearchPlan, format_search, measure_search  # lazy

        evaluations = SearchPlan.evaluations if args.evaluations is None else args.evaluations
        workers = SearchPlan.workers if args.workers is None else args.workers
        check_count(evaluations, "--evaluations", 1, 1000)
        check_count(workers, "--workers", 1, 64)
        names = ",".join(SEARCH_TASKS) if args.tasks is None else args.tasks
        tasks = tuple(task_arg(t.strip()).id for t in names.split(",") if t.strip())
        if not tasks:
            raise UsageError("--tasks names no task")
        plan = SearchPlan(tasks=tasks, evaluations=evaluations, proposals=4 * evaluations, workers=workers)
        if args.lockstep:   # the baseline first, then the search as it runs now, in this process
            base = measure_search(dataclasses.replace(plan, overlap=False))
            r = {**measure_search(plan), "lockstep": base}
        else:
            r = measure_search(plan)
        print_json(r) if args.json else print(format_search(r))
        return 0
    from evolve.bench.oracle_bench import BENCHES  # lazy

    if args.what in BENCHES:
        measure, fmt = BENCHES[args.what]
        options = {}
        if args.what == "tn" and args.sizes:
            options["sizes"] = _sizes(args.sizes)
        if args.what == "tn" and args.seeds is not None:
            options["seeds"] = _seeds(args.seeds)
        rows = measure(**options)
        print_json(rows) if args.json else print(fmt(rows))
        return 0
    if args.what == "sandbox":
        from evaluators.sandbox.perf import measure_overhead  # lazy

        r = measure_overhead(repeats=args.repeats)
        if args.json:
            print_json(r)
        else:
            print(f"sandbox (warm fork server): median {r['sandbox_median_s'] * 1e3:8.2f} ms   p90 {r['sandbox_p90_s'] * 1e3:8.2f} ms")
            print(f"fresh interpreter (paper) : median {r['fresh_median_s'] * 1e3:8.2f} ms   p90 {r['fresh_p90_s'] * 1e3:8.2f} ms")
            print(f"ratio fresh / sandbox     : {r['ratio']:.1f}x")
        return 0
    if args.what == "oracles":
        from evolve.bench.oracle_perf import format_rows, measure_oracles  # lazy

        rows = measure_oracles()
        if args.json:
            print_json(rows)
        else:
            print(format_rows(rows))
        return 0
    from evolve.bench.brute_perf import measure_brute  # lazy

    r = measure_brute()
    if args.json:
        print_json(r)
        return 0
    print(f"brute force on a random 3-regular +-1 graph (P06), {r['threads']} threads, "
          f"JIT compile {r['compile_seconds']:.1f} s (once, then cached)")
    print(f"{'n':>4}  {'states':>12}  {'Gray-code float':>16}  {'M states/s':>10}  {'int64 histogram':>16}  {'M states/s':>10}")
    for n, row in sorted(r["sizes"].items(), key=lambda kv: int(kv[0])):
        print(f"{int(n):>4}  {row['enumerated_states']:>12}  {row['float_seconds']:>14.2f} s  "
              f"{row['float_configs_per_second'] / 1e6:>10.0f}  {row['histogram_seconds']:>14.2f} s  "
              f"{row['histogram_configs_per_second'] / 1e6:>10.0f}")
    return 0
