"""What every command shares: the one-line usage error and the user task file options."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import tempfile
import threading
from pathlib import Path

from evolve.engine.termination import note_sigterm   # light: no Ray


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""


def task_arg(task_id: str):
    """The task named on the command line, or a UsageError listing the known ones."""
    from tasks.registry import get_task  # lazy

    try:
        return get_task(task_id)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None


def path_text(text: str) -> str:
    """argparse type for a file or directory named on the command line: not empty, no control character
    (the operating system cannot take a NUL byte, and a newline in a name we print breaks one-line output)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a path, got an empty string")
    if any(ord(c) < 32 for c in text):
        raise argparse.ArgumentTypeError(f"a path cannot contain control characters: {text!r}")
    return text


def check_writable_dir(path, flag: str, create: bool = False) -> None:
    """A directory we are to write in: the nearest existing folder of ``path`` must be a directory this
    user may write in; with ``create``, ``path`` is made now and a file is written in it and removed (what
    permissions say is not what the kernel allows: root may "write" in /proc). Else a UsageError naming
    ``flag``, before any work is done."""
    path = Path(path)
    try:
        if create:
            path.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=path):
                pass
            return
        probe = path
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        ok = probe.is_dir() and os.access(probe, os.W_OK | os.X_OK)
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"{flag} {str(path)!r} cannot be used: {why}") from None
    if not ok:
        raise UsageError(f"{flag} {path}: {probe} is not a directory this user may write in")


SEED_LIMIT = 2 ** 63


def check_seed(seed: int, flag: str) -> None:
    """Seeds are integers in [0, 2**63) (numpy's generators refuse negative ones; the journal stores 64 bits)."""
    if not 0 <= seed < SEED_LIMIT:
        raise UsageError(f"{flag} must be in [0, 2**63), got {seed}")


def check_seconds(value: float, flag: str, limit: float = 86400.0) -> None:
    """A duration given on the command line: a finite number of seconds in (0, limit]."""
    if not (math.isfinite(value) and 0 < value <= limit):
        raise UsageError(f"{flag} must be a number of seconds in (0, {limit:g}], got {value}")


def check_count(value: int, flag: str, low: int = 1, high: int = 10 ** 6) -> None:
    if not low <= value <= high:
        raise UsageError(f"{flag} must be at least {low} and at most {high}, got {value}")


TASK_FILE_HELP = ("a Python file defining TASK = YourTask() (a tasks.base.Task subclass): its task joins the "
                  "catalogue for this command; repeatable (see examples/tasks/diamond_chain.py)")


def add_task_file_option(parser: argparse.ArgumentParser, dest: str) -> None:
    parser.add_argument("--task-file", action="append", default=[], dest=dest, metavar="PATH", help=TASK_FILE_HELP)


def register_task_files(paths: list[str]) -> None:
    """Register the user task files named with --task-file, or a UsageError saying what is wrong."""
    if not paths:
        return
    from tasks.registry import TaskFileError, register_task_file  # lazy

    for path in paths:
        try:
            register_task_file(path)
        except TaskFileError as exc:
            raise UsageError(str(exc)) from None


@contextlib.contextmanager
def sigterm_raises(exc_type):
    """While inside, SIGTERM raises ``exc_type`` in the main thread (so a run records that it was
    stopped, as Ctrl-C does; ``exc_type`` should be a KeyboardInterrupt, see
    :mod:`evolve.engine.termination`); the previous handler comes back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        note_sigterm()
        raise exc_type()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def strict_json(obj):
    """``obj`` with every non-finite float (NaN, inf) replaced by a string ("nan", "inf", "-inf"),
    so that the JSON printed is JSON (Python's default writes NaN, which strict parsers reject)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict_json(v) for v in obj]
    return obj


def print_json(obj, **kwargs) -> None:
    """Print ``obj`` as one line of standard JSON (see :func:`strict_json`); ``default=str`` for the rest."""
    print(json.dumps(strict_json(obj), allow_nan=False, default=str, **kwargs))
