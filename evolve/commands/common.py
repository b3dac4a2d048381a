"""What every command shares: the one-line usage error and the user task file options."""

from __future__ import annotations

import argparse

from tasks.registry import TaskFileError, get_task, register_task_file


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""


def task_arg(task_id: str):
    """The task named on the command line, or a UsageError listing the known ones."""
    try:
        return get_task(task_id)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None


TASK_FILE_HELP = ("a Python file defining TASK = YourTask() (a tasks.base.Task subclass): its task joins the "
                  "catalogue for this command; repeatable (see examples/tasks/diamond_chain.py)")


def add_task_file_option(parser: argparse.ArgumentParser, dest: str) -> None:
    parser.add_argument("--task-file", action="append", default=[], dest=dest, metavar="PATH", help=TASK_FILE_HELP)


def register_task_files(paths: list[str]) -> None:
    """Register the user task files named with --task-file, or a UsageError saying what is wrong."""
    for path in paths:
        try:
            register_task_file(path)
        except TaskFileError as exc:
            raise UsageError(str(exc)) from None
