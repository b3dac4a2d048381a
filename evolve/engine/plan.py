"""Deterministic planning of one generation, and the replay of a journal into that plan.

Every random choice of a generation (which proposer writes a slot) is drawn from a generator
seeded by (run seed, generation, slot), never from shared state, so a run resumed from its
journal makes exactly the choices the uninterrupted run made.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from evolve.store.events import DuplicateEvent, EvaluationEvent, ProposalEvent, decode


@dataclass(frozen=True)
class Slot:
    generation: int
    slot: int
    proposer: str        # the registered proposer that writes it

    @property
    def id(self) -> str:
        """Program id: generation and slot, so ids are the same in a resumed run."""
        return f"g{self.generation:04d}s{self.slot:02d}"


def plan_generation(generation: int, batch_size: int, weights: dict[str, float], seed: int,
                    remaining_proposals: int) -> list[Slot]:
    """Slots of one generation, each with a proposer drawn by the mixing ``weights`` (in config order)."""
    names = [k for k, w in weights.items() if w > 0]
    p = np.array([weights[k] for k in names], dtype=float)
    p /= p.sum()
    slots = []
    for s in range(min(batch_size, remaining_proposals)):
        rng = np.random.default_rng([seed, generation, s, 99])
        slots.append(Slot(generation, s, names[int(rng.choice(len(names), p=p))]))
    return slots


@dataclass
class Replay:
    """What the journal already holds for generations after the latest snapshot."""

    proposals: dict[str, ProposalEvent] = field(default_factory=dict)      # program id -> proposal
    evaluations: dict[str, EvaluationEvent] = field(default_factory=dict)  # program id -> evaluation
    duplicates: set[str] = field(default_factory=set)
    system_prompts: set[str] = field(default_factory=set)   # digests journaled anywhere in the run

    @classmethod
    def from_records(cls, records: list[dict], after_seq: int) -> "Replay":
        r = cls()
        for rec in records:
            if rec.get("kind") == "system_prompt":
                r.system_prompts.add(str(rec.get("digest")))
            if rec.get("seq", 0) <= after_seq:
                continue
            event = decode(rec)
            if isinstance(event, ProposalEvent):
                r.proposals[event.candidate.id] = event
            elif isinstance(event, EvaluationEvent):
                r.evaluations[event.evaluation.id] = event
            elif isinstance(event, DuplicateEvent):
                r.duplicates.add(event.id)
        return r
