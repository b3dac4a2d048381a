"""The run directory: config, journal, snapshots, best program, log and status of one run.

``runs/<run-id>/`` (run ids like ``20261130-061502-p04-3f9a`` sort by creation time, UTC):

- ``config.yaml``: the resolved config, written once. Configs name environment variables
  (``api_key_env``), never secrets: ``create`` refuses key-like fields with string values.
- ``journal.msgpack``: the append-only journal (``evolve.store.journal``), the source of truth.
- ``snapshots/snap-<seq>.msgpack``: periodic snapshots (``evolve.store.snapshots``: framed like
  journal records, CRC-checked, written atomically, the newest three kept; ``snapshots/refused/``
  holds those a resume refused).
- ``best/program.py``, ``best/verdict.json``, ``best/candidate.json``: the current best.
- ``run.log``: human log lines. ``status.json``: state and counts, rewritten atomically.
- ``executor_rates.json``: what a flop and a written entry cost the tensor-network oracle's executor,
  learned on this machine once when the run (or its first resume, for runs older than the file)
  started its evaluators, and used by every evaluator since: a resumed run searches its contraction
  paths by the figures it started with (:meth:`RunStore.executor_rates`).
- ``task_files/<name>.py`` and ``task_files/manifest.json`` (runs of a user task only): the exact
  text of the task file the run used, with its origin path and SHA-256; ``config.yaml`` then
  names the copy (``task_files: [task_files/<name>.py]``, relative to the run directory), so
  ``evolve resume`` loads the task the run started with even if the original moved or changed.

Opening a run to continue it (``RunStore.open``) checks its identity first
(``evolve.store.integrity``): the config it was created with, records lost from the journal, and
each snapshot against the journal. Nothing is changed when a check refuses.

Nothing here reads or writes environment variables' values, except that ``log`` blanks out
the values of the variables a config names, should a message ever carry one.
"""

from __future__ import annotations

import json
import os
import re
import secrets as _secrets
import shutil
import time
from pathlib import Path

import yaml

from evaluators.oracles.contraction.executor_rates import ExecutorRates, learned_rates
from evaluators.verdict import Verdict
from evolve.store.events import SnapshotEvent, encode
from evolve.store.fileops import atomic_write
from evolve.store.integrity import config_sha256, identity_problem, journal_loss, recorded_identity
from evolve.store.journal import Journal, JournalContents, JournalError, now_iso, read_journal
from evolve.store.status import STATES, read_status, write_status
from evolve.store.snapshots import (KEEP_SNAPSHOTS, ResumePoint, read_snapshot, refuse_snapshot, snapshot_files,
                                    snapshot_problem, write_snapshot)
from search.candidate import Candidate
from tasks.registry import user_task_file

__all__ = ["RunStore", "RunStoreError", "RunSummary", "STATES", "atomic_write", "KEEP_SNAPSHOTS", "list_runs",
           "read_status", "summarize_run"]
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_SECRET_NAME = re.compile(r"(^|_)(api_?key|key|secret|password|passwd)$|token|secret|password", re.I)
_SECRET_VALUE = re.compile(r"^(sk|pk|rk)-[A-Za-z0-9_-]{16,}$|^gh[pousr]_[A-Za-z0-9]{20,}$|^xox[abp]-")


class RunStoreError(Exception):
    """A run directory that cannot be used, with the reason in plain words."""


