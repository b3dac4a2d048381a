"""The promotion ladder: after the paper's probe sizes, climb the task's larger sizes, each
judged against an exact oracle, each call under its own time and memory budget.

Every rung draws its parameters from the whole physical range: the task's own sampler
("typical"), the same instance at low temperature ("cold": one draw of beta * |J| log-uniform in
each stratum of ``tasks.base.COLD_STRATA``, 6 .. 12, 12 .. 120, 120 .. 3000: exact means exact
at every beta, float64 shortcuts fail from about 6 on, fixed precision loses the low-temperature
sum from about 12, the Boltzmann weights leave float64 beyond about 350, and a program may switch
routes anywhere in between) and, where the task has one, at its critical point ("critical"). Each draw is one
``Rung`` record; a cold draw that no exact oracle certifies at that size is skipped with a note.

A wrong value or an unexpected exception on any draw is a numerical failure naming the size and
the draw. Running out of the call's time or memory ends the climb at the candidate's scaling
frontier: not a numerical failure, but evidence about its cost that the complexity audit holds
against a polynomial claim (``Frontier`` kind "time" / "memory"). A ``Z_efficient`` whose Z
overflows a float ends the climb too ("overflow": define log_Z), without counting against it;
so does a size no oracle reaches, the ladder's own total budget or its size cap (``max_n``, a
run's quick setting: "ladder_cap"). A candidate that claims
exponential cost is not run at a size its own claim prices far over the call's budget
(``checks.claimed_cost``: "claimed_cost", no evidence against it either way).
"""

from __future__ import annotations

import math
import time
import zlib
from dataclasses import dataclass, field

import numpy as np

from evaluators.checks.claimed_cost import claimed_price
from evaluators.comparison import passes, relative_error
from evaluators.oracle_cache import REFERENCE_BUDGET_S, lookup
from evaluators.oracles.base import NotApplicable
from evaluators.profile import Profile, timed
from evaluators.sandbox import Call, Limits, Sandbox
from evaluators.verdict import Frontier, Rung
from tasks.base import Task
from tasks.family import side_is_sqrt_n
from tasks.memory import memory_refusal

_COLD_STREAM = 0xC01D  # the cold draws' own random stream (the typical ones use the task's)


@dataclass(frozen=True)
class LadderBudget:
    rung_timeout_s: float = 20.0    # wall clock per call (one draw at one size)
    memory_mb: int = 2048           # address space per call
    total_s: float = 90.0           # the whole climb stops starting new calls after this
    samples: int = 1                # typical parameter draws per rung (cold and critical come on top)
    max_n: int | None = None        # climb no size above this (None: the task's whole ladder)


@dataclass(frozen=True)
class Draw:
    kind: str       # "typical" | "cold" | "critical"
    params: dict
    note: str = ""  # "cold: beta = 7.3, beta*|J| = 7.3"

    def where(self) -> str:
        return self.note if self.note else "a typical draw"


@dataclass
class LadderOutcome:
    rungs: list[Rung]
    failure: str | None = None      # set when a draw was wrong or raised: feedback text, names size and draw
    stopped: str | None = None      # why the climb ended early without failing
    largest_n_verified: int = 0
    frontier: Frontier | None = None
    notes: list[str] = field(default_factory=list)   # draws skipped (no oracle for a cold draw, say)


def ladder_draws(task: Task, n: int, seed: int, samples: int = 1) -> list[Draw]:
    """The parameter draws of rung n: ``samples`` typical ones, then cold and critical ones where
    the task defines them (``Task.cold_draws``, ``Task.critical_params``). The same for every
    candidate of a run, so an evaluator process draws them once (at n = 100000 on P01, 0.1 s per
    draw); callers must not modify the returned params."""
    key = (id(task), int(n), int(seed), int(samples))
    hit = _DRAWS.get(key)
    if hit is not None and hit[0] is task:   # the task itself is held, so its id is not reused
        return list(hit[1])
    draws = _make_draws(task, n, seed, samples)
    if len(_DRAWS) >= _DRAWS_KEPT:
        _DRAWS.pop(next(iter(_DRAWS)))
    _DRAWS[key] = (task, tuple(draws))
    return draws


_DRAWS: dict[tuple, tuple[Task, tuple[Draw, ...]]] = {}
_DRAWS_KEPT = 64   # a task's ladder has at most a dozen sizes


def _make_draws(task: Task, n: int, seed: int, samples: int) -> list[Draw]:
    draws = [Draw("typical", task.probe_params(n, seed, k)) for k in range(samples)]
    base = draws[0].params
    rng = np.random.default_rng([zlib.crc32(task.id.encode()), int(seed), int(n), _COLD_STREAM])
    draws += [Draw("cold", params, note) for params, note in task.cold_draws(base, n, rng)]
    critical = task.critical_params(base, n)
    if critical is not None:
        draws.append(Draw("critical", critical[0], critical[1]))
    return draws


