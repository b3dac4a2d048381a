"""Time budgets of exact oracle calls: every call answers or refuses within its budget.

``exact_log_z(model, budget_s=...)`` opens a budget (:func:`deadline`); the methods read what is
left (:func:`remaining`) and refuse early, before the work, when their own prediction of it does
not fit (:func:`affordable`: the tensor network from its path's flops and this machine's executor
rates, brute force from 2^n, the planar cold route from its elimination count), and check
(:func:`check`) between steps of long work (pairwise contractions, slices, eliminations), so even a
prediction that was too low ends within a step of the deadline. A method that refuses hands the
model to the next applicable one (the registry), with whatever is left of the budget.

The budget is process-wide (one oracle call at a time per process: the evaluators, the CLI), read
by the worker threads of a sliced contraction too; so is the call's current stage (:func:`stage`),
which `evolve oracle` prints as progress. Refusals are :class:`OverBudget` (a TooLarge),
one line naming the work, its predicted or spent time and the budget, in seconds.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager

from evaluators.oracles.base import TooLarge

#: one oracle call when the caller names no budget (evolve oracle's --budget default)
DEFAULT_BUDGET_S = 600.0

_state = {"deadline": math.inf, "total": math.inf, "stage": ""}


class OverBudget(TooLarge):
    """A method would exceed (or has exceeded) what is left of the call's time budget."""


@contextmanager
def deadline(seconds: float | None):
    """Within the block, the call's budget is ``seconds`` from now (None: no budget); a nested
    budget never extends an outer one."""
    saved = dict(_state)
    if seconds is not None:
        end = time.monotonic() + max(float(seconds), 0.0)
        if end < _state["deadline"]:
            _state["deadline"], _state["total"] = end, float(seconds)
    try:
        yield
    finally:
        _state.update(saved)


def stage(text: str) -> None:
    """Say what the call is doing now (for a progress line; the registry names the method)."""
    _state["stage"] = text


def current_stage() -> str:
    return _state["stage"]


def remaining() -> float:
    """Seconds left of the current budget (inf without one)."""
    return _state["deadline"] - time.monotonic()


def total() -> float:
    """The current budget in seconds (inf without one)."""
    return _state["total"]


def check(what: str) -> None:
    """OverBudget when the budget has run out, naming ``what`` was being done."""
    if remaining() <= 0.0:
        raise OverBudget(f"{what}: the call's {total():.0f} s budget ran out")


def affordable(predicted_s: float, what: str, lift: str = "") -> None:
    """OverBudget, before any work, when ``what`` is predicted to take longer than what is left."""
    left = remaining()
    if predicted_s > left:
        raise OverBudget(f"{what} would take about {_seconds(predicted_s)}, more than the {left:.0f} s left of the "
                         f"call's {total():.0f} s budget" + (f" ({lift})" if lift else ""))


def _seconds(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 172800:
        return f"{s / 3600:.0f} h"
    return f"{s / 86400:.2g} days"
