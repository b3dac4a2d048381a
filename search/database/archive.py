"""One island's MAP-Elites archive: a grid of cells, each holding its elite, with a cap on
functionally identical programs.

Rules of :meth:`Archive.add`, in order:

1. A failed program (status 0: no verdict, no code, sandbox violations) never enters a cell.
2. A program whose normalised code hash is already in the archive is a duplicate (a migrated
   copy that came back, a resubmission) and is refused.
3. In an occupied cell the newcomer must have a strictly better score than the elite; at equal
   score the incumbent stays (the score already prefers shorter code at equal merit).
4. Cluster cap: when ``max_per_cluster`` programs with the newcomer's behaviour signature are
   already stored (in other cells), the newcomer must beat the worst of them, which is then
   evicted and its cell left empty. Functionally identical programs never crowd the grid.

Only live programs are kept; the run journal has the rest. Iteration orders are canonical
(best first by score, then arrival), never dict order, so two archives with the same content
behave the same however they were built.
"""

from __future__ import annotations

from dataclasses import dataclass

from search.database.features import FeatureSpace
from search.database.program import Program


@dataclass(frozen=True)
class Placement:
    placed: bool
    cell: str
    reason: str  # "new cell", "better than the elite", "failed", "duplicate", "not better than the elite", "cluster full"
    replaced_id: str | None = None  # the cell's previous elite
    evicted_id: str | None = None   # the worst member of the newcomer's full cluster


class Archive:
    def __init__(self, space: FeatureSpace, max_per_cluster: int = 2):
        self.space = space
        self.max_per_cluster = max(0, int(max_per_cluster))  # 0: no cap
        self.cells: dict[str, str] = {}  # cell key -> elite id
        self.members: dict[str, Program] = {}  # id -> program

    def __len__(self) -> int:
        return len(self.members)

    def __contains__(self, program_id: str) -> bool:
        return program_id in self.members

    def cell_of(self, program: Program) -> str:
        return self.space.cell_of(program.descriptors)

    def elite(self, cell: str) -> Program | None:
        pid = self.cells.get(cell)
        return self.members.get(pid) if pid is not None else None

    def has_code(self, code_hash: str) -> bool:
        return any(p.code_hash == code_hash for p in self.members.values())

    def ranked(self) -> list[Program]:
        """Live programs, best first (score, then earlier arrival)."""
        return sorted(self.members.values(), key=Program.rank_key)

    def best(self) -> Program | None:
        return min(self.members.values(), key=Program.rank_key, default=None)

    def clusters(self) -> dict[str, list[Program]]:
        """signature -> its programs (best first), signatures in sorted order."""
        out: dict[str, list[Program]] = {}
        for p in self.ranked():
            out.setdefault(p.signature, []).append(p)
        return {k: out[k] for k in sorted(out)}

    def add(self, program: Program) -> Placement:
        cell = self.cell_of(program)
        if program.failed:
            return Placement(False, cell, "failed")
        if program.id in self.members or self.has_code(program.code_hash):
            return Placement(False, cell, "duplicate")
        incumbent = self.elite(cell)
        if incumbent is not None and not program.score > incumbent.score:
            return Placement(False, cell, "not better than the elite")
        evicted = None
        if self.max_per_cluster:
            mates = [p for p in self.members.values() if p.signature == program.signature and p is not incumbent]
            if len(mates) >= self.max_per_cluster:
                worst = max(mates, key=Program.rank_key)
                if not program.score > worst.score:
                    return Placement(False, cell, "cluster full")
                evicted = self.remove(worst.id)
        if incumbent is not None:
            self.remove(incumbent.id)
        self.cells[cell] = program.id
        self.members[program.id] = program
        return Placement(True, cell, "better than the elite" if incumbent else "new cell",
                         incumbent.id if incumbent else None, evicted.id if evicted else None)

    def remove(self, program_id: str) -> Program | None:
        program = self.members.pop(program_id, None)
        if program is not None:
            cell = self.cell_of(program)
            if self.cells.get(cell) == program_id:
                del self.cells[cell]
        return program

    def clear(self) -> list[str]:
        """Empty the archive; the ids removed, in arrival order."""
        ids = [p.id for p in sorted(self.members.values(), key=lambda p: p.seq)]
        self.cells.clear()
        self.members.clear()
        return ids

    def to_list(self) -> list[dict]:
        """The live programs as dicts, in arrival order (cells are derived from them)."""
        return [p.to_dict() for p in sorted(self.members.values(), key=lambda p: p.seq)]

    def restore(self, programs: list[dict]) -> None:
        """Put back what :meth:`to_list` saved (no placement rules: they held when it was saved)."""
        self.clear()
        for d in programs:
            p = Program.from_dict(d)
            self.members[p.id] = p
            self.cells[self.cell_of(p)] = p.id
