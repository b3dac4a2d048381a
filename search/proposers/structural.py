"""The offline structural proposer behind the proposer protocol (``proposers: {structural: ...}``).

Programs composed from transformation templates chosen by the structure analysis of the task
(:mod:`search.structural`); with a parent, a mutation of the parent's plan. Deterministic in
(run seed, generation, slot, the programs the run already knows); it reads no prompt. Its space
of plans is small (a few dozen on P01 and P04), so it asks for the run's known programs
(``uses_known``) and writes one not yet judged while there is one near the parent.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

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
    uses_known = True

    def __init__(self, task: Task, options: StructuralOptions, context: ProposerContext):
        self.task = task
        self.inner = StructuralProposer(context.seed)
        try:   # the structure analysis (about a second) while the evaluators start, not in the first proposal
            self.inner.plans_for(task)
        except Exception:  # noqa: BLE001 - propose meets the same error and returns it as a failed candidate
            pass

    def propose(self, request: ProposalRequest) -> Candidate:
        parent = request.parent.candidate if request.parent is not None else None
        # the slots of a generation that mutate one parent share a generator, so they write distinct programs
        siblings = None if parent is None else np.random.default_rng(
            [request.seed, request.generation, zlib.crc32(parent.id.encode())])
        cand = self.inner.propose(self.task, parent=parent, rng=request.rng(), known=request.known,
                                  rank=request.slot, siblings=siblings)
        cand.id = request.id
        return cand
