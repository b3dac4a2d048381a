"""The tuning objective of one run, from its evaluations as the run's read model has them
(:func:`evolve.store.run_view.read_run`).

``evaluations_to_first_accept`` (minimised): the position of the first accepted program among the
run's evaluations ordered by program id (generation, then slot, so arrival order within a
generation does not matter); a run without one scores ``budgets.evaluations + 1``.
``best_score`` (maximised): the best :func:`search.database.fitness` among the judged programs.
"""

from __future__ import annotations

from search.database import fitness
from search.records import Evaluation

DIRECTIONS = {"evaluations_to_first_accept": "minimize", "best_score": "maximize"}


def objective_value(evaluations: list[Evaluation], objective: str, evaluation_budget: int) -> float:
    """The tuning objective of one run from its evaluation events in journal order (see the module docstring)."""
    evals = sorted(evaluations, key=lambda e: e.id)
    if objective == "evaluations_to_first_accept":
        for i, ev in enumerate(evals):
            if ev.accepted:
                return float(i + 1)
        return float(evaluation_budget + 1)
    if objective == "best_score":
        return max((fitness(ev.score) for ev in evals), default=0.0)
    raise ValueError(f"unknown objective {objective!r}")
