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


TASK_FILE_HELP = ("a Python file defining TASK = YourTask() (a tasks.base.Task subclass): its task joins the "
                  "catalogue for this command; repeatable (see examples/tasks/diamond_chain.py)")


def _add_task_file_option(parser: argparse.ArgumentParser, dest: str) -> None:
    parser.add_argument("--task-file", action="append", default=[], dest=dest, metavar="PATH", help=TASK_FILE_HELP)


def register_task_files(paths: list[str]) -> None:
    """Register the user task files named with --task-file, or a UsageError saying what is wrong."""
    from tasks.registry import TaskFileError, register_task_file

    for path in paths:
        try:
            register_task_file(path)
        except TaskFileError as exc:
            raise UsageError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    from evolve import cmd_bench, cmd_derive, cmd_inspect, cmd_launch, cmd_oracle, cmd_perf, cmd_tasks, cmd_tune, cmd_verify

    parser = argparse.ArgumentParser(
        prog="evolve",
        description="Discover and verify programs that compute partition functions exactly.",
    )
    # --task-file is accepted before the command (`evolve --task-file F tasks`) and after it
    # (`evolve verify --task-file F ...`); two dests, because a subparser's defaults would
    # overwrite what the top-level parser already stored under the same name.
    _add_task_file_option(parser, "task_files_before")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in (cmd_launch, cmd_inspect, cmd_verify, cmd_oracle, cmd_tasks, cmd_perf, cmd_bench, cmd_tune, cmd_derive):
        module.register(sub)
    for command in set(sub.choices.values()):
        _add_task_file_option(command, "task_files_after")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    args.task_files = [*getattr(args, "task_files_before", []), *getattr(args, "task_files_after", [])]
    try:
        register_task_files(args.task_files)
        return int(args.run(args) or 0)
    except UsageError as exc:
        print(f"evolve {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:                    # `evolve tasks | head`: the reader left, nothing is wrong
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
