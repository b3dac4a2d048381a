"""`evolve`: the command line. Each subcommand lives in its own module; this file only wires them."""

from __future__ import annotations

import argparse
import os
import sys

# litellm must never try to download its price table (no network on many hosts).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""


def task_arg(task_id: str):
    """The task named on the command line, or a UsageError listing the known ones."""
    from tasks.registry import get_task

    try:
        return get_task(task_id)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None


def build_parser() -> argparse.ArgumentParser:
    from evolve import cmd_bench, cmd_inspect, cmd_launch, cmd_oracle, cmd_perf, cmd_tasks, cmd_tune, cmd_verify

    parser = argparse.ArgumentParser(
        prog="evolve",
        description="Discover and verify programs that compute partition functions exactly.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in (cmd_launch, cmd_inspect, cmd_verify, cmd_oracle, cmd_tasks, cmd_perf, cmd_bench, cmd_tune):
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except UsageError as exc:
        print(f"evolve {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
