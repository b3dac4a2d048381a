"""`evolve report`: one self-contained HTML file for a run, or for `evolve bench` results."""

from __future__ import annotations

from pathlib import Path

from evolve.commands.common import UsageError, path_text


def register(sub) -> None:
    p = sub.add_parser(
        "report", help="write a self-contained HTML report of a run (or of `evolve bench` results)",
        description=("Write one HTML file that opens from disk in any browser, with no server and no network: "
                     "for a run, the best score and accepted programs against evaluations and wall time, verdicts "
                     "and rejection reasons, the largest n verified, each island's MAP-Elites archive, the tree "
                     "search, the lineage of the best programs (code, diff, verdict, feedback, prompt, response), "
                     "tokens, cost and latency per model and negative prompting; with --bench, the paper's Table 3 "
                     "and Figure 2 from the trial records of `evolve bench --out DIR`."))
    p.add_argument("run_dir", nargs="?", metavar="RUN_DIR", type=path_text, help="a run directory, e.g. runs/20261130-061502-p04-3f9a")
    p.add_argument("--bench", metavar="DIR", type=path_text, help="report `evolve bench` results in DIR instead of a run")
    p.add_argument("--out", metavar="FILE", type=path_text, help="where to write the report (default: RUN_DIR/report.html or "
                                                  "DIR/report.html)")
    p.set_defaults(run=run)


def run(args) -> int:
    if (args.run_dir is None) == (args.bench is None):
        raise UsageError("name a run directory or --bench DIR (one of the two)")
    if args.out is not None and (Path(args.out).is_dir() or not Path(args.out).parent.is_dir()):
        raise UsageError(f"--out {args.out}: expected a file path in an existing directory")
    from evolve.report.bench_report import BenchReportError, write_bench_report  # lazy
    from evolve.report.run_report import write_run_report  # lazy
    from evolve.store.journal import JournalError  # lazy
    from evolve.store.run_store import RunStoreError  # lazy

    try:
        if args.bench is not None:
            written = write_bench_report(args.bench, args.out)
        else:
            written = write_run_report(args.run_dir, args.out)
    except (RunStoreError, JournalError, BenchReportError) as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"{exc.filename or args.out or ''}: {exc.strerror or exc}") from None
    print(f"wrote {written.path} ({written.bytes / 1e6:.1f} MB, {written.contents}, {written.seconds:.1f} s)")
    return 0
