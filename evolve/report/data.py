"""A run read for its report: the journal's typed events, in order, indexed by program, with times.

Everything comes through :mod:`evolve.store` (the journal, the events codec, snapshots, the
stored config): nothing here knows the record layout. Times are seconds since the run was
created (the journal header's ``t``), so a resumed run shows the time it was stopped as a gap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from evolve.engine.legacy import upgrade_state
from evolve.store.events import (DuplicateEvent, EvaluationEvent, FinishEvent, ProposalEvent, PromotionEvent,
                                 SystemPromptEvent, decode)
from evolve.store.journal import read_journal
from evolve.store.run_store import check_run_dir, read_config, read_latest_snapshot, read_status
from search.candidate import Candidate
from search.database.events import MigrationEvent, ResetEvent
from search.records import Evaluation


@dataclass
class ProgramRecord:
    """One proposal and what became of it (its last evaluation, or the program it duplicated)."""

    candidate: Candidate
    proposal_index: int                 # 0-based, in journal order
    proposed_s: float                   # seconds since the run was created
    generation: int = 0
    slot: int = 0
    island: int = 0
    extra: dict = field(default_factory=dict)      # strategy fields (tree_parent, trial, round, ...)
    negative: tuple[str, ...] = ()
    evaluation: Evaluation | None = None
    duplicate_of: str | None = None

    @property
    def id(self) -> str:
        return self.candidate.id

    @property
    def parent(self) -> str | None:
        return self.candidate.parent_ids[0] if self.candidate.parent_ids else None

    @property
    def derivation(self) -> list:
        """The chain of checked steps of a derivation proposal (empty for other proposals, and on
        versions whose Candidate has no ``derivation`` field, where it is a strategy-free extra)."""
        steps = getattr(self.candidate, "derivation", None) or self.extra.get("derivation") or []
        return [s for s in steps if isinstance(s, dict)]


@dataclass(frozen=True)
class JudgedAt:
    """One evaluation event, in the order the journal has them (a re-evaluation counts again)."""

    index: int                           # 1-based: the run's n-th evaluation
    seconds: float                       # since the run was created
    evaluation: Evaluation


@dataclass
class RunData:
    path: Path
    run_id: str
    task: str | None
    created: str | None
    strategy: str
    config: dict
    status: dict
    programs: dict[str, ProgramRecord]            # in proposal order
    judged: list[JudgedAt]                        # evaluation events in order
    promotions: list[tuple[int, str]]             # (evaluations so far, id) of each new best
    migrations: int = 0
    resets: int = 0
    finish: str | None = None
    wall_s: float = 0.0                           # last record's time since creation
    torn: bool = False
    state: dict | None = None                     # the newest snapshot's engine state (current layout)
    state_seq: int | None = None                  # the journal sequence that snapshot covers
    system_prompts: dict = field(default_factory=dict)   # digest -> text (journaled once per distinct text)
    damage: str = ""                              # what a journal damaged in the middle lost ('' when intact)

    @property
    def proposals(self) -> list[ProgramRecord]:
        return list(self.programs.values())

    def strategy_state(self) -> dict | None:
        return None if self.state is None else self.state.get("strategy")

    def system_prompt(self, record: ProgramRecord) -> str | None:
        """The system message the candidate's model was sent (proposals name it by digest)."""
        return self.system_prompts.get(record.candidate.prompt_meta.get("system"))


def load_run(run_dir: str | Path) -> RunData:
    """Read a run directory (read-only; a live run works too). Raises the store's errors
    (RunStoreError, JournalError) for a directory that is not a readable run; a journal damaged in
    the middle is read for what is intact (``damage`` says what was not)."""
    path = check_run_dir(run_dir)
    contents = read_journal(path / "journal.msgpack", salvage=True)
    header = contents.header
    start = float(header.get("t") or 0.0)
    config = read_config(path)
    strategy = str(config.get("strategy") or "islands")
    programs: dict[str, ProgramRecord] = {}
    judged: list[JudgedAt] = []
    promotions: list[tuple[int, str]] = []
    migrations = resets = 0
    finish = None
    system_prompts: dict[str, str] = {}
    last_t = start
    for rec in contents.records:
        t = float(rec.get("t") or last_t)
        last_t = max(last_t, t)
        event = decode(rec)
        if isinstance(event, ProposalEvent):
            if event.candidate.id not in programs:
                programs[event.candidate.id] = ProgramRecord(
                    event.candidate, len(programs), t - start, event.generation, event.slot, event.island,
                    dict(event.extra), tuple(event.negative))
        elif isinstance(event, EvaluationEvent):
            judged.append(JudgedAt(len(judged) + 1, t - start, event.evaluation))
            record = programs.get(event.evaluation.id)
            if record is not None:
                record.evaluation = event.evaluation
        elif isinstance(event, DuplicateEvent):
            if event.id in programs:
                programs[event.id].duplicate_of = event.of or ""
        elif isinstance(event, PromotionEvent):
            promotions.append((len(judged), event.id))
        elif isinstance(event, MigrationEvent):
            migrations += 1
        elif isinstance(event, ResetEvent):
            resets += 1
        elif isinstance(event, FinishEvent):
            finish = event.reason
        elif isinstance(event, SystemPromptEvent):
            system_prompts[event.digest] = event.text
    state, state_seq = _snapshot(path, strategy)
    return RunData(path=path, run_id=str(header.get("run_id", path.name)), task=header.get("task"),
                   created=header.get("created"), strategy=strategy, config=config, status=read_status(path) or {},
                   programs=programs, judged=judged, promotions=promotions, migrations=migrations, resets=resets,
                   finish=finish, wall_s=last_t - start, torn=contents.torn, state=state, state_seq=state_seq,
                   system_prompts=system_prompts, damage=contents.damage_note(path / "journal.msgpack"))


def _snapshot(path: Path, strategy: str) -> tuple[dict | None, int | None]:
    """The newest snapshot's state in the current layout (None if there is none, or it cannot be read)."""
    found = read_latest_snapshot(path)
    if found is None:
        return None, None
    state, seq = found
    try:
        return upgrade_state(state, strategy), seq
    except (ValueError, KeyError, TypeError):
        return None, None
