"""The run journal: an append-only, crash-proof file of msgpack records.

File format: a sequence of frames, each ``4-byte big-endian payload length | msgpack payload |
4-byte big-endian CRC32 of the payload``. ``append`` writes one frame, flushes and fsyncs
before it returns, so a record is durable before the caller acknowledges it. A crash can only
leave a *torn tail* (a prefix of the last frame); readers drop it (``torn=True``) and
``Journal.open_append`` truncates it before appending. A bad frame that is followed by a valid
frame is corruption, never skipped by a writer or a resume: ``JournalCorruptError``. Readers that
only look (``evolve show``, ``lineage``, ``export``, ``report``) may ask for what is intact
(``read_journal(path, salvage=True)``): every valid frame, before and after each damaged stretch,
with the stretches in ``JournalContents.damage`` and the records they held in ``missing_records``.

A torn tail and a journal cut short by hand (or by a copy that stopped early) look the same from
inside the file: both end in a prefix of a frame. So every append also leaves a witness beside
the journal, ``<journal>.tip``: ``"<seq> <bytes>"`` of the last record acknowledged, rewritten in
place after the frame is fsynced (itself not fsynced: a stale tip only says less). A journal
whose last valid record is older than its tip has lost acknowledged records
(:func:`read_tip`, ``JournalContents.last_seq``); what to do about it is the run store's call.

Journal schema (``JOURNAL_SCHEMA = 1``). Every record is a dict of plain msgpack types with
``kind``, ``seq`` (0 for the header, then 1, 2, ... in file order) and ``t`` (Unix seconds):

- ``header``: ``schema``, ``run_id``, ``created`` (ISO 8601 UTC), plus the creator's meta
  (the run store adds ``task``, ``config`` and ``config_sha256``, the run's identity). Always the
  first record.
- ``proposal``: ``candidate`` (``search.candidate.Candidate.to_dict()``: id, task, code,
  tractable_class, complexity_O, confidence, justification, proposer, model, prompt_id,
  parent_ids (parent first), tokens_in, tokens_out, cost_usd, parse_error, error_kind, ...),
  placed in the schedule (``generation``, ``slot``, ``island``); ``negative``: the negative-prompting
  items in force for it.
- ``evaluation``: ``id`` (candidate id), ``verdict`` (``Verdict.to_dict()``), ``score`` (a
  list, compared lexicographically, higher is better), ``features`` (dict, e.g. MAP-Elites
  descriptors).
- ``promotion``: ``id``, ``score``: a new best program.
- ``migration``: ``from_island``, ``to_island``, ``ids``.
- ``reset``: ``island``, ``from_island`` (the island it was reseeded from).
- ``snapshot``: ``file`` (name in ``snapshots/``), ``journal_seq`` (last record it covers).
- ``budget``: counters (``tokens_in``, ``tokens_out``, ``usd``, ...).
- ``finish``: ``reason``.
- ``resume``: what a resume started from and added (``evolve.store.events.ResumeEvent``).

Readers ignore keys and kinds they do not know; a change of meaning bumps ``JOURNAL_SCHEMA``.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import os
import struct
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import msgpack

JOURNAL_SCHEMA = 1
RECORD_KINDS = ("header", "proposal", "evaluation", "duplicate", "promotion", "migration", "reset", "snapshot",
                "budget", "finish", "resume")
MAX_RECORD_BYTES = 1 << 28  # 256 MiB: a longer length field is corruption, not a record
_LEN = struct.Struct(">I")
_FRAME_OVERHEAD = 2 * _LEN.size


class JournalError(Exception):
    """Base class of journal problems."""


class JournalSchemaError(JournalError):
    """The journal was written with a schema this version does not read."""


class JournalCorruptError(JournalError):
    """A damaged frame in the middle of a journal (not a torn tail)."""


class JournalLockedError(JournalError):
    """Another process has the journal open for appending."""


@dataclass
class JournalContents:
    """What ``read_journal`` found: the header, the records after it (in order), whether a torn
    tail was dropped and how many bytes it had, and the length of the valid prefix."""

    header: dict
    records: list[dict] = field(default_factory=list)
    torn: bool = False
    dropped_bytes: int = 0
    valid_bytes: int = 0
    damage: list[tuple[int, int]] = field(default_factory=list)   # (start, end) byte ranges skipped (salvage only)

    @property
    def last_seq(self) -> int:
        """Sequence number of the last valid record (0: only the header)."""
        return int(self.records[-1].get("seq", len(self.records))) if self.records else 0

    @property
    def missing_records(self) -> int:
        """Records the damaged stretches held (gaps in the sequence numbers of what was read)."""
        seqs = [0] + [int(r.get("seq", 0)) for r in self.records]
        return sum(max(0, b - a - 1) for a, b in zip(seqs, seqs[1:]))

    def damage_note(self, path) -> str:
        """One sentence on what a salvaging read skipped ('' when nothing was)."""
        if not self.damage:
            return ""
        spans = ", ".join(f"{a}-{b}" for a, b in self.damage[:3]) + (" ..." if len(self.damage) > 3 else "")
        return (f"{path} is damaged in the middle (bytes {spans} unreadable, {self.missing_records} record(s) "
                "lost there): what is intact before and after is shown; `evolve resume` refuses the run")


def _plain(obj):
    """msgpack ``default`` hook: numpy scalars and arrays become plain Python values."""
    if hasattr(obj, "tolist"):
        return obj.tolist()
    raise TypeError(f"journal records hold plain types only; got {type(obj).__name__}")


def encode_frame(record: dict) -> bytes:
    """One frame: length, msgpack payload, CRC32."""
    payload = msgpack.packb(record, use_bin_type=True, default=_plain)
    if len(payload) > MAX_RECORD_BYTES:
        raise ValueError(f"journal record of {len(payload)} bytes exceeds {MAX_RECORD_BYTES}")
    return _LEN.pack(len(payload)) + payload + _LEN.pack(zlib.crc32(payload))


def decode_frame(data: bytes, off: int) -> tuple[dict, int] | None:
    """The record and the end offset of a valid frame starting at ``off`` in ``data``, else None."""
    end = len(data)
    if off + _FRAME_OVERHEAD > end:
        return None
    (n,) = _LEN.unpack_from(data, off)
    if n == 0 or n > MAX_RECORD_BYTES or off + _FRAME_OVERHEAD + n > end:
        return None
    payload = data[off + 4:off + 4 + n]
    (crc,) = _LEN.unpack_from(data, off + 4 + n)
    if zlib.crc32(payload) != crc:
        return None
    try:
        rec = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    except Exception:  # noqa: BLE001 - any decoding failure means "not a frame"
        return None
    if not isinstance(rec, dict) or not isinstance(rec.get("kind"), str):
        return None
    return rec, off + _FRAME_OVERHEAD + n


def _scan(data: bytes, path: Path, damage: list | None = None) -> tuple[list[dict], int, int]:
    """(records, valid end offset, dropped bytes). A bad frame followed by a good one raises, unless
    ``damage`` (a list) is given: the stretch is then appended to it and the scan goes on after it."""
    records, off = [], 0
    while off < len(data):
        found = decode_frame(data, off)
        if found is None:
            for q in range(off + 1, len(data) - _FRAME_OVERHEAD + 1):
                if decode_frame(data, q) is not None:
                    if damage is None:
                        raise JournalCorruptError(
                            f"{path}: damaged record at byte {off} is followed by a valid record at byte {q}; "
                            f"the journal is corrupt in the middle (records after byte {off} would be lost)")
                    damage.append((off, q))
                    off = q
                    break
            else:
                return records, off, len(data) - off
            continue
        rec, off = found
        records.append(rec)
    return records, off, 0


def _check_header(records: list[dict], path: Path) -> dict:
    if not records or records[0].get("kind") != "header":
        raise JournalCorruptError(f"{path}: no complete header record; this is not a journal "
                                  "(or its creation was interrupted)")
    header = records[0]
    schema = header.get("schema")
    if schema != JOURNAL_SCHEMA:
        age = "an older" if isinstance(schema, int) and schema < JOURNAL_SCHEMA else "a newer or unknown"
        raise JournalSchemaError(f"{path}: journal schema {schema!r} ({age} format); this version of evolve "
                                 f"reads journal schema {JOURNAL_SCHEMA} only")
    return header


def read_journal(path: str | Path, salvage: bool = False) -> JournalContents:
    """Read a whole journal. A torn tail is dropped (``torn=True``); corruption in the middle
    raises ``JournalCorruptError``, or with ``salvage`` is skipped (``damage``; for readers that
    only look, never for a writer); a foreign schema raises ``JournalSchemaError``, and so does a
    damaged header whatever ``salvage`` says (nothing says whose run it is)."""
    path = Path(path)
    data = path.read_bytes()
    damage: list | None = [] if salvage else None
    records, valid, dropped = _scan(data, path, damage)
    if damage and damage[0][0] == 0:
        raise JournalCorruptError(f"{path}: its header record is damaged; nothing says whose run this is")
    header = _check_header(records, path)
    return JournalContents(header, records[1:], torn=dropped > 0, dropped_bytes=dropped, valid_bytes=valid,
                           damage=damage or [])


def read_header(path: str | Path) -> dict:
    """Only the header (cheap: reads the first frame). Raises like ``read_journal``."""
    path = Path(path)
    with open(path, "rb") as f:
        head = f.read(_LEN.size)
        n = _LEN.unpack(head)[0] if len(head) == _LEN.size else 0
        data = head + f.read(min(n, MAX_RECORD_BYTES) + _LEN.size)
    found = decode_frame(data, 0)
    return _check_header([found[0]] if found else [], path)


TIP_SUFFIX = ".tip"
_TIP_WIDTH = 48


def tip_path(path: str | Path) -> Path:
    """Where the witness of ``path``'s last acknowledged record lives."""
    path = Path(path)
    return path.with_name(path.name + TIP_SUFFIX)


