"""`evolve`: the command line. Each subcommand lives in its own module (evolve/commands/); this
file only wires them."""

from __future__ import annotations

import argparse
import os
import sys

# litellm must never try to download its price table (no network on many hosts); set before any
# module that may import it
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from evolve.commands import COMMANDS  # noqa: E402 - after the environment default above
from evolve.commands.common import UsageError, add_task_file_option, register_task_files  # noqa: E402
from evolve.engine.termination import by_sigterm  # noqa: E402


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line naming it (exit status 2), not usage text and an error."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (`{self.prog} --help` lists the options)\n")


def version() -> str:
    """The installed distribution's version (pyproject.toml), or 'unknown' for a source tree not installed."""
    from importlib.metadata import PackageNotFoundError, version as installed  # light; only for --version

    try:
        return installed("statmech-evolve")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="evolve",
        description="Discover and verify programs that compute partition functions exactly.",
    )
    # --task-file is accepted before the command (`evolve --task-file F tasks`) and after it
    # (`evolve verify --task-file F ...`); two dests, because a subparser's defaults would
    # overwrite what the top-level parser already stored under the same name.
    parser.add_argument("--version", action="version", version=f"evolve {version()}",
                        help="print the installed version of statmech-evolve and exit")
    add_task_file_option(parser, "task_files_before")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        module.register(sub)
    for command in set(sub.choices.values()):
        add_task_file_option(command, "task_files_after")
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
        print(f"evolve {args.command}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:          # Ctrl-C, or SIGTERM (evolve.engine.termination.Terminated)
        if by_sigterm(exc):
            print("terminated (SIGTERM)", file=sys.stderr)
            return 143
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:                    # `evolve tasks | head`: the reader left, nothing is wrong
        sys.stderr.close()
        return 0
    except MemoryError:
        print(f"evolve {args.command}: out of memory", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - a bug: one line, and the traceback on request
        if os.environ.get("EVOLVE_TRACEBACK"):
            raise
        print(f"evolve {args.command}: internal error (a bug; EVOLVE_TRACEBACK=1 shows where): "
              f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
