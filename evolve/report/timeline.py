"""The run as series over its evaluations: best score so far, accepted so far, largest n verified,
and why each judged program was rejected.

The best program so far follows the engine's rule (:meth:`evolve.engine.engine.Engine._absorb`):
a program becomes the best when its score is higher than the best's and it was judged (status
above "failed"), so the series' last best is the run's promoted best.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluators.verdict import Verdict
from evolve.store.run_view import RunView
from search.database import named_score


@dataclass(frozen=True)
class Point:
    """The run after its ``index``-th evaluation (1-based), ``seconds`` after it was created."""

    index: int
    seconds: float
    id: str                    # the program judged at this evaluation
    status: str                # accepted | rejected | failed
    fitness: float
    largest_n: int
    best_id: str | None        # the best program so far (None while nothing was judged)
    best_fitness: float
    best_text: str             # the best program's named score, one line
    accepted_so_far: int
    best_largest_n: int
    reasons: tuple[str, ...]   # why it was rejected (empty when accepted)


def rejection_reasons(verdict: Verdict) -> tuple[str, ...]:
    """Every check that failed in ``verdict``, as short labels (empty for an accepted one).

    Numerical failures name where they happened: a probe (against brute force at the paper's
    sizes) that gave no value or a wrong one, or a ladder rung (an exact oracle beyond brute force)."""
    if verdict.accepted:
        return ()
    out: list[str] = []
    if verdict.sandbox.violations:
        out.append("sandbox violation")
    num = verdict.numerical
    if not num.passed:
        probe = [r for r in num.rungs if r.stage == "probe" and not r.passed]
        ladder = [r for r in num.rungs if r.stage == "ladder" and not r.passed]
        if not num.rungs:
            out.append("did not run")
        if any(r.rel_err is None for r in probe):
            out.append("probe: no value (error or timeout)")
        if any(r.rel_err is not None for r in probe):
            out.append("probe: wrong value")
        if ladder:
            out.append("ladder: wrong value")
        elif num.rungs and not probe:   # the ladder's failing call returned no value: no rung is kept
            out.append("ladder: no value (error)")
    if verdict.complexity.honest is False:
        out.append("complexity claim dishonest")
    if verdict.class_.consistent is False:
        out.append("class claim inconsistent")
    out += [f"physics: {c.name}" for c in verdict.physics.checks if not c.passed]
    return tuple(dict.fromkeys(out)) or ("rejected, no failed check recorded",)


def timeline(run: RunView) -> list[Point]:
    """One point per evaluation event, in journal order. The best program at each point is the engine's
    own, as it journaled each promotion (a journal without promotions, from hand or a tool, has no best)."""
    points = []
    best_score, best_id = None, None
    accepted = 0
    promotions = iter(run.promotions)
    upcoming = next(promotions, None)
    for j in run.judged:
        ev = j.evaluation
        score = tuple(ev.score)
        named = named_score(score)
        status = named.status if named is not None else ("accepted" if ev.accepted else "rejected")
        accepted += int(ev.accepted)
        while upcoming is not None and upcoming[0] <= j.index:
            _, best_id, best_score = upcoming
            upcoming = next(promotions, None)
        best_named = named_score(best_score) if best_score is not None else None
        points.append(Point(
            index=j.index, seconds=j.seconds, id=ev.id, status=status, fitness=_fitness(score),
            largest_n=int(ev.verdict.numerical.largest_n_verified or 0), best_id=best_id,
            best_fitness=_fitness(best_score) if best_score is not None else 0.0,
            best_text=best_named.text() if best_named is not None else "-", accepted_so_far=accepted,
            best_largest_n=best_named.largest_n_verified if best_named is not None else 0,
            reasons=rejection_reasons(ev.verdict)))
    return points


def _fitness(score) -> float:
    named = named_score(score)
    return named.fitness if named is not None else 0.0   # not a program score (hand-made journals)
