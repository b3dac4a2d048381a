"""The run's events, typed, and the one codec between them and the journal's plain records.

The journal (:mod:`evolve.store.journal`, schema 1) stores plain msgpack dicts with a ``kind``;
everything above it works with the dataclasses here. :func:`encode` and :func:`decode` are the
only places that know the record layout:

- ``proposal``: ``candidate`` (``Candidate.to_dict()`` plus where it was made: ``generation``,
  ``slot``, ``island`` (the niche: island, or 0) and strategy fields such as ``tree_parent``),
  and ``negative``: the negative-prompting items in force for it (absent in older runs);
- ``evaluation``: ``id``, ``verdict`` (``Verdict.to_dict()``), ``score``, ``seconds``, ``worker``,
  ``node``, ``profile`` (where the seconds went, ``evaluators.profile.StageTime`` dicts; absent in
  older runs);
- ``duplicate``: ``id`` and ``of`` (the program with the same normalised code; absent in old runs);
- ``promotion``: ``id``, ``score`` (a new best program);
- ``migration`` / ``reset``: the database's MigrationEvent / ResetEvent fields;
- ``budget``: the run's counters at a snapshot; ``snapshot``: ``file``, ``journal_seq``;
- ``finish``: ``reason``;
- ``system_prompt``: ``digest`` and ``text`` of a system prompt, once per distinct text (proposals
  name it in ``candidate.prompt_meta.system``);
- ``preflight``: ``model``, ``ok``, ``seconds``, ``error`` and ``error_kind`` of the check call made
  to each model before the first generation of a session.
- ``resume``: one per ``evolve resume``: ``snapshot`` (the file it started from, or None) and
  ``covered`` (the journal record that snapshot covers), ``extra`` (budgets raised by this resume:
  ``proposals``, ``evaluations``, ``wall_time_s``), ``refused`` (snapshots refused, with reasons),
  ``lost_records`` (records lost from the journal and accepted with ``--accept-loss``), and for runs
  created before identities existed ``config_sha256`` and ``config`` (the identity recorded from then on).

Records of kinds this version does not know decode to None (readers skip them).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from search.candidate import Candidate
from search.database.events import MigrationEvent, ResetEvent
from search.records import Evaluation

_PLACEMENT = ("generation", "slot", "island")


@dataclass(frozen=True)
class ProposalEvent:
    candidate: Candidate
    generation: int
    slot: int
    island: int = 0
    extra: dict = field(default_factory=dict)   # strategy fields journaled with the proposal
    negative: tuple[str, ...] = ()              # negative-prompting items in force when it was asked for


@dataclass(frozen=True)
class EvaluationEvent:
    evaluation: Evaluation


@dataclass(frozen=True)
class DuplicateEvent:
    id: str
    of: str | None = None


@dataclass(frozen=True)
class PromotionEvent:
    id: str
    score: tuple[float, ...]


@dataclass(frozen=True)
class BudgetEvent:
    counters: dict


@dataclass(frozen=True)
class SnapshotEvent:
    file: str
    journal_seq: int


@dataclass(frozen=True)
class FinishEvent:
    reason: str


@dataclass(frozen=True)
class SystemPromptEvent:
    digest: str
    text: str


@dataclass(frozen=True)
class PreflightEvent:
    model: str
    ok: bool
    seconds: float = 0.0
    error: str | None = None
    error_kind: str | None = None


EXTRA_BUDGETS = ("proposals", "evaluations", "wall_time_s")


@dataclass(frozen=True)
class ResumeEvent:
    snapshot: str | None
    covered: int
    extra: dict = field(default_factory=dict)      # budget name (EXTRA_BUDGETS) -> amount added
    refused: tuple[str, ...] = ()
    lost_records: int = 0
    config_sha256: str | None = None               # only when the header has none (older runs)
    config: dict | None = None


Event = (ProposalEvent | EvaluationEvent | DuplicateEvent | PromotionEvent | MigrationEvent | ResetEvent
         | BudgetEvent | SnapshotEvent | FinishEvent | SystemPromptEvent | PreflightEvent | ResumeEvent)


def encode(event) -> dict:
    """The journal record of ``event`` (without ``seq`` and ``t``, which the journal adds)."""
    if isinstance(event, ProposalEvent):
        return {"kind": "proposal", "candidate": {**event.candidate.to_dict(), "generation": event.generation,
                                                  "slot": event.slot, "island": event.island, **event.extra},
                "negative": list(event.negative)}
    if isinstance(event, EvaluationEvent):
        return {"kind": "evaluation", **event.evaluation.to_dict()}
    if isinstance(event, DuplicateEvent):
        return {"kind": "duplicate", "id": event.id, "of": event.of}
    if isinstance(event, PromotionEvent):
        return {"kind": "promotion", "id": event.id, "score": [float(x) for x in event.score]}
    if isinstance(event, MigrationEvent):
        return {"kind": "migration", **event.to_dict()}
    if isinstance(event, ResetEvent):
        return {"kind": "reset", **event.to_dict()}
    if isinstance(event, BudgetEvent):
        return {"kind": "budget", **event.counters}
    if isinstance(event, SnapshotEvent):
        return {"kind": "snapshot", "file": event.file, "journal_seq": int(event.journal_seq)}
    if isinstance(event, FinishEvent):
        return {"kind": "finish", "reason": event.reason}
    if isinstance(event, SystemPromptEvent):
        return {"kind": "system_prompt", "digest": event.digest, "text": event.text}
    if isinstance(event, PreflightEvent):
        return {"kind": "preflight", "model": event.model, "ok": bool(event.ok), "seconds": float(event.seconds),
                "error": event.error, "error_kind": event.error_kind}
    if isinstance(event, ResumeEvent):
        rec = {"kind": "resume", "snapshot": event.snapshot, "covered": int(event.covered), "extra": dict(event.extra),
               "refused": list(event.refused), "lost_records": int(event.lost_records)}
        if event.config_sha256:
            rec.update(config_sha256=event.config_sha256, config=event.config)
        return rec
    raise TypeError(f"not a run event: {type(event).__name__}")


def decode(record: dict):
    """The event of a journal record; None for kinds this version does not know (and the header)."""
    kind = record.get("kind")
    if kind == "proposal":
        raw = dict(record["candidate"])
        known = {f.name for f in fields(Candidate)}
        extra = {k: v for k, v in raw.items() if k not in known and k not in _PLACEMENT}
        return ProposalEvent(Candidate.from_dict(raw), int(raw.get("generation", 0)), int(raw.get("slot", 0)),
                             int(raw.get("island", 0)), extra, tuple(str(x) for x in record.get("negative") or ()))
    if kind == "evaluation":
        return EvaluationEvent(Evaluation.from_dict(record))
    if kind == "duplicate":
        return DuplicateEvent(str(record["id"]), record.get("of"))
    if kind == "promotion":
        return PromotionEvent(str(record["id"]), tuple(float(x) for x in record["score"]))
    if kind == "migration":
        return MigrationEvent(**_known(MigrationEvent, record))
    if kind == "reset":
        return ResetEvent(**_known(ResetEvent, record))
    if kind == "budget":
        return BudgetEvent({k: v for k, v in record.items() if k not in ("kind", "seq", "t")})
    if kind == "snapshot":
        return SnapshotEvent(str(record["file"]), int(record["journal_seq"]))
    if kind == "finish":
        return FinishEvent(str(record.get("reason", "")))
    if kind == "system_prompt":
        return SystemPromptEvent(str(record["digest"]), str(record["text"]))
    if kind == "preflight":
        return PreflightEvent(**_known(PreflightEvent, record))
    if kind == "resume":
        return ResumeEvent(record.get("snapshot"), int(record.get("covered", 0)), dict(record.get("extra") or {}),
                           tuple(record.get("refused") or ()), int(record.get("lost_records", 0)),
                           record.get("config_sha256"), record.get("config"))
    return None


def extra_budgets(records: list[dict]) -> dict:
    """The budgets raised by every resume so far (``resume`` records), summed per budget."""
    total = dict.fromkeys(EXTRA_BUDGETS, 0)
    for rec in records:
        event = decode(rec) if rec.get("kind") == "resume" else None
        for name in EXTRA_BUDGETS:
            total[name] += (event.extra.get(name) or 0) if event is not None else 0
    return total


def _known(cls, record: dict) -> dict:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in record.items() if k in names}

