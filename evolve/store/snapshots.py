"""Snapshots of a run: writing them, reading them, and deciding whether one may be resumed from.

``snapshots/snap-<seq>.msgpack`` holds one frame (the journal's framing: length, msgpack, CRC32)
``{"kind": "snapshot_state", "run_id", "journal_seq", "state", "t"}``, written atomically; the
newest three are kept. The engine journals a ``budget`` record with its counters and then takes
the snapshot at that record's sequence number, so a snapshot belongs to a run when

- its ``run_id`` is the journal's (a snapshot copied from another run is *foreign*);
- its ``journal_seq`` is a record the journal still holds (a *too-new* snapshot covers records
  the journal has lost);
- that record is a ``budget`` record whose counters are the snapshot's own.

A snapshot that fails any of these is refused: moved to ``snapshots/refused/`` (kept as evidence,
never read again) with the reason in run.log, and an older one is used.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from evolve.store.journal import decode_frame, encode_frame
from evolve.store.fileops import atomic_write

SNAPSHOT_DIR = "snapshots"
REFUSED_DIR = "refused"
KEEP_SNAPSHOTS = 3


@dataclass
class ResumePoint:
    """Where a resume starts: the snapshot's state and the journal sequence it covers (None and 0
    when there is no usable snapshot: the run restarts from the journal alone), and the snapshots
    refused on the way, each with its reason."""

    state: dict | None = None
    covered: int = 0
    snapshot: str | None = None
    refused: list[str] = field(default_factory=list)


def snapshot_files(run_dir: Path) -> list[Path]:
    """The run's snapshot files, oldest first."""
    return sorted((Path(run_dir) / SNAPSHOT_DIR).glob("snap-*.msgpack"))


def write_snapshot(run_dir: Path, run_id: str, state: dict, journal_seq: int) -> Path:
    """Write ``state`` (covering the journal up to ``journal_seq``) atomically; keep the newest three."""
    folder = Path(run_dir) / SNAPSHOT_DIR
    folder.mkdir(exist_ok=True)
    target = folder / f"snap-{int(journal_seq):010d}.msgpack"
    atomic_write(target, encode_frame({"kind": "snapshot_state", "journal_seq": int(journal_seq), "state": state,
                                       "run_id": run_id, "t": time.time()}))
    for old in snapshot_files(run_dir)[:-KEEP_SNAPSHOTS]:
        old.unlink(missing_ok=True)
    return target


def read_snapshot(path: Path) -> dict | None:
    """The snapshot frame in ``path`` (``kind``, ``run_id``, ``journal_seq``, ``state``), or None
    when it is unreadable, torn or not a snapshot."""
    try:
        found = decode_frame(Path(path).read_bytes(), 0)
    except OSError:
        return None
    if found is None or found[0].get("kind") != "snapshot_state" or not isinstance(found[0].get("state"), dict):
        return None
    try:
        int(found[0]["journal_seq"])
    except (KeyError, TypeError, ValueError):
        return None
    return found[0]


def snapshot_problem(frame: dict | None, run_id: str, records_by_seq: dict[int, dict], last_seq: int) -> str | None:
    """Why the snapshot ``frame`` cannot continue run ``run_id`` whose journal holds
    ``records_by_seq`` up to ``last_seq``; None when it can."""
    if frame is None:
        return "damaged (torn, failed its checksum, or not a snapshot)"
    if frame.get("run_id") != run_id:
        return f"belongs to run {frame.get('run_id')!r}, not to this run ({run_id})"
    seq = int(frame["journal_seq"])
    if seq > last_seq:
        return f"covers journal record {seq} but the journal ends at record {last_seq} (newer than the journal)"
    record = records_by_seq.get(seq)
    if record is None or record.get("kind") != "budget":
        kind = "missing" if record is None else f"a {record.get('kind')!r} record"
        return f"covers journal record {seq}, which is {kind}, not the budget record a snapshot is taken at"
    counters = frame["state"].get("counters")
    if not isinstance(counters, dict) or any(record.get(k) != v for k, v in counters.items()):
        return f"its counters differ from those the journal recorded at record {seq}"
    return None


def refuse_snapshot(path: Path) -> Path:
    """Move a refused snapshot out of the way (into snapshots/refused/), never to be read again."""
    folder = path.parent / REFUSED_DIR
    folder.mkdir(exist_ok=True)
    target, k = folder / path.name, 1
    while target.exists():
        target, k = folder / f"{path.stem}.{k}{path.suffix}", k + 1
    path.rename(target)
    return target
