"""`evolve export`: one record per proposal of a run (prompt messages, response, parsed program,
diff against its parent, Verdict, reward) for analysis and fine-tuning; the schema is in
evolve/analysis/export.py and docs/llm.md."""

from __future__ import annotations

import sys
from pathlib import Path

from evolve.commands.common import UsageError, path_text

FORMATS = ("jsonl",)  # what evolve/analysis/export.py writes


def register(sub) -> None:
    p = sub.add_parser(
        "export", help="write one JSON record per proposal of a run (prompts, responses, verdicts, rewards)",
        description=("Write one record per proposal, in journal order: the chat messages sent, the raw response, "
                     "the parsed program, its diff against its parent, its Verdict, its first failed check, "
                     "score, fitness and the bandit's reward. Schema: evolve/analysis/export.py."))
    p.add_argument("run_dir", metavar="RUN_DIR", type=path_text, help="a run directory, e.g. runs/20261130-061502-p04-3f9a")
    p.add_argument("--format", choices=FORMATS, default="jsonl", help="output format (default jsonl)")
    p.add_argument("--out", metavar="FILE", type=path_text, help="write to FILE instead of standard output")
    p.set_defaults(run=run)


def run(args) -> int:
    from evolve.analysis.export import export_records, write_jsonl  # lazy
    from evolve.store.journal import JournalError  # lazy
    from evolve.store.lineage import LineageError, RunIndex  # lazy
    from evolve.store.run_store import RunStoreError  # lazy

    try:
        idx = RunIndex(args.run_dir)
        if idx.damage:
            print(f"evolve export: warning: {idx.damage}", file=sys.stderr, flush=True)
        records = export_records(idx)
        if args.out:
            out = Path(args.out)
            if out.is_dir():
                raise UsageError(f"--out {out} is a directory; name a file")
            with open(out, "w", encoding="utf-8") as fh:
                count = write_jsonl(records, fh)
            print(f"wrote {count} record(s) to {out}", file=sys.stderr)
        else:
            write_jsonl(records, sys.stdout)
    except (RunStoreError, JournalError, LineageError) as exc:
        raise UsageError(str(exc)) from None
    except BrokenPipeError:
        raise                                   # `evolve export RUN | head`: the CLI ends quietly
    except OSError as exc:
        raise UsageError(f"{exc.filename or args.out or ''}: {exc.strerror or exc}") from None
    return 0
