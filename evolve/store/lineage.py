"""Lineage and summaries of a run, read from its journal (read-only: works on live runs too).

A program is "in the run" when the journal has a ``proposal`` or an ``evaluation`` for its id.
Scores are lists compared lexicographically (higher is better); the best program is the one
with the highest score among ``evaluation`` records (the earliest on ties). Everything shown to
people or in JSON carries the score's named view too (``score_named``,
:func:`search.database.named_score`). Ancestry follows the
first parent id, root first, each step with a unified diff of the code from its parent. A program
rendered from a derivation carries its chain of checked steps (``derivation``, the candidate's
record: action, parameters, check) and the chain on one line (``chain``).
"""

from __future__ import annotations

import difflib
import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from evolve.store.events import (EvaluationEvent, FinishEvent, ProposalEvent, PromotionEvent, SnapshotEvent,
                                 decode)
from evolve.store.failures import run_failure
from evolve.store.integrity import journal_loss, witnesses
from evolve.store.journal import read_journal
from evolve.store.model_stats import model_stats
from evolve.store.run_store import check_run_dir, read_status
from search.candidate import Candidate
from search.database import NamedScore, named_score
from search.database.events import MigrationEvent, ResetEvent
from search.derivation.feedback import chain_line
from search.records import Evaluation


class LineageError(Exception):
    """A question about a run that has no answer (unknown program, nothing evaluated yet)."""


@dataclass
class ProgramInfo:
    """What the journal says about one program: provenance, claims and its (last) evaluation."""

    id: str
    proposer: str | None = None
    model: str | None = None
    class_claim: str | None = None
    complexity_claim: str | None = None
    verdict: str | None = None  # "accept" | "reject" | None (not evaluated)
    largest_n_verified: int | None = None
    max_rel_err: float | None = None
    score: list | None = None
    parent_ids: list[str] = field(default_factory=list)
    feedback: str | None = None
    derivation: list[dict] = field(default_factory=list)   # the checked steps it was rendered from, if any
    chain: str | None = None                                # that chain on one line

    @classmethod
    def of(cls, pid: str, cand: Candidate | None, ev: Evaluation | None, **extra) -> "ProgramInfo":
        """What the journal's proposal ``cand`` and evaluation ``ev`` (either may be missing) say."""
        v = ev.verdict if ev is not None else None
        record = [dict(step) for step in cand.derivation] if cand is not None else []
        return cls(id=pid, proposer=cand.proposer if cand else None, model=cand.model if cand else None,
                   class_claim=(cand.tractable_class if cand else None) or (v.class_.claimed if v else None),
                   complexity_claim=(cand.complexity_O if cand else None) or (v.complexity.claimed if v else None),
                   verdict=v.verdict if v else None, largest_n_verified=v.numerical.largest_n_verified if v else None,
                   max_rel_err=v.numerical.max_rel_err if v else None, score=list(ev.score) if ev else None,
                   parent_ids=list(cand.parent_ids) if cand else [], feedback=v.feedback if v else None,
                   derivation=record, chain=chain_line(record) if record else None, **extra)

    @property
    def named_score(self) -> NamedScore | None:
        """The score with its components named (None when not evaluated or not a program score)."""
        return named_score(self.score) if self.score is not None else None

    def to_dict(self) -> dict:
        named = self.named_score
        return {**asdict(self), "score_named": named.to_dict() if named is not None else None}


@dataclass
class Ancestor(ProgramInfo):
    """One step of an ancestry: the program and the unified diff of its code from its first parent
    (empty for a root). ``parent_in_run`` is False when the first parent is not in this run."""

    diff_from_parent: str = ""
    parent_in_run: bool = True
    code: str | None = None


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


class RunIndex:
    """The journal of one run, decoded into typed events and indexed by program id. A journal damaged
    in the middle is read for what is intact (``damage``: a sentence on what was skipped, else '')."""

    def __init__(self, run_dir: str | Path):
        self.path = check_run_dir(run_dir)
        seen = witnesses(self.path / "journal.msgpack")      # before the journal: a live run keeps writing
        contents = read_journal(self.path / "journal.msgpack", salvage=True)
        self.damage = contents.damage_note(self.path / "journal.msgpack")
        self.header, self.records, self.torn = contents.header, contents.records, contents.torn
        self.loss = journal_loss(self.path / "journal.msgpack", contents, seen)
        self.run_id = self.header.get("run_id", self.path.name)
        self.events = [(rec.get("seq", 0), decode(rec)) for rec in self.records]
        self.proposals: dict[str, Candidate] = {}
        self.evaluations: dict[str, Evaluation] = {}
        self.eval_seq: dict[str, int] = {}
        for seq, event in self.events:
            if isinstance(event, ProposalEvent):
                self.proposals.setdefault(event.candidate.id, event.candidate)
            elif isinstance(event, EvaluationEvent):
                pid = event.evaluation.id
                self.evaluations[pid] = event.evaluation  # a re-evaluation replaces the earlier one
                self.eval_seq.setdefault(pid, seq)

    def of_kind(self, cls) -> list:
        return [e for _, e in self.events if isinstance(e, cls)]

    def ranked(self) -> list[str]:
        """Evaluated program ids, best first."""
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

    def info(self, pid: str, cls=ProgramInfo, **extra) -> ProgramInfo:
        return cls.of(pid, self.proposals.get(pid), self.evaluations.get(pid), **extra)