def climb(task: Task, code: str, uses_log_z: bool, sandbox: Sandbox, seed: int = 0,
          budget: LadderBudget = LadderBudget(), start_n: int = 0, profile: Profile | None = None,
          claim: str | None = None, timings: list[tuple[int, float]] = ()) -> LadderOutcome:
    """Run the candidate on every draw of each ladder size in order; stop at the first failure or
    frontier. ``claim`` (its complexity_O) and ``timings`` ((n, seconds) of its calls so far, the
    probes') let an exponential claim stop the climb where it prices a call out of reach."""
    fname = "log_Z" if uses_log_z else "Z_efficient"
    out = LadderOutcome(rungs=[], largest_n_verified=start_n)
    limits = Limits(timeout_s=budget.rung_timeout_s, cpu_s=int(budget.rung_timeout_s) + 5, memory_mb=budget.memory_mb)
    started = time.monotonic()
    timed_calls = list(timings)
    for n in task.ladder_sizes:
        if budget.max_n is not None and n > budget.max_n:
            why = f"the run's ladder stops at n={budget.max_n} (evaluator.ladder_max_n)"
            out.stopped, out.frontier = f"stopped before n={n}: {why}", Frontier(n, "ladder_cap", why)
            return out
        too_big = _memory_refusal(task, n)    # before its parameters are drawn (a user task's ladder may be huge)
        if too_big is not None:
            out.stopped, out.frontier = f"stopped before n={n}: {too_big}", Frontier(n, "no_oracle", too_big)
            return out
        price = claimed_price(claim, side_is_sqrt_n(task, claim), timed_calls)
        why = price.too_costly(n, budget.rung_timeout_s) if price is not None else None
        if why is not None:
            out.stopped, out.frontier = f"stopped before n={n}: {why}", Frontier(n, "claimed_cost", why)
            return out
        passed_here, overflow = 0, None
        for draw in ladder_draws(task, n, seed, budget.samples):
            if time.monotonic() - started > budget.total_s:
                why = f"the ladder's total budget of {budget.total_s:.0f} s ran out before n={n} ({draw.kind})"
                out.stopped, out.frontier = why, Frontier(n, "ladder_budget", why)
                return out
            try:
                with timed(profile, "reference", n=n, draw=draw.kind) as extra:
                    extra["note"] = "not applicable"
                    # within what is left of the climb's budget: a reference that takes longer cannot be used
                    left = budget.total_s - (time.monotonic() - started)
                    found, source = lookup(task, draw.params, n, budget_s=max(min(REFERENCE_BUDGET_S, left), 1.0))
                    extra["note"] = f"{source} {found.method}"
                ref = found.log_z
            except NotApplicable as exc:
                if draw.kind == "typical":
                    why = f"no exact oracle reaches n={n} here ({exc})"
                    out.stopped, out.frontier = f"stopped at n={n}: {why}", Frontier(n, "no_oracle", why)
                    return out
                out.notes.append(f"the {draw.kind} draw at n={n} was skipped: no exact oracle for it here ({exc})")
                continue
            with timed(profile, "ladder_call", n=n, draw=draw.kind) as extra:
                report = sandbox.run(code, [Call(fname, draw.params, n)], limits)
                verdict = _judge_rung(n, report, ref, uses_log_z, task.quantity.positive)
                extra["candidate_s"] = sum(r.seconds for r in report.results)
                extra["note"] = _outcome(verdict)
            if isinstance(verdict, Rung):
                verdict.draw, verdict.note = draw.kind, draw.note
                out.rungs.append(verdict)
                timed_calls.append((n, verdict.seconds))
                if not verdict.passed:
                    out.failure = (f"At n={n} (beyond the probe sizes), on {draw.where()}, your {fname} is wrong: "
                                   f"relative error {verdict.rel_err:.2e} >> 1e-06 against the exact value.")
                    return out
                passed_here += 1
                continue
            kind, text = verdict
            if kind == "fail":
                out.failure = f"At n={n} (beyond the probe sizes), on {draw.where()}, {text}"
                return out
            if kind == "overflow":
                overflow = overflow or Frontier(n, "overflow", text)
                continue
            where = "" if draw.kind == "typical" else f" ({draw.note})"
            out.stopped = f"stopped at n={n}{where}: {text}"
            out.frontier = Frontier(n, kind, text, budget.rung_timeout_s, budget.memory_mb)
            return out
        if passed_here:
            out.largest_n_verified = n
        if overflow is not None:
            out.stopped, out.frontier = f"stopped at n={n}: {overflow.detail}", overflow
            return out
    return out


def _memory_refusal(task: Task, n: int) -> str | None:
    """tasks.memory's refusal of size n (what it needs, what there is), once per task object and n."""
    key = (id(task), int(n))
    if key not in _MEMORY or _MEMORY[key][0] is not task:
        _MEMORY[key] = (task, memory_refusal(task, n))
    return _MEMORY[key][1]


_MEMORY: dict[tuple, tuple] = {}


def _outcome(verdict) -> str:
    """One word for a ladder call's profile entry: "" (passed), "wrong", or the frontier's kind."""
    if isinstance(verdict, Rung):
        return "" if verdict.passed else "wrong"
    return verdict[0]


OVERFLOW_TEXT = "Z overflows a float here: define log_Z(params, n) returning log Z to be verified at larger n"


def _judge_rung(n: int, report, ref: float, uses_log_z: bool, positive: bool = True):
    """A Rung when the call returned a comparable value; else (kind, explanation) with kind
    "fail", "time", "memory" or "overflow"."""
    if report.memory_exhausted:
        return "memory", "memory budget exhausted"
    if report.timed_out or not report.results:
        if report.timed_out:
            return "time", f"time budget exhausted ({report.error})"
        return "fail", f"your code did not run: {report.error}"
    res = report.results[0]
    if not res.ok:
        if res.error_type == "OverflowError" and not uses_log_z:
            return "overflow", OVERFLOW_TEXT
        if res.error_type == "MemoryError":
            return "memory", f"memory budget exhausted (the code raised {res.error})"
        return "fail", f"your code raised {res.error}"
    if not uses_log_z and positive and res.value is not None and math.isinf(res.value):
        return "overflow", OVERFLOW_TEXT
    err, why = relative_error(res.value, ref, returns_log=uses_log_z, positive=positive)
    if err is None:
        return "fail", f"your code {why}"
    return Rung(n=n, seconds=res.seconds, rel_err=err, passed=passes(err, ref if positive else 0.0), stage="ladder")
