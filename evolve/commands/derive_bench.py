"""`evolve derive-bench`: the derivation benchmark over generated task files by family (chains,
ladders, trees, stars, planar grids with and without decorations, hub models, three-spin chains,
parity-constrained rings, dense glasses as controls): the share derived to a polynomial program and
verified beyond the probes, per family, with the reasons for the rest.

Exit status: 0 when every family reached all its tasks, 1 when some task was not solved, 2 on bad input.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from evolve.commands.common import UsageError, check_count, path_text


def register(sub) -> None:
    p = sub.add_parser(
        "derive-bench",
        help="derive generated task files by family and verify the programs (the derivation benchmark)",
        description="Write task files by family (formula, sampler and sizes only), derive each from its formula "
                    "alone, verify the program with the full cascade, and report per family the share derived to a "
                    "polynomial program verified beyond the probe sizes, with the reasons for the rest. Records "
                    "and task files go to --out; a rerun with the same --out only does what is missing.",
    )
    p.add_argument("--families", default=None, metavar="F1,F2",
                   help="families to run (default: all): chain, ladder, tree, star, grid, decorated, hubs, "
                        "three_spin, parity_ring, dense_glass")
    p.add_argument("--seeds", type=int, default=2, metavar="K", help="tasks per family, seeds 0..K-1 (default 2)")
    p.add_argument("--out", default="runs/derive-bench", type=path_text, metavar="DIR",
                   help="output directory (default runs/derive-bench)")
    p.add_argument("--no-verify", action="store_true", help="derive only (no verification cascade)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.set_defaults(run=run)


def run(args) -> int:
    from evolve.bench.derivation_bench import bench_one, load_record, summary, table  # lazy
    from evolve.bench.derivation_families import FAMILIES  # lazy

    check_count(args.seeds, "--seeds")
    families = list(FAMILIES) if args.families is None else [f.strip() for f in args.families.split(",")]
    unknown = [f for f in families if f not in FAMILIES]
    if unknown or not families:
        raise UsageError(f"--families: unknown {', '.join(unknown) or '(none given)'}; known: {', '.join(FAMILIES)}")
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {args.out}: {exc.strerror or exc}") from None
    records = []
    total = len(families) * args.seeds
    for k, (family, seed) in enumerate(((f, s) for f in families for s in range(args.seeds)), 1):
        rec = load_record(out, family, seed)
        fresh = rec is None
        if fresh:
            rec = bench_one(family, seed, out, verify_program=not args.no_verify)
        records.append(rec)
        status = "solved" if rec.solved else "NOT solved"
        print(f"[{k}/{total}] {rec.task}: {status}: {rec.chain or '-'} ({rec.tractable_class}, {rec.complexity}); "
              f"verified to n = {rec.largest_n}{'' if fresh else ' (recorded)'}"
              + ("" if rec.solved else f"; {rec.reason[:200]}"), file=sys.stderr if args.json else sys.stdout,
              flush=True)
    rows = summary(records)
    (out / "summary.json").write_text(json.dumps(rows, indent=1))
    (out / "summary.md").write_text(table(rows) + "\n")
    if args.json:
        print(json.dumps({"families": rows, "out": str(out)}, indent=1))
    else:
        print("\n" + table(rows))
        for r in rows:
            for reason in r["reasons"]:
                print(f"  {r['family']}: {reason[:300]}")
    return 0 if all(r.solved for r in records) else 1
