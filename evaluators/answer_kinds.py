"""Answers that are not exact programs: their kinds, the functions a candidate defines for them, and the
program the sandbox runs to read them.

Kinds (a candidate's kind is read off the functions it defines, in this order):

- ``bounds``: ``log_Z_bounds(params, n) -> (lo, hi)``, rigorous bounds on the natural log of the task's
  quantity (log Z, or the log of a class probability); ``lo`` may be -inf and ``hi`` +inf (a one-sided
  bound). Judged valid when lo <= exact <= hi at every instance with an exact value, up to rounding
  (:data:`BOUND_SLACK` relative to |log|); scored by the gap (hi - lo) / n per spin.
- ``approximation``: ``log_Z_approx(params, n) -> [(control, value), ...]``: the estimate of the log of the
  quantity at increasing values of a control parameter (bond dimension, sweeps, samples), at most
  :data:`MAX_CONTROLS`, the last the answer. Its evidence of convergence is the change between the last
  two values; it is judged honest when the actual error of the last value, where an exact value exists, is
  at most :data:`HONESTY_FACTOR` times that change (plus rounding); scored by the error per spin.
- ``exact``: everything else (``Z_efficient`` and ``log_Z``, the cascade of evaluators/verify.py).

The sandbox calls only ``Z_efficient`` or ``log_Z`` with a number for a result, so the verifier runs the
candidate's code followed by a small reader (:func:`wrapped_code`): ``log_Z(params, n)`` with the extra
key ``params["_answer_item"] = k`` returns item k of the flattened answer ([lo, hi], or [count, c_0,
v_0, c_1, v_1, ...]) for the params without that key, computing the answer once per (params, n) in a run
(an exception too is raised once and then repeated for the other items).
The candidate's functions never see the key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from evaluators.sandbox import Call
from evaluators.submission import ANSWER_FUNCTIONS, Submission

BOUNDS_FUNCTION, APPROX_FUNCTION = (name for name, _ in ANSWER_FUNCTIONS)
KINDS = ("exact", "bounds", "approximation")
ITEM_KEY = "_answer_item"
MAX_CONTROLS = 8
#: a bound may miss the exact log by this much relative to max(1, |log|): rounding, nothing more
BOUND_SLACK = 1e-9
#: an approximation is honest when |error| <= HONESTY_FACTOR x |last change| + rounding
HONESTY_FACTOR = 10.0

_READER = '''

_answer_memo = [None, None, None, None]


def _answer_flat(result, kind):
    if kind == "bounds":
        lo, hi = result
        return [float(lo), float(hi)]
    pairs = [(float(c), float(v)) for c, v in result]
    if not pairs:
        raise ValueError("log_Z_approx returned no (control, value) pairs")
    flat = [float(len(pairs))]
    for c, v in pairs:
        flat += [c, v]
    return flat


def log_Z(params, n):
    """Item params["{key}"] of the answer of {function}(params without that key, n)."""
    item = int(params["{key}"])
    rest = {{k: v for k, v in params.items() if k != "{key}"}}
    if _answer_memo[0] != n or _answer_memo[1] != rest:
        _answer_memo[0], _answer_memo[1], _answer_memo[2], _answer_memo[3] = n, rest, None, None
        try:
            _answer_memo[2] = _answer_flat({function}(rest, n), "{kind}")
        except Exception as exc:       # raised once, reported for every item without running again
            _answer_memo[3] = exc
    if _answer_memo[3] is not None:
        raise _answer_memo[3]
    flat = _answer_memo[2]
    return flat[item] if item < len(flat) else float("nan")


def Z_efficient(params, n):
    return log_Z(params, n)
'''


def answer_kind(code: str) -> str:
    """"bounds", "approximation" or "exact", from the top-level functions the code defines."""
    return Submission(code).answer_kind


def function_of(kind: str) -> str:
    return {"bounds": BOUNDS_FUNCTION, "approximation": APPROX_FUNCTION}[kind]


def wrapped_code(code: str, kind: str) -> str:
    """The candidate's code with the reader that lets the sandbox call its answer item by item."""
    return code.rstrip() + "\n" + _READER.format(key=ITEM_KEY, function=function_of(kind), kind=kind)


def item_calls(kind: str, params: dict, n: int) -> list[Call]:
    """The calls that read one answer: 2 items for bounds, 1 + 2 MAX_CONTROLS for an approximation."""
    count = 2 if kind == "bounds" else 1 + 2 * MAX_CONTROLS
    return [Call("log_Z", {**params, ITEM_KEY: k}, n) for k in range(count)]


@dataclass(frozen=True)
class Read:
    """One answer read back: bounds (lo, hi) or approximation pairs; ``error`` when it is malformed."""

    lo: float | None = None
    hi: float | None = None
    pairs: tuple[tuple[float, float], ...] = ()
    error: str | None = None
    seconds: float = 0.0


def read_answer(kind: str, results) -> Read:
    """The answer from the results of :func:`item_calls` (CallResult records, in order)."""
    seconds = sum(r.seconds for r in results)
    if not results:
        return Read(error="the answer was not returned", seconds=seconds)
    first = results[0]
    if not first.ok:
        return Read(error=f"{function_of(kind)} raised {first.error}", seconds=seconds)
    values = [r.value if r.ok else math.nan for r in results]
    if kind == "bounds":
        if len(values) < 2:
            return Read(error="the answer was cut short", seconds=seconds)
        lo, hi = values[0], values[1]
        if math.isnan(lo) or math.isnan(hi):
            return Read(error="a bound is NaN", seconds=seconds)
        if lo == math.inf or hi == -math.inf:
            return Read(error=f"the bounds ({lo}, {hi}) bound nothing", seconds=seconds)
        if lo > hi + BOUND_SLACK * max(1.0, abs(hi) if math.isfinite(hi) else 1.0):
            return Read(lo=lo, hi=hi, error=f"lo = {lo:.10g} exceeds hi = {hi:.10g}", seconds=seconds)
        return Read(lo=lo, hi=hi, seconds=seconds)
    count = values[0]
    if not math.isfinite(count) or count < 1 or count != int(count):
        return Read(error="log_Z_approx must return a non-empty list of (control, value) pairs", seconds=seconds)
    if count > MAX_CONTROLS:
        return Read(error=f"log_Z_approx returned {int(count)} pairs; at most {MAX_CONTROLS} are read", seconds=seconds)
    if len(values) < 1 + 2 * int(count):
        return Read(error="the answer was cut short", seconds=seconds)
    pairs = tuple((values[1 + 2 * k], values[2 + 2 * k]) for k in range(int(count)))
    controls = [c for c, _ in pairs]
    if any(not math.isfinite(c) for c in controls) or any(b <= a for a, b in zip(controls, controls[1:])):
        return Read(pairs=pairs, error=f"the controls {controls} are not finite and strictly increasing",
                    seconds=seconds)
    return Read(pairs=pairs, seconds=seconds)