def _leaves(obj, where: str = "config"):
    """(dotted path, key name, value) of every scalar in a nested config."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from (_leaves(v, f"{where}.{k}") if isinstance(v, (dict, list)) else [(f"{where}.{k}", str(k), v)])
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _leaves(v, f"{where}[{i}]") if isinstance(v, (dict, list)) else [(f"{where}[{i}]", "", v)]


def find_secrets(config) -> list[str]:
    """Dotted paths of config fields that look like secrets: a key-like name (``api_key``,
    ``*_key``, ``*token*``, ``password``, ``secret``) holding a non-empty string, or any string
    shaped like a provider key. Names ending in ``_env`` name variables and are allowed."""
    return [path for path, name, v in _leaves(config) if isinstance(v, str) and v.strip() and (
        (_SECRET_NAME.search(name) and not name.lower().endswith("_env")) or _SECRET_VALUE.match(v.strip()))]


def _env_names(config) -> set[str]:
    """Names of environment variables the config refers to (values of ``*_env`` fields)."""
    return {v for _, name, v in _leaves(config) if name.lower().endswith("_env") and isinstance(v, str)}


def new_run_id(task_id: str) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{task_id.lower()}-{_secrets.token_hex(2)}"


def _why(exc: BaseException, path) -> str:
    """The plain reason of an OSError (or a ValueError from a bad path), for a one-line message."""
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc} ({exc.filename or path})"
    return str(exc)


def _new_run_dir(root: Path, task_id: str, run_id: str | None) -> Path:
    for _ in range(20):
        rid = run_id or new_run_id(task_id)
        try:
            (root / rid).mkdir()
            return root / rid
        except FileExistsError:
            if run_id is not None:
                raise RunStoreError(f"run directory {root / rid} already exists") from None
    raise RunStoreError(f"could not find a free run id under {root}")


def check_run_dir(path: str | Path) -> Path:
    """``path`` if it looks like a run directory, else ``RunStoreError`` saying what is missing."""
    path = Path(path)
    if not path.exists():
        raise RunStoreError(f"{path} does not exist")
    if not path.is_dir():
        raise RunStoreError(f"{path} is not a directory")
    missing = [n for n in ("config.yaml", "journal.msgpack") if not (path / n).is_file()]
    if missing:
        raise RunStoreError(f"{path} is not a run directory (missing {', '.join(missing)})")
    return path


TASK_FILES_DIR = "task_files"
#: the executor rates the run's evaluators use (``RunStore.executor_rates``)
EXECUTOR_RATES_FILE = "executor_rates.json"


def _copy_task_file(run_dir: Path, task_file) -> None:
    """The user task file's text and a manifest (origin, SHA-256) inside the run directory."""
    folder = run_dir / TASK_FILES_DIR
    folder.mkdir()
    name = Path(task_file.path).name
    atomic_write(folder / name, task_file.source.encode())
    manifest = [{"task": task_file.task_id, "file": name, "sha256": task_file.sha256, "origin": task_file.path}]
    atomic_write(folder / "manifest.json", json.dumps(manifest, indent=2).encode())


