"""Deterministic planning of one generation, and the replay of a journal into that plan.

Every random choice of a generation (island, proposer, model) is drawn from a generator seeded
by (run seed, generation, slot), never from shared state, so a run resumed from its journal
makes exactly the choices the uninterrupted run made.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Slot:
    generation: int
    slot: int
    island: int
    kind: str            # "structural" | "llm"

    @property
    def id(self) -> str:
        """Program id: generation and slot, so ids are the same in a resumed run."""
        return f"g{self.generation:04d}s{self.slot:02d}"

    def rng(self, seed: int, stream: int = 0) -> np.random.Generator:
        return np.random.default_rng([seed, self.generation, self.slot, stream])


def plan_generation(generation: int, batch_size: int, islands: int, weights: dict[str, float], seed: int,
                    remaining_proposals: int) -> list[Slot]:
    """Slots of one generation: islands in rotation, proposer kind drawn by the mixing weights."""
    kinds = [k for k, w in weights.items() if w > 0]
    p = np.array([weights[k] for k in kinds], dtype=float)
    p /= p.sum()
    slots = []
    for s in range(min(batch_size, remaining_proposals)):
        island = (generation * batch_size + s) % islands
        rng = np.random.default_rng([seed, generation, s, 99])
        slots.append(Slot(generation, s, island, kinds[int(rng.choice(len(kinds), p=p))]))
    return slots


@dataclass
class Replay:
    """What the journal already holds for generations after the latest snapshot."""

    proposals: dict[str, dict] = field(default_factory=dict)     # program id -> proposal record
    evaluations: dict[str, dict] = field(default_factory=dict)   # program id -> evaluation record
    duplicates: set[str] = field(default_factory=set)

    @classmethod
    def from_records(cls, records: list[dict], after_seq: int) -> "Replay":
        r = cls()
        for rec in records:
            if rec.get("seq", 0) <= after_seq:
                continue
            kind = rec.get("kind")
            if kind == "proposal":
                r.proposals[rec["candidate"]["id"]] = rec
            elif kind == "evaluation":
                r.evaluations[rec["id"]] = rec
            elif kind == "duplicate":
                r.duplicates.add(rec["id"])
        return r
