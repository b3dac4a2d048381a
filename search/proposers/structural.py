"""The offline structural proposer behind the proposer protocol (``proposers: {structural: ...}``).

Programs composed from transformation templates chosen by the structure analysis of the task
(:mod:`search.structural`); with a parent, a mutation of the parent's plan. Deterministic in
(run seed, generation, slot); it reads no prompt.
"""

from __future__ import annotations

from dataclasses import dataclass

from search.candidate import Candidate
from search.proposers import ProposerContext, register
from search.records import ProposalRequest
from search.structural import StructuralProposer
from tasks.base import Task


@dataclass(frozen=True)
class StructuralOptions:
    weight: float = 1.0


@register
class Structural:
    name = "structural"
    Options = StructuralOptions

    def __init__(self, task: Task, options: StructuralOptions, context: ProposerContext):
        self.task = task
        self.inner = StructuralProposer(context.seed)

    def propose(self, request: ProposalRequest) -> Candidate:
        parent = request.parent.candidate if request.parent is not None else None
        cand = self.inner.propose(self.task, parent=parent, rng=request.rng())
        cand.id = request.id
        return cand
