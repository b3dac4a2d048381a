"""One generation between its selection and its end, in two steps the engine may take apart.

- *selected*: slots planned, a parent chosen for each (the strategy's ``select``), a model for each
  LLM slot and the negative-prompting block in force. Nothing has been proposed yet.
- *launched*: proposed, deduplicated, its evaluations queued; ``arrived`` fills as they come in.

When generations overlap (:mod:`evolve.engine.engine`), generation g+1 is selected and launched
before generation g is finished, so a snapshot can fall between the steps. It then carries the
open generations as plain data (``to_state``): a resumed run launches a selected one with exactly
the parents, models and negative blocks the first run chose, and finishes a launched one without
proposing or judging anything again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evolve.engine.plan import Slot
from search.candidate import Candidate
from search.records import Evaluation, JudgedProgram, ProposalRequest, Selection


@dataclass
class Generation:
    number: int
    slots: list[Slot]
    selections: list[Selection]
    negative: dict[str, tuple[str, ...]]      # slot id -> negative-prompting items (LLM slots)
    models: dict[str, str]                    # slot id -> model (LLM slots)
    launched: bool = False
    candidates: dict[str, Candidate] = field(default_factory=dict)   # slot id -> proposal (launched slots)
    fresh: list[Candidate] = field(default_factory=list)   # to judge, in slot order, within the evaluation budget
    duplicate_of: dict[str, str] = field(default_factory=dict)       # slot id -> earlier program with that code
    arrived: dict[str, Evaluation] = field(default_factory=dict)     # judged (and journaled) so far
    tickets: list[int] = field(default_factory=list)   # the pool's batches of its evaluations (this process)

    def requests(self, seed: int, count: int, known: dict[str, frozenset[str]] | None = None) -> list[ProposalRequest]:
        """What the proposers are asked for the first ``count`` slots (the rest lie beyond the proposal
        budget); ``known``: proposer name -> the code hashes it is told are known (see ProposalRequest)."""
        known = known or {}
        return [ProposalRequest(id=slot.id, generation=self.number, slot=slot.slot, proposer=slot.proposer,
                                parent=sel.parent, inspirations=sel.inspirations,
                                negative=self.negative.get(slot.id, ()), style=sel.style,
                                model=self.models.get(slot.id), seed=seed,
                                known=known.get(slot.proposer, frozenset()))
                for slot, sel in list(zip(self.slots, self.selections))[:count]]

    def outcomes(self):
        """(slot, selection, judged program) of every slot with an outcome, in slot order: slots never
        proposed (beyond the proposal budget) and programs left unjudged by the evaluation budget have none."""
        for slot, selection in zip(self.slots, self.selections):
            cand = self.candidates.get(slot.id)
            if cand is None or (cand.ok and slot.id not in self.arrived and slot.id not in self.duplicate_of):
                continue
            yield slot, selection, JudgedProgram(cand, self.arrived.get(slot.id), self.duplicate_of.get(slot.id))

    @property
    def waiting(self) -> int:
        """Evaluations queued or running."""
        return len(self.fresh) - len(self.arrived) if self.launched else 0

    def to_state(self) -> dict:
        """Plain data (msgpack-ready) for a snapshot taken while this generation is open."""
        return {"number": self.number, "slots": [[s.slot, s.proposer] for s in self.slots],
                "selections": [_selection_to_dict(s) for s in self.selections],
                "negative": {k: list(v) for k, v in self.negative.items()}, "models": dict(self.models),
                "launched": self.launched, "candidates": {k: c.to_dict() for k, c in self.candidates.items()},
                "fresh": [c.id for c in self.fresh], "duplicate_of": dict(self.duplicate_of),
                "arrived": {k: e.to_dict() for k, e in self.arrived.items()}}

    @classmethod
    def from_state(cls, d: dict) -> "Generation":
        number = int(d["number"])
        candidates = {k: Candidate.from_dict(c) for k, c in d["candidates"].items()}
        return cls(number, [Slot(number, int(s), str(p)) for s, p in d["slots"]],
                   [_selection_from_dict(s) for s in d["selections"]],
                   {k: tuple(v) for k, v in d["negative"].items()}, dict(d["models"]), bool(d["launched"]),
                   candidates, [candidates[k] for k in d["fresh"]], dict(d["duplicate_of"]),
                   {k: Evaluation.from_dict(e) for k, e in d["arrived"].items()})


def _selection_to_dict(s: Selection) -> dict:
    return {"parent": None if s.parent is None else s.parent.to_dict(),
            "inspirations": [p.to_dict() for p in s.inspirations], "niche": s.niche, "style": s.style,
            "journal": dict(s.journal)}


def _selection_from_dict(d: dict) -> Selection:
    return Selection(None if d["parent"] is None else JudgedProgram.from_dict(d["parent"]),
                     tuple(JudgedProgram.from_dict(p) for p in d["inspirations"]), int(d["niche"]),
                     str(d["style"]), dict(d["journal"]))