def read_tip(path: str | Path) -> tuple[int, int] | None:
    """(seq, end offset in bytes) of the last record the journal at ``path`` acknowledged, or None
    when there is no readable witness (journals written before witnesses existed)."""
    try:
        text = tip_path(path).read_text(encoding="ascii").split()
        seq, size = int(text[0]), int(text[1])
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        return None
    return (seq, size) if seq >= 0 and size >= 0 else None


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def fsync_dir(path: Path) -> None:
    """Make a rename or a new file in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def journal_is_held(path: str | Path) -> bool:
    """True when some process has the journal open for appending (holds its lock)."""
    try:
        with open(path, "rb") as f:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            return False
    except OSError:
        return False


class Journal:
    """A journal open for appending. One writer per file (an exclusive ``flock``); thread-safe."""

    def __init__(self, path: Path, fileobj, header: dict, last_seq: int):
        self.path = path
        self._f = fileobj
        self.header = header
        self.last_seq = last_seq
        self._lock = threading.Lock()
        self._tip = os.open(tip_path(path), os.O_WRONLY | os.O_CREAT, 0o644)
        self._write_tip()

    def _write_tip(self) -> None:
        """The witness of the last acknowledged record (see the module docstring)."""
        text = f"{self.last_seq} {self._f.tell()}".ljust(_TIP_WIDTH - 1) + "\n"
        os.pwrite(self._tip, text.encode("ascii"), 0)

    @property
    def run_id(self) -> str:
        return self.header["run_id"]

    @staticmethod
    def _lock_file(f, path: Path) -> None:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            raise JournalLockedError(f"{path} is open for appending by another process "
                                     "(a run is still active, or a resume is already running)") from None

    @classmethod
    def create(cls, path: str | Path, run_id: str, meta: dict | None = None) -> "Journal":
        """Create a new journal with its header (refuses an existing file)."""
        path = Path(path)
        header = {**(meta or {}), "kind": "header", "schema": JOURNAL_SCHEMA, "run_id": run_id,
                  "created": now_iso(), "seq": 0, "t": time.time()}
        f = open(path, "xb")
        cls._lock_file(f, path)
        f.write(encode_frame(header))
        f.flush()
        os.fsync(f.fileno())
        fsync_dir(path.parent)
        return cls(path, f, header, 0)

    @classmethod
    def open_append(cls, path: str | Path, inspect=None) -> "Journal":
        """Open an existing journal: validate the header, truncate a torn tail, append after it.

        ``inspect``, when given, is called with the :class:`JournalContents` read under the
        append lock before anything is changed; whatever it raises closes the file untouched
        (the run store refuses a journal that lost acknowledged records this way)."""
        path = Path(path)
        f = open(path, "r+b")
        cls._lock_file(f, path)
        try:
            data = f.read()
            records, valid, dropped = _scan(data, path)
            header = _check_header(records, path)
            if inspect is not None:
                inspect(JournalContents(header, records[1:], torn=dropped > 0, dropped_bytes=dropped,
                                        valid_bytes=valid))
        except BaseException:
            f.close()
            raise
        if dropped:
            f.truncate(valid)
            os.fsync(f.fileno())
        f.seek(valid)
        last = records[-1].get("seq", len(records) - 1)
        return cls(path, f, header, int(last))

    def append(self, record: dict) -> int:
        """Write one record durably (flush + fsync) and return its sequence number.
        The stored record is a copy of ``record`` with ``seq`` and ``t`` added."""
        kind = record.get("kind") if isinstance(record, dict) else None
        if not isinstance(kind, str) or kind == "header":
            raise ValueError(f"a journal record is a dict with a 'kind' other than 'header'; got {kind!r}")
        with self._lock:
            if self._f is None:
                raise JournalError(f"{self.path}: journal is closed")
            seq = self.last_seq + 1
            frame = encode_frame({**record, "seq": seq, "t": time.time()})
            self._f.write(frame)
            self._f.flush()
            os.fsync(self._f.fileno())
            self.last_seq = seq
            self._write_tip()
            return seq

    def close(self) -> None:
        with self._lock:
            if self._f is not None:
                self._f.close()  # closing the file releases the flock
                self._f = None
                os.close(self._tip)

    @property
    def closed(self) -> bool:
        return self._f is None

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
