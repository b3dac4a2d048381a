"""The typed records that cross process boundaries during a search (Ray passes them as objects).

- :class:`Evaluation`: what an evaluator returns for one candidate (its Verdict and score);
- :class:`JudgedProgram`: a candidate with its evaluation, as strategies keep it and as a
  parent or inspiration travels to a proposer;
- :class:`ProposalRequest`: everything a proposer needs to write one candidate.

Plain dicts exist only on disk: ``to_dict``/``from_dict`` here (and ``Candidate.to_dict``,
``Verdict.to_dict``) are what the run journal and snapshots store.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from evaluators.feedback import did_not_run
from evaluators.profile import StageTime
from evaluators.verdict import Verdict
from search.candidate import Candidate

#: prompt styles a proposer may be asked for
STYLES = ("evolve", "paper")


@dataclass(frozen=True)
class Evaluation:
    """One candidate judged: its Verdict, its lexicographic score (search.database.score_of,
    higher is better), the wall seconds of the whole cascade, the worker (host:pid) that ran it
    and, under Ray, the id of its node (two nodes on one host share a host name), and where the
    cascade's time went (``profile``, :mod:`evaluators.profile`; empty in runs made before it)."""

    id: str
    verdict: Verdict
    score: tuple[float, ...]
    seconds: float = 0.0
    worker: str = ""
    node: str = ""
    profile: tuple[StageTime, ...] = ()

    @property
    def accepted(self) -> bool:
        return self.verdict.accepted

    def to_dict(self) -> dict:
        return {"id": self.id, "verdict": self.verdict.to_dict(), "score": [float(x) for x in self.score],
                "seconds": float(self.seconds), "worker": self.worker, "node": self.node,
                "profile": [s.to_dict() for s in self.profile]}

    @classmethod
    def from_dict(cls, d: dict) -> "Evaluation":
        return cls(str(d["id"]), Verdict.from_dict(d["verdict"]), tuple(float(x) for x in d["score"]),
                   float(d.get("seconds") or 0.0), str(d.get("worker") or ""), str(d.get("node") or ""),
                   tuple(StageTime.from_dict(s) for s in d.get("profile") or ()))


@dataclass(frozen=True)
class JudgedProgram:
    """A candidate and what became of it: ``evaluation`` is None when it was not judged (no code,
    or ``duplicate_of`` names the earlier program with the same normalised code)."""

    candidate: Candidate
    evaluation: Evaluation | None = None
    duplicate_of: str | None = None

    @property
    def id(self) -> str:
        return self.candidate.id

    @property
    def verdict(self) -> Verdict | None:
        return self.evaluation.verdict if self.evaluation is not None else None

    @property
    def accepted(self) -> bool:
        return self.evaluation is not None and self.evaluation.accepted

    @property
    def feedback(self) -> str:
        """What the verifier said, in the paper's words when the program never ran."""
        if self.evaluation is not None:
            return self.evaluation.verdict.feedback
        if self.duplicate_of is not None:
            return (f"Your program is the same (up to comments and local names) as program {self.duplicate_of}, "
                    "which was judged already; write a different one.")
        return did_not_run(self.candidate.parse_error or "no code was produced")

    def to_dict(self) -> dict:
        return {"candidate": self.candidate.to_dict(),
                "evaluation": None if self.evaluation is None else self.evaluation.to_dict(),
                "duplicate_of": self.duplicate_of}

    @classmethod
    def from_dict(cls, d: dict) -> "JudgedProgram":
        ev = d.get("evaluation")
        return cls(Candidate.from_dict(d["candidate"]), None if ev is None else Evaluation.from_dict(ev),
                   d.get("duplicate_of"))


@dataclass(frozen=True)
class ProposalRequest:
    """One slot of a generation: which proposer writes it, from which parent and inspirations.

    ``style`` "evolve" asks for the project's prompt (parent, verdict, failed checks, negative
    block); "paper" for StatMechBench-v0's initial prompt (no parent) or feedback prompt (the
    parent's raw response and the verifier's feedback). ``negative`` lists the negative-prompting
    items in force; ``model`` names the model to use (None: the proposer chooses). ``known``: the
    normalised code hashes (:func:`search.database.dedup.normalised_hash`) of every program the
    run has already proposed, for proposers that declare ``uses_known`` (a proposer with a small,
    enumerable space of programs can then write one not yet judged); empty for the others.
    """

    id: str
    generation: int
    slot: int
    proposer: str
    parent: JudgedProgram | None = None
    inspirations: tuple[JudgedProgram, ...] = ()
    negative: tuple[str, ...] = ()
    style: str = "evolve"
    model: str | None = None
    seed: int = 0
    known: frozenset[str] = frozenset()

    def __post_init__(self):
        if self.style not in STYLES:
            raise ValueError(f"unknown prompt style {self.style!r}; expected one of {STYLES}")

    def rng(self) -> np.random.Generator:
        """The slot's own generator: proposals are deterministic in (run seed, generation, slot)."""
        return np.random.default_rng([self.seed, self.generation, self.slot])


@dataclass(frozen=True)
class Selection:
    """A strategy's choice for one slot: the parent (None: write from scratch), inspirations,
    the niche whose negative-prompting memory applies (the island; 0 without islands), the prompt
    style, and strategy fields journaled with the proposal (e.g. the tree node expanded)."""

    parent: JudgedProgram | None = None
    inspirations: tuple[JudgedProgram, ...] = ()
    niche: int = 0
    style: str = "evolve"
    journal: dict = field(default_factory=dict)
