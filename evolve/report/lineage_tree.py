"""Which programs the report inlines: the best ones and their ancestors, within a budget.

A run of 10,000 programs cannot put every program in one page that opens in seconds, so the report
keeps the ``top`` best judged programs (ranked like ``evolve show``: score, then earlier) and walks
their ancestry by first parent, nearest ancestors first, until ``max_nodes`` programs are kept;
``evolve lineage --program ID`` shows any ancestry in full. Nodes are laid out as a tree: x is
the generation, leaves take consecutive rows and a parent sits at the mean row of its children.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from evolve.store.run_view import RunView
from evolve.report.figures.verdicts import outcome
from evolve.store.run_view import score_key
from search.database import named_score

TOP = 12
MAX_NODES = 300


@dataclass(frozen=True)
class LineageNode:
    id: str
    parent: str | None       # first parent when it is shown too, else None
    rank: int | None         # 1 = the best program; None for an ancestor outside the top
    generation: int
    outcome: str             # accepted | rejected | failed | no code | duplicate | not judged
    fitness: float
    x: float
    y: float


@dataclass(frozen=True)
class LineageTree:
    nodes: list[LineageNode]         # in layout order
    cut: int                         # ancestors left out by the budget


def panel_id(program_id: str) -> str:
    """The HTML id of a program's panel: ``prog-<id>`` when the id is safe in HTML and URLs."""
    if re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", program_id):
        return f"prog-{program_id}"
    return "prog-x" + hashlib.sha256(program_id.encode()).hexdigest()[:16]


def ranked_ids(run: RunView) -> list[str]:
    """Judged program ids, best first (score, then earlier evaluation)."""
    order = {}
    for j in run.judged:
        order.setdefault(j.evaluation.id, j.index)
    judged = [r for r in run.proposed if r.evaluation is not None]
    return [r.id for r in sorted(judged, key=lambda r: (tuple(-x for x in score_key(r.evaluation.score)),
                                                         order.get(r.id, 0)))]


def lineage_tree(run: RunView, top: int = TOP, max_nodes: int = MAX_NODES) -> LineageTree:
    best = ranked_ids(run)[:top]
    rank = {pid: i + 1 for i, pid in enumerate(best)}
    keep: list[str] = list(best)
    kept = set(keep)
    frontier = list(best)
    while frontier and len(keep) < max_nodes:
        nxt = []
        for pid in frontier:
            parent = run.programs[pid].parent
            if parent in run.programs and parent not in kept and len(keep) < max_nodes:
                keep.append(parent)
                kept.add(parent)
                nxt.append(parent)
        frontier = nxt
    cut = len(_ancestors(run, best) - kept)
    children: dict[str | None, list[str]] = {}
    for pid in keep:
        parent = run.programs[pid].parent
        children.setdefault(parent if parent in kept else None, []).append(pid)
    for ids in children.values():
        ids.sort(key=lambda p: run.programs[p].proposal_index)
    rows = _rows(children, keep)
    nodes = []
    for pid in sorted(keep, key=lambda p: rows[p]):
        rec = run.programs[pid]
        parent = rec.parent if rec.parent in kept else None
        named = named_score(rec.evaluation.score) if rec.evaluation is not None else None
        nodes.append(LineageNode(pid, parent, rank.get(pid), rec.generation, outcome(rec),
                                 named.fitness if named is not None else 0.0, float(rec.generation), rows[pid]))
    return LineageTree(nodes, cut)


def _ancestors(run: RunView, ids: list[str]) -> set[str]:
    out: set[str] = set()
    for pid in ids:
        cur = run.programs[pid].parent
        while cur in run.programs and cur not in out:
            out.add(cur)
            cur = run.programs[cur].parent
    return out


def _rows(children: dict[str | None, list[str]], ids: list[str]) -> dict[str, float]:
    """Row of every node: leaves 0, 1, 2, ... in depth-first order, parents at their children's mean
    (iterative: ancestries can be thousands deep)."""
    rows: dict[str, float] = {}
    next_row = 0
    stack = [(pid, False) for pid in reversed(children.get(None, []))]
    while stack:
        pid, done = stack.pop()
        kids = children.get(pid, [])
        if not kids:
            rows[pid] = float(next_row)
            next_row += 1
        elif done:
            rows[pid] = sum(rows[k] for k in kids) / len(kids)
        else:
            stack.append((pid, True))
            stack.extend((k, False) for k in reversed(kids))
    for pid in ids:            # unreachable from a root only if parent links were circular: one row each
        if pid not in rows:
            rows[pid] = float(next_row)
            next_row += 1
    return rows
