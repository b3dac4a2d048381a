"""The tuning objective of one run, read from its journal.

``evaluations_to_first_accept`` (minimised): the position of the first accepted program among the
run's evaluations ordered by program id (generation, then slot, so arrival order within a
generation does not matter); a run without one scores ``budgets.evaluations + 1``.
``best_score`` (maximised): the best :func:`search.database.fitness` among the judged programs.
"""

from __future__ import annotations

from evolve.store.events import EvaluationEvent, decode
from search.database import fitness

DIRECTIONS = {"evaluations_to_first_accept": "minimize", "best_score": "maximize"}


def objective_value(records: list[dict], objective: str, evaluation_budget: int) -> float:
    """The tuning objective of one run from its journal records (see the module docstring)."""
    evals = sorted((e.evaluation for e in map(decode, records) if isinstance(e, EvaluationEvent)), key=lambda e: e.id)
    if objective == "evaluations_to_first_accept":
        for i, ev in enumerate(evals):
            if ev.accepted:
                return float(i + 1)
        return float(evaluation_budget + 1)
    if objective == "best_score":
        return max((fitness(ev.score) for ev in evals), default=0.0)
    raise ValueError(f"unknown objective {objective!r}")
