"""Exact reference values for a task's parameters, cached in memory and on disk.

The key is (task id, n, the parameter dictionary), so a repeated verification with the same
seed recomputes nothing. The disk cache lives in ``$STATMECH_CACHE`` (default
``~/.cache/statmech-evolve/oracle``); a corrupt entry is ignored and recomputed.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import time
from pathlib import Path

from evaluators.oracles.base import OracleResult
from evaluators.oracles.registry import checked_finite, exact_log_z
from tasks.base import Task
from tasks.registry import user_task_file

_memory: dict[str, OracleResult] = {}
#: part of every key: bumped when an oracle's values change (v2: the cold and tiny-coupling fixes
#: of issue 13), so a fixed oracle never meets values its earlier version stored
CACHE_VERSION = 2


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
    key = _key(task, params, n, method)
    if key in _memory:
        return _memory[key]
    path = cache_dir() / f"{key}.json"
    try:
        d = json.loads(path.read_text())
        result = OracleResult(float(d["log_z"]), str(d["method"]), float(d["seconds"]))
        if not math.isfinite(result.log_z):
            raise ValueError("a stored non-finite value is recomputed")
    except (OSError, ValueError, KeyError, TypeError):
        result = _compute(task, params, n, method)
        _store(path, result)
    _memory[key] = result
    return result


def _compute(task: Task, params: dict, n: int, method: str | None) -> OracleResult:
    """The task's own reference when it has one (declared quantities), else the model oracles."""
    started = time.perf_counter()
    own = task.own_reference(params, n, method)
    if own is not None:
        value, how = own
        return OracleResult(checked_finite(value, how, f"for {task.id} at n={n}"), how, time.perf_counter() - started)
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
