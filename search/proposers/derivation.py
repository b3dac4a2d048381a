"""The derivation proposer behind the proposer protocol (``proposers: {derivation: ...}``).

Programs rendered from checked chains of transformations derived from the task's formula alone
(:mod:`search.derivation`); with a parent, the next chain in cost order or a solver option changed.
Deterministic in (run seed, generation, slot); it reads no prompt.
"""

from __future__ import annotations

from dataclasses import dataclass

from search.candidate import Candidate
from search.derivation.proposer import DerivationProposer
from search.proposers import ProposerContext, register
from search.records import ProposalRequest
from tasks.base import Task


@dataclass(frozen=True)
class DerivationOptions:
    weight: float = 0.0


@register
class Derivation:
    name = "derivation"
    Options = DerivationOptions

    def __init__(self, task: Task, options: DerivationOptions, context: ProposerContext):
        self.task = task
        self.inner = DerivationProposer(context.seed)

    def propose(self, request: ProposalRequest) -> Candidate:
        parent = request.parent.candidate if request.parent is not None else None
        cand = self.inner.propose(self.task, parent=parent, rng=request.rng())
        cand.id = request.id
        return cand
