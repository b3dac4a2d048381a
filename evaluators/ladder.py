"""The promotion ladder: after the paper's probe sizes, climb the task's larger sizes, each
judged against an exact oracle, each under its own time and memory budget.

A wrong value or an unexpected exception at any rung is a numerical failure. Running out of
the rung's time or memory, or a ``Z_efficient`` whose Z overflows a float, ends the climb
without failing: the last rung passed marks the candidate's scaling frontier.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from evaluators.comparison import passes, relative_error
from evaluators.oracle_cache import reference
from evaluators.oracles.base import NotApplicable
from evaluators.sandbox import Call, Limits, Sandbox
from evaluators.verdict import Rung
from tasks.base import Task


@dataclass(frozen=True)
class LadderBudget:
    rung_timeout_s: float = 20.0    # wall clock per rung
    memory_mb: int = 2048           # address space per rung
    total_s: float = 60.0           # the whole climb stops starting new rungs after this
    samples: int = 1                # parameter draws per rung


@dataclass
class LadderOutcome:
    rungs: list[Rung]
    failure: str | None = None      # set when a rung was wrong or raised: feedback text, names the size
    stopped: str | None = None      # why the climb ended early without failing (time, memory, overflow, oracle)
    largest_n_verified: int = 0


def climb(task: Task, code: str, uses_log_z: bool, sandbox: Sandbox, seed: int = 0,
          budget: LadderBudget = LadderBudget(), start_n: int = 0) -> LadderOutcome:
    """Run the candidate on each ladder size in order; stop at the first failure or frontier."""
    fname = "log_Z" if uses_log_z else "Z_efficient"
    out = LadderOutcome(rungs=[], largest_n_verified=start_n)
    started = time.monotonic()
    for n in task.ladder_sizes:
        if time.monotonic() - started > budget.total_s:
            out.stopped = f"stopped before n={n}: the ladder's total budget of {budget.total_s:.0f} s ran out"
            return out
        for k in range(budget.samples):
            params = task.probe_params(n, seed, k)
            try:
                ref = reference(task, params, n).log_z
            except NotApplicable as exc:
                out.stopped = f"stopped at n={n}: no exact oracle reaches this size here ({exc})"
                return out
            limits = Limits(timeout_s=budget.rung_timeout_s, cpu_s=int(budget.rung_timeout_s) + 5, memory_mb=budget.memory_mb)
            report = sandbox.run(code, [Call(fname, params, n)], limits)
            verdict = _judge_rung(n, report, ref, uses_log_z, task.quantity.positive)
            if isinstance(verdict, Rung):
                out.rungs.append(verdict)
                if not verdict.passed:
                    out.failure = (f"At n={n} (beyond the probe sizes) your {fname} is wrong: relative error "
                                   f"{verdict.rel_err:.2e} >> 1e-06 against the exact value.")
                    return out
                continue
            kind, text = verdict
            if kind == "fail":
                out.failure = f"At n={n} (beyond the probe sizes) {text}"
            else:
                out.stopped = f"stopped at n={n}: {text}"
            return out
        out.largest_n_verified = n
    return out


def _judge_rung(n: int, report, ref: float, uses_log_z: bool, positive: bool = True):
    """A Rung when the call returned a value; else ("fail" | "stop", explanation)."""
    if report.memory_exhausted:
        return "stop", "memory budget exhausted (this is the scaling frontier, not an error)"
    if report.timed_out or not report.results:
        if report.timed_out:
            return "stop", f"time budget exhausted ({report.error})"
        return "fail", f"your code did not run: {report.error}"
    res = report.results[0]
    if not res.ok:
        if res.error and res.error.startswith("OverflowError") and not uses_log_z:
            return "stop", "Z overflows a float here: define log_Z(params, n) returning log Z to be verified at larger n"
        if res.error and res.error.startswith("MemoryError"):
            return "stop", "memory budget exhausted (this is the scaling frontier, not an error)"
        return "fail", f"your code raised {res.error}"
    if not uses_log_z and res.value is not None and math.isinf(res.value):
        return "stop", "Z overflows a float here: define log_Z(params, n) returning log Z to be verified at larger n"
    err, why = relative_error(res.value, ref, returns_log=uses_log_z, positive=positive)
    if err is None:
        return "fail", f"your code {why}"
    return Rung(n=n, seconds=res.seconds, rel_err=err, passed=passes(err, ref if positive else 0.0), stage="ladder")
