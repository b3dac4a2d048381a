"""A run's population as the resume tests compare it: (id, score) of every judged program.

Two runs of one seed judge the same programs with the same values, but a ladder that the clock
stopped (a call out of its time budget, the ladder's total budget, a claimed cost priced from a
measured time) can stop at another size when the machine is busier in one run: the score's
verified size (score[2]) is then left out of the comparison for that program.
"""

from __future__ import annotations

from pathlib import Path

from evolve.store.journal import read_journal

TIMED_FRONTIERS = {"time", "ladder_budget", "claimed_cost"}


def evaluations(path: Path) -> list[dict]:
    return [r for r in read_journal(Path(path) / "journal.msgpack").records if r["kind"] == "evaluation"]


def population(path: Path, other: Path) -> list[tuple]:
    """(id, score) of every program judged in the run at ``path``; score[2] is None for a program
    whose climb the clock stopped in either run."""
    def frontiers(p):
        return {e["id"]: ((e["verdict"].get("numerical") or {}).get("frontier") or {}).get("kind")
                for e in evaluations(p)}
    timed = {i for p in (path, other) for i, kind in frontiers(p).items() if kind in TIMED_FRONTIERS}
    return sorted((e["id"], tuple(None if (k == 2 and e["id"] in timed) else x for k, x in enumerate(e["score"])))
                  for e in evaluations(path))
