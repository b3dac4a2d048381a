"""`evolve replay`: re-judge every proposal of a run with today's parser and verifier, from the
recorded responses (no model is called), and report which verdicts changed."""

from __future__ import annotations

import json
import sys

from evolve.commands.common import UsageError, check_writable_dir, path_text


def register(sub) -> None:
    p = sub.add_parser(
        "replay", help="re-judge a run's proposals with today's verifier (no model is called)",
        description=("Re-parse every journaled proposal from its recorded response (diffs against the parent's "
                     "journaled code), judge every program with today's verifier and the run's evaluator "
                     "settings, and list the proposals whose outcome (accept, reject, no code, not judged) or "
                     "first failed check changed. Exit status: 0 nothing changed, 1 something did, 2 usage error."))
    p.add_argument("run_dir", metavar="RUN_DIR", type=path_text, help="a run directory, e.g. runs/20261130-061502-p04-3f9a")
    p.add_argument("--out", metavar="DIR", type=path_text, help="write DIR/replay.jsonl (one record per proposal) and DIR/summary.json")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.set_defaults(run=run)


def run(args) -> int:
    from evolve.analysis.rejudge import rejudge_run  # lazy
    from evolve.config import ConfigError  # lazy
    from evolve.store.journal import JournalError  # lazy
    from evolve.store.lineage import LineageError  # lazy
    from evolve.store.run_store import RunStoreError  # lazy

    if args.out is not None:      # before the re-judging (minutes), not after it
        check_writable_dir(args.out, "--out", create=True)
    progress = None if args.json else (lambda line: print(line, file=sys.stderr, flush=True))
    try:
        report = rejudge_run(args.run_dir, out=args.out, log=progress)
    except (RunStoreError, JournalError, LineageError, ConfigError) as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"{exc.filename or ''}: {exc.strerror or exc}") from None
    summary = report.summary()
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"{summary['proposals']} proposal(s) of {args.run_dir} re-judged ({summary['programs_judged']} distinct "
              f"program(s)); {summary['changed']} changed")
        for p in report.changed:
            why = f"  [{p.failure_before or '-'}  ->  {p.failure_after or '-'}]" if p.before == p.after else ""
            print(f"  {p.id}  {p.model or p.proposer or '?'}: {p.before} -> {p.after}{why}")
        if args.out:
            print(f"wrote {args.out}/replay.jsonl and {args.out}/summary.json")
    return 1 if report.changed else 0
