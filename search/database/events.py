"""What the database reports back: the result of an add, a sample, migration and reset events.

Plain records with ``to_dict()`` for the run journal (a :class:`Sample` travels as its ids).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from search.database.program import Program


@dataclass(frozen=True)
class AddResult:
    program_id: str
    island: int
    accepted_into_cell: bool
    new_island_best: bool
    new_global_best: bool
    replaced_id: str | None = None
    evicted_id: str | None = None
    cell: str = ""
    reason: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Sample:
    island: int
    parent: Program
    inspirations: list = field(default_factory=list)

    def ids(self) -> dict:
        return {"island": self.island, "parent": self.parent.id, "inspirations": [p.id for p in self.inspirations]}


@dataclass(frozen=True)
class MigrationEvent:
    source: int
    dest: int
    program_id: str
    copy_id: str
    placed: bool
    replaced_id: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ResetEvent:
    island: int
    reason: str  # "stagnant" | "weaker"
    founder_island: int
    founder_id: str
    copy_id: str
    removed_ids: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)
