"""``status.json`` of a run directory: its state and counts, rewritten atomically.

Kept apart from the run store so that the driver's sentinel (``evolve.engine.sentinel``), a small
process that must start fast, can mark a run failed when its driver dies without a word.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from evolve.store.fileops import atomic_write
from evolve.store.journal import journal_is_held, now_iso

STATES = ("running", "finished", "failed", "interrupted")


def read_status(path: str | Path) -> dict | None:
    """The run's status.json as a dict, or None when it is missing or unreadable."""
    try:
        status = json.loads((Path(path) / "status.json").read_text())
    except (OSError, ValueError):
        return None
    return status if isinstance(status, dict) else None


def write_status(path: str | Path, state: str, identity: dict, **counts) -> None:
    """Rewrite status.json: ``state``, ``identity`` (run_id, task, created), ``counts`` merged into the
    previous counts (a ``reason`` among them says why a run stopped or failed)."""
    if state not in STATES:
        raise ValueError(f"unknown run state {state!r}; expected one of {STATES}")
    old = read_status(path) or {}
    status = {"state": state, **identity, "updated": now_iso(), "counts": {**old.get("counts", {}), **counts}}
    atomic_write(Path(path) / "status.json", json.dumps(status, indent=2, default=str).encode())


def mark_failed_if_running(path: str | Path, reason: str, wait_s: float = 2.0) -> bool:
    """For a driver that died without a word: status.json says ``failed`` with ``reason``, if it still
    says ``running`` and no process holds the journal any more (the dead driver's lock is released
    as it exits; wait up to ``wait_s`` for that). True if it was marked."""
    path = Path(path)
    deadline = time.monotonic() + wait_s
    while journal_is_held(path / "journal.msgpack"):
        if time.monotonic() > deadline:
            return False         # someone else (a resume?) has the run now
        time.sleep(0.05)
    status = read_status(path)
    if status is None or status.get("state") != "running":
        return False
    identity = {k: status.get(k) for k in ("run_id", "task", "created")}
    write_status(path, "failed", identity, reason=reason)
    try:
        with open(path / "run.log", "a", encoding="utf-8") as f:
            f.write(f"{now_iso()} failed: {reason}\n")
    except OSError:
        pass
    return True
