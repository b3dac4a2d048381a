"""Is a run directory still the run it claims to be? The checks a resume makes before it touches anything.

- **Config identity.** The journal header records the config a run was created with
  (``config``) and its hash (``config_sha256``: SHA-256 of the config as canonical JSON, so YAML
  formatting and comments do not count). A ``config.yaml`` that no longer hashes the same is
  refused, naming the keys that changed. Runs created before identities were recorded carry
  none in their header: their first resume records the hash of their config.yaml in its
  ``resume`` record, and later resumes check against that.
- **Lost records.** A torn tail is at most the last, partially written record, which was never
  acknowledged. Records the run did acknowledge are witnessed outside the journal: by the
  journal's tip (:func:`evolve.store.journal.read_tip`) and by every snapshot of this run
  (a snapshot at record ``s`` means record ``s`` was durable). A journal that ends before a
  witness has lost records, and :class:`JournalLoss` says how many.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from evolve.store.journal import JournalContents, JournalError, read_header, read_tip, tip_path
from evolve.store.snapshots import read_snapshot, snapshot_files


def config_sha256(config: dict) -> str:
    """SHA-256 (hex) of ``config`` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def changed_keys(old, new, prefix: str = "") -> list[str]:
    """Dotted paths of the keys whose values differ between two nested configs (added and removed
    keys included; lists compare whole)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new), key=str):
            path = f"{prefix}.{key}" if prefix else str(key)
            if key not in old or key not in new:
                out.append(path)
            else:
                out += changed_keys(old[key], new[key], path)
        return out
    return [] if old == new else [prefix or "(top level)"]


def recorded_identity(header: dict, records: list[dict]) -> tuple[str | None, dict | None]:
    """(config hash, config) the run is bound to: the header's, else the first ``resume`` record
    that recorded one (runs created before identities), else (None, None)."""
    if header.get("config_sha256"):
        return header["config_sha256"], header.get("config")
    for rec in records:
        if rec.get("kind") == "resume" and rec.get("config_sha256"):
            return rec["config_sha256"], rec.get("config")
    return None, None


def identity_problem(header: dict, records: list[dict], config: dict) -> str | None:
    """Why ``config`` (the run directory's config.yaml) is not the config the run is bound to, or None."""
    recorded, old = recorded_identity(header, records)
    if recorded is None or recorded == config_sha256(config):
        return None
    keys = changed_keys(old, config) if isinstance(old, dict) else []
    what = f"changed: {', '.join(keys)}" if keys else "the recorded config is not in the journal"
    return (f"config.yaml is not the config this run was created with ({what}); a run continues with its own "
            "config: restore it, or start a new run with `evolve launch` (budgets are raised with "
            "--extra-proposals, --extra-evaluations and --extra-wall-time)")


@dataclass(frozen=True)
class JournalLoss:
    """A journal that ends before a record the run had acknowledged."""

    last_seq: int          # the last valid record left
    witnessed_seq: int     # the newest record a witness says was acknowledged
    witness: str           # what says so
    dropped_bytes: int     # bytes after the valid prefix (a partial record), dropped

    @property
    def lost_records(self) -> int:
        return self.witnessed_seq - self.last_seq

    def message(self, journal: Path) -> str:
        partial = f", then {self.dropped_bytes} bytes of a partial record" if self.dropped_bytes else ""
        return (f"{journal} ends at record {self.last_seq}{partial}, but {self.witness} shows the run had written "
                f"record {self.witnessed_seq}: {self.lost_records} record(s) were lost, more than a torn tail "
                "(at most the last, partially written record)")


def witnesses(journal: Path, run_id: str | None = None) -> list[tuple[int, str]]:
    """(record seq, what says so) for every witness of ``journal``: its tip and the run's snapshots
    (``run_id``: only snapshots of that run count; None: read it from the journal's header). A
    reader of a live run reads these *before* the journal, so a record written in between can
    never look lost."""
    if run_id is None:
        try:
            run_id = read_header(journal).get("run_id")
        except (OSError, JournalError):
            return []
    out = []
    tip = read_tip(journal)
    if tip is not None:
        out.append((tip[0], f"{tip_path(journal).name} (the last record acknowledged)"))
    for snap in snapshot_files(journal.parent):
        frame = read_snapshot(snap)
        if frame is not None and frame.get("run_id") == run_id:
            out.append((int(frame["journal_seq"]), f"snapshot {snap.name}"))
    return out


def journal_loss(journal: Path, contents: JournalContents, seen: list[tuple[int, str]] | None = None) -> JournalLoss | None:
    """The loss the witnesses of ``journal`` reveal (``seen``: read beforehand with :func:`witnesses`), or None."""
    seen = witnesses(journal, contents.header.get("run_id")) if seen is None else seen
    if not seen:
        return None
    seq, witness = max(seen)
    if seq <= contents.last_seq:
        return None
    return JournalLoss(contents.last_seq, seq, witness, contents.dropped_bytes)
