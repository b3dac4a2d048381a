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
from evaluators.oracles.budget import OverBudget, deadline
from evaluators.oracles.constrained_sum import constrained_log_value
from evaluators.oracles.registry import checked_finite, exact_log_z
from tasks.base import Task
from tasks.formula_extras import ConstrainedSum
from tasks.formula_reader import compile_reader
from tasks.registry import user_task_file

_memory: dict[str, OracleResult] = {}
#: part of every key: bumped when an oracle's values change (v2: the cold and tiny-coupling fixes
#: of issue 13; v3: the planar cold line's exact ground-state energy, refusals stored, issue 36; v4: the
#: torus Pfaffians' sparse double-double route and their refusal of weights in (0, 2^-500), issue 34;
#: v5: the planar_fields method (fields on one face through a ghost spin), whose models were refused before),
#: so a fixed oracle never meets values (or refusals) its earlier version stored
CACHE_VERSION = 5
#: time budget of one reference (seconds; evaluators/oracles/budget.py): past it the oracle refuses,
#: and a ladder draw without a reference is skipped (a typical one ends the climb)
REFERENCE_BUDGET_S = 120.0
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


def reference(task: Task, params: dict, n: int, method: str | None = None,
              budget_s: float = REFERENCE_BUDGET_S) -> OracleResult:
    """Exact log Z of ``task`` at (params, n), computed once per key within ``budget_s`` seconds.
    For a task that declares another quantity the result's ``log_z`` holds that quantity's log
    (its value when the quantity is not positive: see :class:`tasks.base.Quantity`)."""
    return lookup(task, params, n, method, budget_s)[0]


def lookup(task: Task, params: dict, n: int, method: str | None = None,
           budget_s: float = REFERENCE_BUDGET_S) -> tuple[OracleResult, str]:
    """``reference`` and where its value came from: "memory", "disk", "waited" (another process
    was computing it; read from disk once it had) or "computed". A refusal (TooLarge) is kept too,
    so the next ask refuses at once: a structural one (no method reaches this size or
    temperature) in memory and on disk, one where the time budget ran out in memory only, and
    only for budgets no larger than the one that ran out."""
    key = _key(task, params, n, method)
    hit = _memory.get(key)
    if hit is not None and not (isinstance(hit, _Refusal) and budget_s > hit.budget_s):
        return _answer(hit), "memory"           # (a larger budget than the one that ran out tries again)
    path = cache_dir() / f"{key}.json"
    result, source = _read(path), "disk"
    if result is None:
        with _computing(key):
            result, source = _read(path), "waited"
            if result is None:
                try:
                    with deadline(budget_s):
                        result, source = _compute(task, params, n, method), "computed"
                except OverBudget as exc:
                    _memory[key] = _Refusal(str(exc), budget_s)
                    raise
                except TooLarge as exc:
                    result = _Refusal(str(exc), math.inf)
                _store(path, result)
    _memory[key] = result
    return _answer(result), source


class _Refusal:
    """A stored TooLarge: its one-line reason and the budget it was given (inf: structural)."""

    def __init__(self, why: str, budget_s: float) -> None:
        self.why, self.budget_s = why, budget_s


def _answer(result) -> OracleResult:
    """The stored value, or its refusal raised again."""
    if isinstance(result, _Refusal):
        raise (TooLarge if math.isinf(result.budget_s) else OverBudget)(result.why)
    return result


def _read(path: Path):
    try:
        d = json.loads(path.read_text())
        if "refused" in d:
            return _Refusal(str(d["refused"]), math.inf)
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
    """The task's own reference when it has one (declared quantities), else the model oracles
    (within the budget the caller opened)."""
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


def _store(path: Path, result) -> None:
    """Write atomically (temp file + rename) so a crash never leaves a torn entry; best effort."""
    entry = ({"refused": result.why} if isinstance(result, _Refusal) else
             {"log_z": result.log_z, "method": result.method, "seconds": result.seconds})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump(entry, fh)
        os.replace(tmp, path)
    except OSError:
        pass


def reference_log_z(task: Task, params: dict, n: int) -> float:
    return reference(task, params, n).log_z
