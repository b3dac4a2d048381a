"""Snapshots of older layouts, upgraded on resume: schema 2 (written before generations overlapped,
so no generation is open at them), and those written before the engine/strategy split (no
``schema`` key).

Those snapshots kept the whole search in the database actor's state: the program database
(islands, deduplication hashes, the best program) and every candidate record by id; tree runs
added the tree and each node's record with its verdict dict. The engine now keeps the hashes and
the best program itself and each strategy its own population, so the old state is split:
deduplication hashes and the best program go to the engine, the database and the records to the
islands strategy, the tree and its records to the tree strategy.
"""

from __future__ import annotations

from evaluators.verdict import Verdict
from evolve.engine.engine import STATE_SCHEMA
from search.candidate import Candidate
from search.database import ProgramDatabase
from search.records import Evaluation, JudgedProgram


def upgrade_state(state: dict, strategy: str) -> dict:
    """``state`` in the current layout (returned unchanged when it already is); ValueError when
    it cannot be read."""
    if state.get("schema") == STATE_SCHEMA:
        return state
    if state.get("schema") == 2:   # before overlapping generations: nothing was open at a snapshot
        return {**state, "schema": STATE_SCHEMA, "open": []}
    if "schema" in state or "database" not in state:
        raise ValueError(f"snapshot state schema {state.get('schema')!r} is not one this version reads")
    old = state["database"]
    db = ProgramDatabase.from_state_dict(old["db"])
    live = {}
    for p in db.programs():
        live.setdefault(p.copy_of or p.id, p)
    seen = {h: "" for h in old["db"].get("seen", [])}
    seen.update({p.code_hash: p.copy_of or p.id for p in db.programs()})
    best = db.best()
    new = {"schema": STATE_SCHEMA, "counters": state["counters"], "negative": state["negative"], "seen": seen,
           "best": None if best is None else {"score": list(best.score), "id": best.copy_of or best.id}, "open": []}
    if strategy == "tree":
        nodes = {n["id"]: n for n in state["tree"]["tree"]["nodes"]}
        programs = {pid: JudgedProgram(Candidate.from_dict(rec), Evaluation(
            pid, Verdict.from_dict(rec["verdict"]), tuple(float(x) for x in nodes[pid]["score"]))).to_dict()
            for pid, rec in state["tree"]["programs"].items()}
        new["strategy"] = {"tree": state["tree"]["tree"], "programs": programs}
    elif strategy == "islands":
        programs = {}
        for pid, rec in old["candidates"].items():
            p = live.get(pid)
            evaluation = None if p is None or p.verdict is None else Evaluation(pid, p.verdict, p.score)
            programs[pid] = JudgedProgram(Candidate.from_dict(rec), evaluation).to_dict()
        new["strategy"] = {"db": old["db"], "programs": programs}
    else:
        raise ValueError(f"a snapshot written before strategies were split cannot continue as strategy {strategy!r}")
    return new