def read_config(path: Path) -> dict:
    try:
        config = yaml.safe_load((path / "config.yaml").read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise RunStoreError(f"{path}/config.yaml is unreadable: {exc}") from None
    if not isinstance(config, dict):
        raise RunStoreError(f"{path}/config.yaml does not hold a mapping")
    return config


class RunStore:
    """One run directory open for writing (holds the journal's append lock until ``close``)."""

    def __init__(self, path: Path, config: dict, journal: Journal):
        self.path = path
        self.config = config
        self.journal = journal
        self._redact = sorted({os.environ[n] for n in _env_names(config) if len(os.environ.get(n, "")) >= 6},
                              key=len, reverse=True)

    @property
    def run_id(self) -> str:
        return self.journal.run_id

    @property
    def task(self) -> str | None:
        return self.journal.header.get("task")

    @classmethod
    def create(cls, root: str | Path, config: dict, task_id: str, run_id: str | None = None) -> "RunStore":
        """A new run directory under ``root``. Refuses configs that carry secrets. When ``task_id`` is a
        registered user task, its file is copied in and the stored config names the copy. The
        journal header records the config and its hash (the run's identity). A failure part-way
        (a full disk, a directory that is not writable) removes what was made and raises
        ``RunStoreError`` naming the path."""
        if not isinstance(config, dict):
            raise RunStoreError("a run config is a mapping")
        bad = find_secrets(config)
        if bad:
            raise RunStoreError(f"refusing to store secrets in the run directory ({', '.join(bad)}); put keys in "
                                "environment variables and name them in api_key_env")
        if run_id is not None and not _RUN_ID.match(run_id):
            raise RunStoreError(f"run id {run_id!r} may hold only letters, digits, '.', '_' and '-'")
        task_file = user_task_file(task_id)
        if task_file is not None:
            config = {**config, "task_files": [f"{TASK_FILES_DIR}/{Path(task_file.path).name}"]}
        text = yaml.safe_dump(config, sort_keys=False)
        config = yaml.safe_load(text)        # the config as config.yaml will read back: what the hash binds
        root = Path(root)
        path = journal = None
        try:
            root.mkdir(parents=True, exist_ok=True)
            path = _new_run_dir(root, task_id, run_id)
            (path / "snapshots").mkdir()
            (path / "best").mkdir()
            if task_file is not None:
                _copy_task_file(path, task_file)
            atomic_write(path / "config.yaml", text.encode())
            header = {"task": task_id, "config_sha256": config_sha256(config), "config": config}
            if task_file is not None:
                header["task_file_sha256"] = task_file.sha256
            journal = Journal.create(path / "journal.msgpack", path.name, header)
            store = cls(path, config, journal)
            store.set_status("running")
            store.log(f"created run {path.name} for task {task_id}")
        except (OSError, ValueError) as exc:     # ValueError: a path with a NUL byte, say
            if journal is not None:
                journal.close()
            if path is not None:
                shutil.rmtree(path, ignore_errors=True)
            where = path or root
            raise RunStoreError(f"cannot create a run directory under {root}: {_why(exc, where)}") from None
        return store

    @classmethod
    def open(cls, path: str | Path, accept_loss: bool = False) -> "RunStore":
        """Open an existing run for appending (to resume it), after checking that it is the run it
        claims to be (``evolve.store.integrity``): ``config.yaml`` must be the config the run was
        created with, and the journal must not have lost records a witness saw acknowledged
        (with ``accept_loss`` it may: the run then continues from what is left, and the loss is
        on record in ``self.loss``). Nothing is changed when a check refuses. For runs created
        before identities were recorded, ``self.identity_note`` says so."""
        path = check_run_dir(path)
        config = read_config(path)
        seen: dict = {}
        journal_path = path / "journal.msgpack"

        def inspect(contents: JournalContents) -> None:
            problem = identity_problem(contents.header, contents.records, config)
            if problem:
                raise RunStoreError(f"{path}: {problem}")
            loss = journal_loss(journal_path, contents)
            if loss is not None and not accept_loss:
                raise RunStoreError(f"{loss.message(journal_path)}; nothing was changed. `evolve resume --accept-loss` "
                                    f"continues from record {loss.last_seq} and redoes the work after it")
            seen.update(contents=contents, loss=loss)

        try:
            journal = Journal.open_append(journal_path, inspect)
        except JournalError as exc:
            raise RunStoreError(f"cannot open the journal of {path}: {exc}") from None
        except OSError as exc:
            raise RunStoreError(f"cannot open {journal_path} for appending: {_why(exc, journal_path)}") from None
        store = cls(path, config, journal)
        store.loss = seen["loss"]
        store.identity_note = None
        if recorded_identity(journal.header, seen["contents"].records)[0] is None:
            store.identity_note = (f"{path} was created before runs recorded their config's identity; recording "
                                   f"the hash of its config.yaml ({config_sha256(config)[:12]}) from now on")
        for tmp in (path / "snapshots").glob(".*.tmp-*"):
            tmp.unlink(missing_ok=True)  # a snapshot write interrupted before its rename
        return store

    def close(self) -> None:
        self.journal.close()

    def journal_records(self) -> list[dict]:
        """Every record of the journal after its header, as it is now."""
        return read_journal(self.path / "journal.msgpack").records

    def record(self, event) -> int:
        """Journal one run event (``evolve.store.events``) durably; its sequence number."""
        return self.journal.append(encode(event))

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- snapshots ---------------------------------------------------------------------------
    def save_snapshot(self, state: dict, journal_seq: int) -> Path:
        """Write ``state`` (covering the journal up to ``journal_seq``, the budget record the engine
        took it at) atomically, keep the newest three snapshots and journal a ``snapshot`` record."""
        target = write_snapshot(self.path, self.run_id, state, journal_seq)
        self.record(SnapshotEvent(target.name, int(journal_seq)))
        return target

    def resume_point(self, refuse: bool = True) -> ResumePoint:
        """The newest snapshot that belongs to this run and agrees with its journal
        (``evolve.store.snapshots``). Each one refused on the way is logged with its reason and,
        with ``refuse``, moved to snapshots/refused/; the caller says so on stderr too."""
        records = self.journal_records()
        by_seq = {int(r.get("seq", 0)): r for r in records}
        point = ResumePoint()
        for snap in reversed(snapshot_files(self.path)):
            frame = read_snapshot(snap)
            problem = snapshot_problem(frame, self.run_id, by_seq, self.journal.last_seq)
            if problem is None:
                point.state, point.covered, point.snapshot = frame["state"], int(frame["journal_seq"]), snap.name
                return point
            note = f"snapshot {snap.name} refused: {problem}; falling back to an older one"
            if refuse:
                note += f" (moved to {refuse_snapshot(snap).relative_to(self.path)})"
            point.refused.append(note)
            self.log(note)
        return point

    def latest_snapshot(self) -> tuple[dict, int] | None:
        """(state, journal seq) of the newest snapshot that agrees with the journal; refused ones are
        logged and left where they are (``resume_point`` moves them)."""
        point = self.resume_point(refuse=False)
        return None if point.state is None else (point.state, point.covered)

    # -- inputs learned from the machine ------------------------------------------------------
    def executor_rates(self, learn=learned_rates) -> ExecutorRates:
        """The tensor-network oracle's executor rates for this run's evaluators: those recorded in
        ``executor_rates.json``, else ``learn()`` (this machine's, fitted from its contractions) read
        once and recorded there before any evaluator uses them."""
        recorded = read_executor_rates(self.path)
        if recorded is not None:
            return recorded
        rates = learn()
        atomic_write(self.path / EXECUTOR_RATES_FILE, json.dumps(rates.to_dict(), indent=2).encode())
        self.log(f"executor rates for the tensor-network oracle ({rates.source}): {rates.seconds_per_flop:.3g} s a flop, "
                 f"{rates.seconds_per_write:.3g} s a write, recorded in {EXECUTOR_RATES_FILE}")
        return rates

    # -- best, log, status -------------------------------------------------------------------
    def write_best(self, candidate: Candidate, verdict: Verdict) -> None:
        """The current best program, its verdict and its candidate record, each written atomically."""
        if not isinstance(candidate.code, str):
            raise ValueError(f"candidate {candidate.id!r} has no code to save as the best program")
        num = verdict.numerical
        head = [
            f"# Best program of run {self.run_id}",
            f"# task: {candidate.task or self.task}   id: {candidate.id}   "
            f"proposer: {candidate.proposer}   model: {candidate.model}",
            # the claims as `evolve verify best/program.py` reads them back (evaluators.submission.header_claims)
            f"# tractable_class: {candidate.tractable_class}",
            f"# complexity_O: {candidate.complexity_O}",
            f"# verdict: {verdict.verdict}   largest n verified: {num.largest_n_verified}   "
            f"max rel err: {num.max_rel_err}",
        ]
        best = self.path / "best"
        best.mkdir(exist_ok=True)
        atomic_write(best / "program.py", ("\n".join(h.replace("\n", " ") for h in head) + "\n\n" + candidate.code).encode())
        atomic_write(best / "verdict.json", json.dumps(verdict.to_dict(), indent=2, default=str).encode())
        atomic_write(best / "candidate.json", json.dumps(candidate.to_dict(), indent=2, default=str).encode())

    def _scrub(self, text: str) -> str:
        for value in self._redact:
            text = text.replace(value, "[redacted]")
        return text

    def log(self, message: str) -> None:
        """Append a timestamped line to run.log (continuation lines indented)."""
        lines = self._scrub(str(message)).rstrip("\n").split("\n")
        text = f"{now_iso()} {lines[0]}\n" + "".join(f"    {ln}\n" for ln in lines[1:])
        with open(self.path / "run.log", "a", encoding="utf-8") as f:
            f.write(text)

    def set_status(self, state: str, **counts) -> None:
        """Rewrite status.json atomically; ``counts`` are merged into the previous counts."""
        write_status(self.path, state, {"run_id": self.run_id, "task": self.task,
                                        "created": self.journal.header.get("created")}, **counts)


def read_executor_rates(run_dir: str | Path) -> ExecutorRates | None:
    """The executor rates recorded in a run directory; None when it has none (a run older than the
    file). RunStoreError for a file that is there but unreadable."""
    path = Path(run_dir) / EXECUTOR_RATES_FILE
    try:
        return ExecutorRates.from_dict(json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, AttributeError) as exc:
        raise RunStoreError(f"{path} is unreadable: {exc}") from None


def read_latest_snapshot(run_dir: str | Path) -> tuple[dict, int] | None:
    """(state, journal seq) of the newest readable snapshot of a run directory, without taking
    the journal's lock (so it works on live runs); damaged snapshots are skipped, None if none."""
    for snap in reversed(snapshot_files(Path(run_dir))):
        frame = read_snapshot(snap)
        if frame is not None:
            return frame["state"], int(frame["journal_seq"])
    return None
