"""A run's population as the resume tests compare it: (id, score) of every judged program.

Two runs of one seed judge the same programs with the same values, but a ladder that the clock
stopped (a call out of its time budget, the ladder's total budget, a claimed cost priced from a
measured time) can stop at another size when the machine is busier in one run: the score's
verified size (score[2]) is then left out of the comparison for that program. When the two runs'
verified sizes for a program differ, the strategy saw different scores from that generation on,
so the later generations may rightly hold other programs: they are left out too (measured: P01
under load 5-6, a 100000-spin call killed at its 20 s budget in one run only; the tree then
expanded another parent).
"""

from __future__ import annotations

from pathlib import Path

from evolve.store.journal import read_journal

TIMED_FRONTIERS = {"time", "ladder_budget", "claimed_cost"}


def evaluations(path: Path) -> list[dict]:
    return [r for r in read_journal(Path(path) / "journal.msgpack").records if r["kind"] == "evaluation"]


def generation(program_id: str) -> int:
    """The generation of a program id such as g0001s02."""
    return int(program_id[1:5])


def last_comparable_generation(path: Path, other: Path) -> float:
    """The last generation both runs chose from the same scores: the first generation in which a
    program's verified size differs between them (the clock's doing), or inf when none does."""
    verified = [{e["id"]: e["score"][2] for e in evaluations(p)} for p in (path, other)]
    differ = [generation(i) for i, v in verified[0].items() if i in verified[1] and verified[1][i] != v]
    return min(differ, default=float("inf"))


def population(path: Path, other: Path) -> list[tuple]:
    """(id, score) of every program judged in the run at ``path`` up to the last comparable
    generation; score[2] is None for a program whose climb the clock stopped in either run."""
    def frontiers(p):
        return {e["id"]: ((e["verdict"].get("numerical") or {}).get("frontier") or {}).get("kind")
                for e in evaluations(p)}
    timed = {i for p in (path, other) for i, kind in frontiers(p).items() if kind in TIMED_FRONTIERS}
    last = last_comparable_generation(path, other)
    return sorted((e["id"], tuple(None if (k == 2 and e["id"] in timed) else x for k, x in enumerate(e["score"])))
                  for e in evaluations(path) if generation(e["id"]) <= last)
