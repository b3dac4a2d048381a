"""Exact reference values for a task's parameters, cached in memory and on disk.

The key is (task id, n, the parameter dictionary), so a repeated verification with the same
seed recomputes nothing. The disk cache lives in ``$STATMECH_CACHE`` (default
``~/.cache/statmech-evolve/oracle``); a corrupt entry is ignored and recomputed.

Evaluators of one search climb the same ladder draws at the same time (same seed), so a value
missing from the cache is computed under a lock file (``locks/``, one of 256 by key): a second
evaluator that wants the same value waits for the first and reads it, instead of computing it
again on a core the first one needs.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from evaluators.oracles.base import OracleResult, TooLarge
from evaluators.oracles.constrained_sum import constrained_log_value
from evaluators.oracles.registry import checked_finite, exact_log_z
from tasks.base import Task
from tasks.formula_extras import ConstrainedSum
from tasks.formula_reader import compile_reader
from tasks.registry import user_task_file

_memory: dict[str, OracleResult] = {}
#: part of every key: bumped when an oracle's values change (v2: the cold and tiny-coupling fixes
#: of issue 13), so a fixed oracle never meets values its earlier version stored
CACHE_VERSION = 2
#: a constrained sum is eliminated directly while its tables stay within 2^this entries (a second or so)
CONSTRAINED_MAX_WIDTH = 18


def cache_dir() -> Path:
    root = os.environ.get("STATMECH_CACHE") or Path.home() / ".cache" / "statmech-evolve"
    return Path(root) / "oracle"


def _key(task: Task, params: dict, n: int, method: str | None) -> str:
    # a user task is also keyed by its file's hash: a fixed to_model must not meet old values
    source = user_task_file(task.id)
    blob = json.dumps([CACHE_VERSION, task.id, n, method, params, source.sha256 if source else None],
                      sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def reference(task: Task, params: dict, n: int, method: str | None = None) -> OracleResult:
    """Exact log Z of ``task`` at (params, n), computed once per key. For a task that declares
    another quantity the result's ``log_z`` holds that quantity's log (its value when the
    quantity is not positive: see :class:`tasks.base.Quantity`)."""
    return lookup(task, params, n, method)[0]


def lookup(task: Task, params: dict, n: int, method: str | None = None) -> tuple[OracleResult, str]:
    """``reference`` and where its value came from: "memory", "disk", "waited" (another process
    was computing it; read from disk once it had) or "computed"."""
    key = _key(task, params, n, method)
    if key in _memory:
        return _memory[key], "memory"
    path = cache_dir() / f"{key}.json"
    result, source = _read(path), "disk"
    if result is None:
        with _computing(key):
            result, source = _read(path), "waited"
            if result is None:
                result, source = _compute(task, params, n, method), "computed"
                _store(path, result)
    _memory[key] = result
    return result, source


def _read(path: Path) -> OracleResult | None:
    try:
        d = json.loads(path.read_text())
        result = OracleResult(float(d["log_z"]), str(d["method"]), float(d["seconds"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return result if math.isfinite(result.log_z) else None   # a stored non-finite value is recomputed


_held = threading.local()   # the lock this thread holds: a nested lookup takes no second lock


@contextmanager
def _computing(key: str):
    """Hold the lock file of ``key``'s stripe; best effort (no lock when the cache cannot be written).
    A thread holds at most one stripe: a reference computed inside another's computation takes
    none (two processes each holding one stripe and waiting for the other's would deadlock)."""
    stripe = key[:2]
    if getattr(_held, "stripe", None) is not None:
        yield
        return
    try:
        folder = cache_dir() / "locks"
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / f"{stripe}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _held.stripe = stripe
        yield
    finally:
        _held.stripe = None
        os.close(fd)   # closing the descriptor releases the lock


def _compute(task: Task, params: dict, n: int, method: str | None) -> OracleResult:
    """The task's own reference when it has one (declared quantities), else the model oracles."""
    started = time.perf_counter()
    own = task.own_reference(params, n, method)
    if own is not None:
        value, how = own
        return OracleResult(checked_finite(value, how, f"for {task.id} at n={n}"), how, time.perf_counter() - started)
    if isinstance(task.formula, ConstrainedSum):
        # the sum itself, eliminated with its conditions: independent of any mapping to a dual model
        try:
            value = constrained_log_value(compile_reader(task.formula).load()(params, n), CONSTRAINED_MAX_WIDTH)
            return OracleResult(checked_finite(value, "constrained_elimination", f"for {task.id} at n={n}"),
                                "constrained_elimination", time.perf_counter() - started)
        except TooLarge:
            pass                        # wide: the exact oracles on the task's own model
    return exact_log_z(task.to_model(params, n), method)


def _store(path: Path, result: OracleResult) -> None:
    """Write atomically (temp file + rename) so a crash never leaves a torn entry; best effort."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump({"log_z": result.log_z, "method": result.method, "seconds": result.seconds}, fh)
        os.replace(tmp, path)
    except OSError:
        pass


def reference_log_z(task: Task, params: dict, n: int) -> float:
    return reference(task, params, n).log_z