def code_diff(old: str | None, new: str | None, old_name: str, new_name: str) -> str:
    """Unified diff of two programs' code ('' when either is missing or they are equal)."""
    if old is None or new is None:
        return ""
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), fromfile=f"{old_name}/program.py",
                                 tofile=f"{new_name}/program.py", lineterm="")
    return "\n".join(lines)


def index(run: str | Path | RunIndex) -> RunIndex:
    """``run`` itself when it is already read, else its RunIndex."""
    return run if isinstance(run, RunIndex) else RunIndex(run)


def ancestry(run_dir: str | Path | RunIndex, program_id: str | None = None) -> list[Ancestor]:
    """The ancestry of ``program_id`` (default: the run's best program), root first."""
    idx = index(run_dir)
    if program_id is None:
        pid = idx.best_id()
        if pid is None:
            raise LineageError(f"run {idx.run_id} has no evaluated program yet; pass --program ID to follow "
                               f"one of its proposals (`evolve show {idx.path}` counts them)")
    else:
        pid = idx.resolve(program_id)
    chain, seen, parent_in_run = [], set(), True
    cur: str | None = pid
    while cur is not None and cur not in seen:
        seen.add(cur)
        chain.append(cur)
        cand = idx.proposals.get(cur)
        parents = list(cand.parent_ids) if cand is not None else []
        cur = parents[0] if parents else None
        if cur is not None and cur not in idx.proposals:
            parent_in_run = False
            break
    chain.reverse()
    out = []
    for i, p in enumerate(chain):
        code = idx.proposals[p].code if p in idx.proposals else None
        if i == 0:
            diff, in_run = "", parent_in_run
        else:
            diff, in_run = code_diff(idx.proposals[chain[i - 1]].code, code, chain[i - 1], p), True
        out.append(idx.info(p, Ancestor, diff_from_parent=diff, parent_in_run=in_run, code=code))
    return out


def top_programs(run_dir: str | Path | RunIndex, k: int = 5) -> list[ProgramInfo]:
    """The ``k`` best evaluated programs, best first."""
    idx = index(run_dir)
    return [idx.info(p) for p in idx.ranked()[:max(0, k)]]


def run_summary(run_dir: str | Path | RunIndex) -> dict:
    """Counts, cost, time and the best program of a run, as plain values (JSON-ready)."""
    idx = index(run_dir)
    cands = list(idx.proposals.values())
    failed = [c for c in cands if not c.ok]
    verdicts = [e.verdict.verdict for e in idx.evaluations.values()]
    times = [r["t"] for r in [idx.header, *idx.records] if isinstance(r.get("t"), (int, float))]
    wall = (max(times) - min(times)) if times else 0.0
    best = idx.best_id()
    finish = idx.of_kind(FinishEvent)
    status = read_status(idx.path) or {}
    failure = run_failure(status, cands)
    return {
        "run_id": idx.run_id, "task": idx.header.get("task"), "created": idx.header.get("created"),
        "status": status.get("state"), "finished": finish[-1].reason if finish else None,
        "proposals": len(cands), "evaluations": len(idx.evaluations),
        "accepted": sum(v == "accept" for v in verdicts), "rejected": sum(v == "reject" for v in verdicts),
        "failed_proposals": len(failed),
        "failed_by_kind": dict(Counter(c.error_kind or "unknown" for c in failed)),
        "best_id": best, "best_score": list(idx.evaluations[best].score) if best else None,
        "best_score_named": _named_dict(idx.evaluations[best].score) if best else None,
        "promotions": len(idx.of_kind(PromotionEvent)), "migrations": len(idx.of_kind(MigrationEvent)),
        "resets": len(idx.of_kind(ResetEvent)), "snapshots": len(idx.of_kind(SnapshotEvent)),
        "cost_usd": sum(float(c.cost_usd) for c in cands),
        "tokens_in": sum(int(c.tokens_in) for c in cands),
        "tokens_out": sum(int(c.tokens_out) for c in cands),
        "wall_s": wall, "proposals_per_minute": len(cands) / (wall / 60.0) if wall > 0 else None,
        "by_proposer": dict(Counter(str(c.proposer or "(none)") for c in cands)),
        "by_model": dict(Counter(str(c.model or "(none)") for c in cands)),
        "class_labels": sorted({c.tractable_class for c in cands if c.tractable_class}),
        "journal_torn": idx.torn,
        "models": model_stats(idx),
        "failure": None if failure is None else failure.to_dict(),
        "journal_lost_records": idx.loss.lost_records if idx.loss else 0,
        "journal_damage": idx.damage or None,
    }


def _named_dict(score) -> dict | None:
    named = named_score(score)
    return named.to_dict() if named is not None else None
