"""Lineage and summaries of a run, read from its journal (read-only: works on live runs too).

A program is "in the run" when the journal has a ``proposal`` or an ``evaluation`` for its id.
Scores are lists compared lexicographically (higher is better); the best program is the one
with the highest score among ``evaluation`` records (the earliest on ties). Ancestry follows the
first parent id, root first, each step with a unified diff of the code from its parent.
"""

from __future__ import annotations

import difflib
import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from evolve.journal import read_journal
from evolve.run_store import check_run_dir, read_status


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

    def to_dict(self) -> dict:
        return asdict(self)


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
    """The journal of one run, indexed by program id."""

    def __init__(self, run_dir: str | Path):
        self.path = check_run_dir(run_dir)
        contents = read_journal(self.path / "journal.msgpack")
        self.header, self.records, self.torn = contents.header, contents.records, contents.torn
        self.run_id = self.header.get("run_id", self.path.name)
        self.proposals: dict[str, dict] = {}
        self.evaluations: dict[str, dict] = {}
        self.eval_seq: dict[str, int] = {}
        for rec in self.records:
            if rec["kind"] == "proposal":
                cand = rec.get("candidate", rec)
                if cand.get("id") is not None:
                    self.proposals.setdefault(str(cand["id"]), cand)
            elif rec["kind"] == "evaluation" and rec.get("id") is not None:
                pid = str(rec["id"])
                self.evaluations[pid] = rec  # a re-evaluation replaces the earlier one
                self.eval_seq.setdefault(pid, rec.get("seq", 0))

    def of_kind(self, kind: str) -> list[dict]:
        return [r for r in self.records if r["kind"] == kind]

    def ranked(self) -> list[str]:
        """Evaluated program ids, best first."""
        scored = [p for p, e in self.evaluations.items() if e.get("score") is not None]
        return sorted(scored, key=lambda p: (tuple(-x for x in score_key(self.evaluations[p]["score"])),
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
        cand = self.proposals.get(pid, {})
        ev = self.evaluations.get(pid) or {}
        verdict = ev.get("verdict") or {}
        num = verdict.get("numerical") or {}
        return cls(id=pid, proposer=cand.get("proposer"), model=cand.get("model"),
                   class_claim=cand.get("tractable_class") or (verdict.get("class") or {}).get("claimed"),
                   complexity_claim=cand.get("complexity_O") or (verdict.get("complexity") or {}).get("claimed"),
                   verdict=verdict.get("verdict"), largest_n_verified=num.get("largest_n_verified"),
                   max_rel_err=num.get("max_rel_err"), score=ev.get("score"),
                   parent_ids=[str(p) for p in cand.get("parent_ids") or []],
                   feedback=verdict.get("feedback"), **extra)


def code_diff(old: str | None, new: str | None, old_name: str, new_name: str) -> str:
    """Unified diff of two programs' code ('' when either is missing or they are equal)."""
    if old is None or new is None:
        return ""
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), fromfile=f"{old_name}/program.py",
                                 tofile=f"{new_name}/program.py", lineterm="")
    return "\n".join(lines)


def ancestry(run_dir: str | Path, program_id: str | None = None) -> list[Ancestor]:
    """The ancestry of ``program_id`` (default: the run's best program), root first."""
    idx = RunIndex(run_dir)
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
        parents = [str(p) for p in idx.proposals.get(cur, {}).get("parent_ids") or []]
        cur = parents[0] if parents else None
        if cur is not None and cur not in idx.proposals:
            parent_in_run = False
            break
    chain.reverse()
    out = []
    for i, p in enumerate(chain):
        code = idx.proposals.get(p, {}).get("code")
        if i == 0:
            diff, in_run = "", parent_in_run
        else:
            diff, in_run = code_diff(idx.proposals[chain[i - 1]].get("code"), code, chain[i - 1], p), True
        out.append(idx.info(p, Ancestor, diff_from_parent=diff, parent_in_run=in_run, code=code))
    return out


def top_programs(run_dir: str | Path, k: int = 5) -> list[ProgramInfo]:
    """The ``k`` best evaluated programs, best first."""
    idx = RunIndex(run_dir)
    return [idx.info(p) for p in idx.ranked()[:max(0, k)]]


def run_summary(run_dir: str | Path) -> dict:
    """Counts, cost, time and the best program of a run, as plain values (JSON-ready)."""
    idx = RunIndex(run_dir)
    cands = list(idx.proposals.values())
    failed = [c for c in cands if c.get("code") is None or c.get("parse_error")]
    verdicts = [(e.get("verdict") or {}).get("verdict") for e in idx.evaluations.values()]
    times = [r["t"] for r in [idx.header, *idx.records] if isinstance(r.get("t"), (int, float))]
    wall = (max(times) - min(times)) if times else 0.0
    best = idx.best_id()
    finish = idx.of_kind("finish")
    status = read_status(idx.path) or {}
    return {
        "run_id": idx.run_id, "task": idx.header.get("task"), "created": idx.header.get("created"),
        "status": status.get("state"), "finished": finish[-1].get("reason") if finish else None,
        "proposals": len(cands), "evaluations": len(idx.evaluations),
        "accepted": sum(v == "accept" for v in verdicts), "rejected": sum(v == "reject" for v in verdicts),
        "failed_proposals": len(failed),
        "failed_by_kind": dict(Counter(c.get("error_kind") or "unknown" for c in failed)),
        "best_id": best, "best_score": idx.evaluations[best].get("score") if best else None,
        "promotions": len(idx.of_kind("promotion")), "migrations": len(idx.of_kind("migration")),
        "resets": len(idx.of_kind("reset")), "snapshots": len(idx.of_kind("snapshot")),
        "cost_usd": sum(float(c.get("cost_usd") or 0.0) for c in cands),
        "tokens_in": sum(int(c.get("tokens_in") or 0) for c in cands),
        "tokens_out": sum(int(c.get("tokens_out") or 0) for c in cands),
        "wall_s": wall, "proposals_per_minute": len(cands) / (wall / 60.0) if wall > 0 else None,
        "by_proposer": dict(Counter(str(c.get("proposer") or "(none)") for c in cands)),
        "by_model": dict(Counter(str(c.get("model") or "(none)") for c in cands)),
        "class_labels": sorted({c["tractable_class"] for c in cands if c.get("tractable_class")}),
        "journal_torn": idx.torn,
    }
