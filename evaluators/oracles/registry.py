"""Choosing an exact method for a model: ``oracle_for`` picks the cheapest that applies;
``exact_log_z`` runs it (or the one forced by name) and times it.

The methods are plugins (:mod:`evaluators.oracles.methods`: one module each, ``applies(model) ->
reason | None`` and ``log_z(model) -> float``), tried in their declared order of preference: closed
forms first, then brute force while it is instant, then the polynomial methods, then the exponential
ones while they still fit in memory.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

import numpy as np

from evaluators.oracles.base import NotApplicable, OracleResult, OutOfRange, TooLarge
from evaluators.oracles.budget import OverBudget, check, deadline, stage, total
from evaluators.oracles.methods import METHODS

if TYPE_CHECKING:   # annotations only: importing the model (networkx) is left to the callers that build one
    from tasks.model import IsingModel


def preference(model: IsingModel) -> list[str]:
    """Every method's name in the order it is tried on ``model``: by ORDER, a method's EARLY_ORDER
    instead on models of at most its EARLY_UP_TO_N spins."""
    def rank(name: str):
        m = METHODS[name]
        return (m.EARLY_ORDER if m.EARLY_ORDER is not None and model.n <= m.EARLY_UP_TO_N else m.ORDER, name)
    return sorted(METHODS, key=rank)


def applicable_methods(model: IsingModel) -> dict[str, str | None]:
    """Every method's verdict on this model: None when it applies, else the reason it does not."""
    return {name: m.applies(model) for name, m in METHODS.items()}


def candidate_methods(model: IsingModel, reasons: dict[str, str] | None = None):
    """Applicable methods in order of preference, lazily: a costly applicability test (planarity
    of a huge graph, say) runs only when every cheaper method has been ruled out. The reasons
    the skipped methods do not apply are collected into ``reasons``."""
    reasons = {} if reasons is None else reasons
    for name in preference(model):
        why = METHODS[name].applies(model)
        if why is None:
            yield name
        else:
            reasons[name] = why


def oracle_for(model: IsingModel) -> str:
    """Name of the cheapest exact method that applies to this model; TooLarge if none does."""
    reasons: dict[str, str] = {}
    for name in candidate_methods(model, reasons):
        return name
    raise TooLarge(_none_left(model, reasons))


def exact_log_z(model: IsingModel, method: str | None = None, budget_s: float | None = None) -> OracleResult:
    """Exact natural log Z with the named method, or the cheapest applicable one.

    Every result is checked finite before it is returned. Unforced, a method that turns out too
    large once it starts (a contraction path wider than memory allows, say), too slow for what is
    left of the time budget (``budget_s`` seconds for the whole call, :mod:`evaluators.oracles.budget`;
    None: no budget) or that cannot represent the case (a non-finite result, an overflow:
    ``OutOfRange``) hands over to the next applicable one; forced, it raises, and the message names
    the method and its limit.
    """
    with deadline(budget_s):
        if method is not None:
            if method not in METHODS:
                raise KeyError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
            why = METHODS[method].applies(model)
            if why is not None:
                raise NotApplicable(f"method {method} does not apply: {why}")
            stage(f"method {method}")
            return _timed(method, model)
        reasons: dict[str, str] = {}
        tried: list[str] = []
        over_budget = False
        for name in candidate_methods(model, reasons):
            tried.append(name)
            try:
                check("not started")
                stage(f"method {name}")
                return _timed(name, model)
            except TooLarge as exc:
                reasons[name] = str(exc)
                over_budget |= isinstance(exc, OverBudget)
        # OverBudget when time was the limit somewhere (another budget, or machine, may answer)
        raise (OverBudget if over_budget else TooLarge)(_none_left(model, reasons, tried))


def _timed(method: str, model: IsingModel) -> OracleResult:
    start = time.perf_counter()
    try:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):   # a non-finite value is refused below, by name
            value = METHODS[method].log_z(model)
    except (FloatingPointError, OverflowError, ZeroDivisionError) as exc:
        raise OutOfRange(f"method {method} failed at beta = {model.beta:g} ({type(exc).__name__}: {exc})") from None
    return OracleResult(log_z=checked_finite(value, method, f"at beta = {model.beta:g}"), method=method,
                        seconds=time.perf_counter() - start)


def checked_finite(value: float, method: str, where: str = "") -> float:
    """``value`` if it is a finite float, else OutOfRange naming the method and where (the temperature)."""
    value = float(value)
    if not math.isfinite(value):
        raise OutOfRange(f"method {method} gave {value} {where}: this case is beyond its numerical range".replace("  ", " "))
    return value


def _none_left(model: IsingModel, reasons: dict[str, str], tried: list[str] = ()) -> str:
    """One line: the methods that applied but refused first (why each), then the ones that do not apply."""
    order = [k for k in tried if k in reasons] + [k for k in reasons if k not in tried]
    detail = "; ".join(f"{k}: {reasons[k]}" for k in order)
    budget = f" within the {total():.0f} s budget" if total() < float("inf") else ""
    return f"no exact method answered for this model (n={model.n}){budget}: {detail}"
