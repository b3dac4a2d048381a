"""Choosing an exact method for a model: ``oracle_for`` picks the cheapest that applies;
``exact_log_z`` runs it (or the one forced by name) and times it.

Each method is a pair of functions in its own module: ``applies(model) -> reason | None`` and
``log_z(model) -> float``. Their order below is the order of preference: closed forms first,
then brute force while it is instant, then the polynomial methods, then the exponential ones
while they still fit in memory.
"""

from __future__ import annotations

import importlib
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from evaluators.oracles.base import NotApplicable, OracleResult, OutOfRange, TooLarge
from evaluators.oracles.budget import OverBudget, check, deadline, stage, total

if TYPE_CHECKING:   # annotations only: importing the model (networkx) is left to the callers that build one
    from tasks.model import IsingModel

BRUTE_INSTANT_N = 20  # brute force is milliseconds up to here and the most trustworthy method


@dataclass(frozen=True)
class Method:
    name: str
    module: str
    applies_fn: str
    log_z_fn: str
    summary: str

    def _fn(self, attr: str) -> Callable:
        return getattr(importlib.import_module(f"evaluators.oracles.{self.module}"), attr)

    def applies(self, model: IsingModel) -> str | None:
        return self._fn(self.applies_fn)(model)

    def log_z(self, model: IsingModel) -> float:
        return float(self._fn(self.log_z_fn)(model))


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("mattis", "closed_forms", "mattis_applies", "mattis_log_z", "rank-one (Mattis / Curie-Weiss) sum over magnetisation, O(n)"),
        Method("chain", "closed_forms", "chain_applies", "chain_log_z", "open or periodic chain, 2x2 transfer matrices, O(n)"),
        Method("forest", "closed_forms", "forest_applies", "forest_log_z", "acyclic zero-field graph, Z = 2^n prod cosh(beta J), O(n)"),
        Method("kaufman", "kaufman", "kaufman_applies", "kaufman_log_z", "homogeneous torus, Kaufman's exact finite-size solution, O(L)"),
        Method("brute", "brute", "brute_applies", "brute_log_z", "Gray-code enumeration, O(2^n)"),
        Method("planar", "planar", "planar_applies", "planar_log_z", "zero-field planar graphs, dual Kasteleyn Pfaffian, multifrontal skew elimination (double-double at low T)"),
        Method("torus_pfaffian", "torus_pfaffian", "torus_pfaffian_applies", "torus_pfaffian_log_z", "zero-field nearest-neighbour torus with any couplings: dual domain walls, four Kasteleyn Pfaffians (periodic/antiperiodic sectors): dense O(n^3) to n = 100, then sparse nested dissection with signs in double-double, O(n^1.5)"),
        Method("elimination", "elimination", "elimination_applies", "elimination_log_z", "variable elimination in log space along a min-fill / min-degree order, O(n 2^width)"),
        Method("transfer_matrix", "transfer_matrix", "transfer_matrix_applies", "transfer_matrix_log_z", "site-by-site transfer matrix, O(n 2^width)"),
        Method("tensor_network", "tensor_network", "tensor_network_applies", "tensor_network_log_z", "tensor-network contraction (cotengra), O(n 2^width)"),
    )
}

# Preference order when nothing is forced; brute force is tried early only for small n.
_ORDER = ("mattis", "chain", "forest", "kaufman", "brute_small", "planar", "torus_pfaffian", "elimination", "transfer_matrix",
          "tensor_network", "brute")


def applicable_methods(model: IsingModel) -> dict[str, str | None]:
    """Every method's verdict on this model: None when it applies, else the reason it does not."""
    return {name: m.applies(model) for name, m in METHODS.items()}


def candidate_methods(model: IsingModel, reasons: dict[str, str] | None = None):
    """Applicable methods in order of preference, lazily: a costly applicability test (planarity
    of a huge graph, say) runs only when every cheaper method has been ruled out. The reasons
    the skipped methods do not apply are collected into ``reasons``."""
    reasons = {} if reasons is None else reasons
    tried: set[str] = set()
    for name in _ORDER:
        if name == "brute_small":
            if model.n <= BRUTE_INSTANT_N and METHODS["brute"].applies(model) is None:
                tried.add("brute")
                yield "brute"
            continue
        if name in tried:
            continue
        tried.add(name)
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
