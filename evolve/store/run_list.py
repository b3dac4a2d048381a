"""`evolve runs`: one summary line per run directory under a root, read without taking any run's lock
(broken directories are listed as unreadable, with the reason; a run whose status says running while
no process holds its journal is stale)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from evolve.store.journal import JournalError, journal_is_held, read_header
from evolve.store.run_store import RunStoreError, check_run_dir
from evolve.store.status import read_status


@dataclass
class RunSummary:
    """One line of ``evolve runs``. ``status`` is ``unreadable`` (with ``reason``) for broken dirs;
    ``stale`` means status.json says running but no process holds the journal."""

    run_id: str
    path: str
    task: str | None = None
    status: str = "unknown"
    created: str | None = None
    counts: dict = field(default_factory=dict)
    reason: str | None = None


def summarize_run(path: Path) -> RunSummary:
    """One run's summary line; never raises (broken runs are ``unreadable`` with the reason)."""
    s = RunSummary(run_id=path.name, path=str(path))
    try:
        check_run_dir(path)
        header = read_header(path / "journal.msgpack")
    except (RunStoreError, JournalError, OSError) as exc:
        s.status, s.reason = "unreadable", str(exc)
        return s
    status = read_status(path) or {}
    s.task, s.created = header.get("task"), header.get("created")
    s.status = status.get("state", "unknown")
    s.counts = dict(status.get("counts") or {})
    if s.status == "running" and not journal_is_held(path / "journal.msgpack"):
        s.status, s.reason = "stale", "status.json says running but no process holds the journal"
    return s


def list_runs(root: str | Path) -> list[RunSummary]:
    """Every directory under ``root``, newest run id first; broken ones included as unreadable."""
    root = Path(root)
    if not root.is_dir():
        return []
    dirs = sorted((p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")),
                  key=lambda p: p.name, reverse=True)
    return [summarize_run(p) for p in dirs]
