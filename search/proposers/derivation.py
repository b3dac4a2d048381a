"""The derivation proposer behind the proposer protocol (``proposers: {derivation: ...}``).

Programs rendered from checked chains of transformations derived from the task's formula alone
(:mod:`search.derivation`); with a parent, the next chain in cost order or a solver option changed.
Deterministic in (run seed, generation, slot, the programs the run already knows); it reads no
prompt. It is in the default mix with the structural proposer (equal weights), so a run that says
nothing about proposers derives the task from its formula.
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
    weight: float = 1.0


@register
class Derivation:
    name = "derivation"
    Options = DerivationOptions
    uses_known = True

    def __init__(self, task: Task, options: DerivationOptions, context: ProposerContext):
        self.task = task
        self.inner = DerivationProposer(context.seed)

    def propose(self, request: ProposalRequest) -> Candidate:
        parent = request.parent.candidate if request.parent is not None else None
        cand = self.inner.propose(self.task, parent=parent, rng=request.rng(), known=request.known)
        cand.id = request.id
        return cand
