"""One run, read once: the typed read model every reader of a run directory uses.

`evolve show`, `lineage`, `export`, `replay`, the HTML report and the tuner's objective all read a run
through :func:`read_run`; the journal is decoded once per read, into typed events, and indexed here by
program (its proposal, its last evaluation, the program it duplicated). Read-only: a live run works
too. A journal damaged in the middle is read for what is intact (``damage`` says what was skipped);
``loss`` compares it with what the run wrote (:mod:`evolve.store.integrity`).

Times are seconds since the run was created (the journal header's ``t``), so a resumed run shows
the time it was stopped as a gap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from evolve.engine.legacy import upgrade_state
from evolve.store.events import (DuplicateEvent, EvaluationEvent, FinishEvent, ProposalEvent, PromotionEvent,
                                 SystemPromptEvent, decode)
from evolve.store.integrity import journal_loss, witnesses
from evolve.store.journal import read_journal
from evolve.store.run_store import check_run_dir, read_config, read_latest_snapshot, read_status
from search.candidate import Candidate
from search.database.events import MigrationEvent, ResetEvent
from search.records import Evaluation


class LineageError(Exception):
    """A program id that names no program of the run, or more than one; the message is one line."""


def score_key(score) -> tuple:
    """Lexicographic sort key of a score list; missing or NaN entries rank lowest."""
    if not isinstance(score, (list, tuple)):
        return (-math.inf,)
    out = []
    for x in score:
        try:
            x = float(x)
        except (TypeError, ValueError):
            x = -math.inf
        out.append(-math.inf if math.isnan(x) else x)
    return tuple(out)


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


class RunView:
    """A run directory read once (see the module docstring). Built by :func:`read_run`.

    ``proposals``: id -> Candidate, ``evaluations``: id -> its last Evaluation (a program evaluated
    without a journaled proposal included), ``programs``: id -> ProgramRecord in proposal order,
    ``judged``: every evaluation event in order, ``promotions``: (evaluations so far, id, score) of each new
    best, as the engine journaled it."""

    def __init__(self, run_dir: str | Path):
        self.path = check_run_dir(run_dir)
        journal = self.path / "journal.msgpack"
        seen = witnesses(journal)                       # before the journal: a live run keeps writing
        contents = read_journal(journal, salvage=True)
        self.damage = contents.damage_note(journal)
        self.loss = journal_loss(journal, contents, seen)
        self.header, self.records, self.torn = contents.header, contents.records, contents.torn
        self.run_id = str(self.header.get("run_id", self.path.name))
        self.task, self.created = self.header.get("task"), self.header.get("created")
        self.config = read_config(self.path)
        self.strategy = str(self.config.get("strategy") or "islands")
        self.status = read_status(self.path) or {}
        self.events = [(rec.get("seq", 0), decode(rec)) for rec in self.records]
        self.proposals: dict[str, Candidate] = {}
        self.evaluations: dict[str, Evaluation] = {}
        self.eval_seq: dict[str, int] = {}
        self.programs: dict[str, ProgramRecord] = {}
        self.judged: list[JudgedAt] = []
        self.promotions: list[tuple[int, str, tuple]] = []
        self.system_prompts: dict[str, str] = {}
        self.migrations = self.resets = 0
        self.finish: str | None = None
        self._index()

    def _index(self) -> None:
        start = float(self.header.get("t") or 0.0)
        last_t = start
        for (seq, event), rec in zip(self.events, self.records):
            t = float(rec.get("t") or last_t)
            last_t = max(last_t, t)
            if isinstance(event, ProposalEvent):
                cand = event.candidate
                if cand.id not in self.proposals:
                    self.proposals[cand.id] = cand
                    self.programs[cand.id] = ProgramRecord(cand, len(self.programs), t - start, event.generation,
                                                           event.slot, event.island, dict(event.extra),
                                                           tuple(event.negative))
            elif isinstance(event, EvaluationEvent):
                ev = event.evaluation
                self.evaluations[ev.id] = ev                 # a re-evaluation replaces the earlier one
                self.eval_seq.setdefault(ev.id, seq)
                self.judged.append(JudgedAt(len(self.judged) + 1, t - start, ev))
                if ev.id in self.programs:
                    self.programs[ev.id].evaluation = ev
            elif isinstance(event, DuplicateEvent):
                if event.id in self.programs:
                    self.programs[event.id].duplicate_of = event.of or ""
            elif isinstance(event, PromotionEvent):
                self.promotions.append((len(self.judged), event.id, tuple(event.score)))
            elif isinstance(event, MigrationEvent):
                self.migrations += 1
            elif isinstance(event, ResetEvent):
                self.resets += 1
            elif isinstance(event, FinishEvent):
                self.finish = event.reason
            elif isinstance(event, SystemPromptEvent):
                self.system_prompts[event.digest] = event.text
        self.wall_s = last_t - start

    def ranked(self) -> list[str]:
        """Evaluated program ids, best first (the earliest on ties)."""
        return sorted(self.evaluations, key=lambda p: (tuple(-x for x in score_key(self.evaluations[p].score)),
                                                       self.eval_seq[p]))

    def best_id(self) -> str | None:
        ranked = self.ranked()
        return ranked[0] if ranked else None

    def resolve(self, program_id: str) -> str:
        """An exact id, or a unique prefix of one; ``LineageError`` otherwise."""
        known = set(self.proposals) | set(self.evaluations)
        if program_id in known:
            return program_id
        matches = sorted(k for k in known if k.startswith(program_id))
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise LineageError(f"program id {program_id!r} is ambiguous in run {self.run_id}: "
                               f"{', '.join(matches[:8])}{' ...' if len(matches) > 8 else ''}")
        raise LineageError(f"program {program_id!r} is not in run {self.run_id}; "
                           f"`evolve show {self.path}` lists the best programs' ids")

    def of_kind(self, cls) -> list:
        """The journal's events of one type, in order."""
        return [e for _, e in self.events if isinstance(e, cls)]

    @property
    def proposed(self) -> list[ProgramRecord]:
        """Every proposal with what became of it, in proposal order."""
        return list(self.programs.values())

    @cached_property
    def _snapshot(self) -> tuple[dict | None, int | None]:
        found = read_latest_snapshot(self.path)
        if found is None:
            return None, None
        state, seq = found
        try:
            return upgrade_state(state, self.strategy), seq
        except (ValueError, KeyError, TypeError):
            return None, None

    @property
    def state(self) -> dict | None:
        """The newest snapshot's engine state in the current layout (None if none, or unreadable)."""
        return self._snapshot[0]

    @property
    def state_seq(self) -> int | None:
        """The journal sequence the newest snapshot covers."""
        return self._snapshot[1]

    def strategy_state(self) -> dict | None:
        return None if self.state is None else self.state.get("strategy")

    def system_prompt(self, record: ProgramRecord) -> str | None:
        """The system message the candidate's model was sent (proposals name it by digest)."""
        return self.system_prompts.get(record.candidate.prompt_meta.get("system"))


def read_run(run: str | Path | RunView) -> RunView:
    """``run`` itself when it is already read, else the run directory read once. Raises the store's
    errors (RunStoreError, JournalError) for a directory that is not a readable run."""
    return run if isinstance(run, RunView) else RunView(run)
