"""Judging an answer that is not an exact program: rigorous bounds or an approximation with a control
parameter (evaluators/answer_kinds.py has the kinds and the functions a candidate defines).

The answer runs on the same instances as an exact program: the probe sizes (``samples`` seeded draws
each, brute-force references) and every ladder size with its typical, cold and critical draws, each call
under the ladder's time and memory budgets. Where an exact value exists (brute force, the task's own
reference, the exact oracles) the answer is checked:

- bounds must hold, lo <= exact <= hi up to rounding (BOUND_SLACK relative to max(1, |exact|)); one violated
  instance rejects, and the feedback names it (size, draw, seed, sample);
- an approximation must be honest: |last value - exact| <= HONESTY_FACTOR |last value - previous| + rounding,
  with at least two control values (the change between them is its evidence of convergence).

Where no exact value exists the answer still runs: its gap (bounds) or its last change (approximation)
and its time are measured there, so tightness and cost are known at every size it reaches. Time or memory
running out ends the climb (the frontier, as for exact programs). Cost is audited as for any program
(evaluators/checks/complexity.py on the timings of every call); class consistency and the physical
assertions concern exact values and are not judged.

Quality (the score's numerical component when the answer is valid; evaluators/verdict.py ``Answer``):
bounds 0.5 + 0.49 / (1 + g / GAP_SCALE) with g the mean gap per spin on the typical draws (0.5 for a
one-sided bound); approximations 0.01 + 0.48 / (1 + e / ERROR_SCALE) with e the worst checked error per
spin (the worst claimed change where nothing was checked). So valid bounds rank above approximations,
each ordered by tightness or accuracy, and every exact program that passes (1.0) above both.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from evaluators.answer_kinds import BOUND_SLACK, HONESTY_FACTOR, Read, item_calls, read_answer, wrapped_code
from evaluators.checks.complexity import audit_complexity
from evaluators.ladder import ladder_draws
from evaluators.oracle_cache import lookup, reference
from evaluators.oracles.base import NotApplicable, TooLarge
from evaluators.profile import timed
from evaluators.sandbox import Limits
from evaluators.verdict import Answer, AnswerInstance, Frontier, Rung
from tasks.family import side_is_sqrt_n

GAP_SCALE = 0.1
ERROR_SCALE = 1e-4


@dataclass(frozen=True)
class Case:
    n: int
    params: dict
    stage: str
    draw: str
    note: str
    exact: float | None


def _slack(exact: float) -> float:
    return BOUND_SLACK * max(1.0, abs(exact))


def judge_instance(kind: str, case: Case, read) -> AnswerInstance:
    """One instance: what the answer returned, and whether it holds where an exact value is known."""
    out = AnswerInstance(n=case.n, stage=case.stage, draw=case.draw, note=case.note, seconds=read.seconds,
                         checked=case.exact is not None, error=read.error)
    if kind == "bounds":
        out.lo, out.hi = read.lo, read.hi
        if read.error is None:
            out.gap_per_spin = (read.hi - read.lo) / case.n
            if case.exact is not None:
                miss = max(read.lo - case.exact, case.exact - read.hi)
                out.violation = max(0.0, miss) / max(1.0, abs(case.exact))
                out.valid = miss <= _slack(case.exact)
        return out
    out.controls = [c for c, _ in read.pairs]
    out.values = [v for _, v in read.pairs]
    if read.error is not None:
        return out
    last = out.values[-1]
    if not math.isfinite(last):
        out.error = f"the last value (control {out.controls[-1]:g}) is not finite"
        return out
    if len(out.values) < 2 or not math.isfinite(out.values[-2]):
        out.error = "no evidence of convergence: give the values at two or more controls, the last two finite"
        return out
    change = abs(last - out.values[-2])
    out.claimed_per_spin = change / case.n
    if case.exact is not None:
        err = abs(last - case.exact)
        out.error_per_spin = err / case.n
        out.valid = err <= HONESTY_FACTOR * change + _slack(case.exact)
    return out


def _where(case: Case, seed: int, sample: int | None) -> str:
    what = f"sample {sample} of the probes" if case.stage == "probe" else \
        (case.note or "the typical draw") + " on the ladder"
    return f"n={case.n}, {what} (seed {seed})"


def _cases_probe(task, seed, samples):
    for n in task.probe_sizes:
        for k in range(samples):
            params = task.probe_params(n, seed, k)
            yield k, Case(n, params, "probe", "typical", "", reference(task, params, n, method="brute").log_z)


def _exact_or_none(task, params, n) -> float | None:
    try:
        return lookup(task, params, n)[0].log_z
    except (NotApplicable, TooLarge):
        return None


def run_answer(task, code: str, kind: str, sandbox, seed: int, samples: int, probe_timeout_s: float,
               memory_mb: int, budget, profile=None) -> tuple[list[AnswerInstance], list, Frontier | None, str | None]:
    """(instances, [(case, sample)], frontier, why the climb stopped) of the answer on the probes and the ladder."""
    wrapped = wrapped_code(code, kind)
    cases = list(_cases_probe(task, seed, samples))
    out, meta = [], []
    limits = Limits(timeout_s=probe_timeout_s, cpu_s=int(probe_timeout_s) + 5, memory_mb=memory_mb)
    with timed(profile, "answer_probes"):
        calls = [c for _, case in cases for c in item_calls(kind, case.params, case.n)]
        report = sandbox.run(wrapped, calls, limits)
    per = len(item_calls(kind, {}, 1))
    for i, (k, case) in enumerate(cases):
        got = report.results[i * per:(i + 1) * per]
        read = read_answer(kind, got) if got else Read(error=report.error or "the run ended before this instance")
        out.append(judge_instance(kind, case, read))
        meta.append((case, k))
    rung_limits = Limits(timeout_s=budget.rung_timeout_s, cpu_s=int(budget.rung_timeout_s) + 5,
                         memory_mb=budget.memory_mb)
    started = time.monotonic()
    for n in task.ladder_sizes:
        if budget.max_n is not None and n > budget.max_n:
            return out, meta, Frontier(n, "ladder_cap", f"the run's ladder stops at n={budget.max_n}"), None
        for draw in ladder_draws(task, n, seed, budget.samples):
            if time.monotonic() - started > budget.total_s:
                why = f"the ladder's total budget of {budget.total_s:.0f} s ran out before n={n} ({draw.kind})"
                return out, meta, Frontier(n, "ladder_budget", why), why
            with timed(profile, "answer_reference", n=n, draw=draw.kind):
                exact = _exact_or_none(task, draw.params, n)
            case = Case(n, draw.params, "ladder", draw.kind, draw.note, exact)
            with timed(profile, "answer_call", n=n, draw=draw.kind):
                report = sandbox.run(wrapped, item_calls(kind, draw.params, n), rung_limits)
            if report.memory_exhausted or report.timed_out:
                kind_ = "memory" if report.memory_exhausted else "time"
                why = f"{kind_} budget exhausted at n={n} ({draw.kind})"
                return out, meta, Frontier(n, kind_, why, budget.rung_timeout_s, budget.memory_mb), why
            read = read_answer(kind, report.results) if report.results else \
                Read(error=report.error or "the answer was not returned")
            out.append(judge_instance(kind, case, read))
            meta.append((case, None))
            if out[-1].valid is False or out[-1].error is not None:     # named in the feedback; no need to climb on
                return out, meta, None, f"at n={n} ({draw.kind}) the answer failed"
    return out, meta, None, None


def summarise(kind: str, instances: list[AnswerInstance]) -> Answer:
    """The Answer record: validity, quality and the figures per size."""
    ans = Answer(kind=kind, instances=instances)
    ran = [i for i in instances if i.error is None]
    checked = [i for i in ran if i.checked]
    ans.checked = len(checked)
    ans.valid = bool(instances) and all(i.error is None for i in instances) and all(i.valid for i in checked)
    ans.largest_n_run = max((i.n for i in ran), default=0)
    by_n: dict[int, list[AnswerInstance]] = {}
    for i in instances:
        by_n.setdefault(i.n, []).append(i)
    ans.largest_n_checked = max((n for n, xs in by_n.items() if all(x.checked and x.valid for x in xs)), default=0)
    typical = [i for i in ran if i.draw == "typical"]
    if kind == "bounds":
        gaps = [i.gap_per_spin for i in typical if i.gap_per_spin is not None]
        ans.gap_per_spin = sum(gaps) / len(gaps) if gaps else None
        g = ans.gap_per_spin
        ans.quality = 0.5 if g is None or not math.isfinite(g) else 0.5 + 0.49 / (1.0 + max(0.0, g) / GAP_SCALE)
    else:
        errs = [i.error_per_spin for i in checked if i.error_per_spin is not None]
        claims = [i.claimed_per_spin for i in ran if i.claimed_per_spin is not None]
        ans.error_per_spin = max(errs) if errs else None
        ans.claimed_per_spin = max(claims) if claims else None
        e = ans.error_per_spin if ans.error_per_spin is not None else ans.claimed_per_spin
        ans.quality = 0.01 if e is None else 0.01 + 0.48 / (1.0 + e / ERROR_SCALE)
    for n in sorted(by_n):
        xs = [x for x in by_n[n] if x.error is None]
        row = {"n": n, "draws": len(by_n[n]), "checked": sum(x.checked for x in xs)}
        for key in ("gap_per_spin", "error_per_spin", "claimed_per_spin"):
            typ = [getattr(x, key) for x in xs if x.draw == "typical" and getattr(x, key) is not None]
            every = [getattr(x, key) for x in xs if getattr(x, key) is not None]
            row[key] = sum(typ) / len(typ) if typ else None
            row[key + "_max"] = max(every) if every else None
        ans.by_size.append(row)
    if not ans.valid:
        ans.quality = 0.0
    return ans


def answer_lines(ans: Answer, meta, seed: int) -> tuple[list[str], bool]:
    """Feedback lines naming every failed instance (never an exact value), and whether any failed."""
    lines, failed = [], False
    what = "bounds" if ans.kind == "bounds" else "approximation"
    for inst, (case, sample) in zip(ans.instances, meta):
        where = _where(case, seed, sample)
        if inst.error is not None:
            failed = True
            lines.append(f"At {where}: your {what} could not be read: {inst.error}.")
        elif inst.valid is False:
            failed = True
            if ans.kind == "bounds":
                side = "lower bound exceeds" if inst.lo > case.exact else "upper bound is below"
                lines.append(f"At {where}: your {side} the exact log by {inst.violation:.3g} (relative): "
                             "the bounds are violated.")
            else:
                lines.append(f"At {where}: your last value is off by {inst.error_per_spin:.3g} per spin, more than "
                             f"{HONESTY_FACTOR:g} x its last change ({inst.claimed_per_spin:.3g} per spin): the "
                             "claimed convergence is not real.")
    checked = f"{ans.checked} instance(s) checked against exact values, largest n {ans.largest_n_checked}"
    if ans.kind == "bounds":
        gap = "one-sided or infinite" if ans.gap_per_spin is None or not math.isfinite(ans.gap_per_spin) else \
            f"{ans.gap_per_spin:.4g} per spin on the typical draws"
        head = f"Bounds: {'valid' if not failed else 'REJECTED'} ({checked}); gap {gap}; ran up to n={ans.largest_n_run}."
    else:
        err = "not checked" if ans.error_per_spin is None else f"{ans.error_per_spin:.3g} per spin at worst"
        change = "none" if ans.claimed_per_spin is None else f"{ans.claimed_per_spin:.3g} per spin at worst"
        head = (f"Approximation: {'honest' if not failed else 'REJECTED'} ({checked}); error of the last value {err}; "
                f"last change {change}; ran up to n={ans.largest_n_run}.")
    return [head] + lines[:5] + ([f"... and {len(lines) - 5} more."] if len(lines) > 5 else []), failed


def verify_answer(task, sub, kind: str, options, sandbox, v, profile=None) -> None:
    """Fill ``v`` for a bounds or approximation answer (see the module docstring)."""
    instances, meta, frontier, stopped = run_answer(task, sub.code, kind, sandbox, options.seed, options.samples,
                                                    options.timeout_s, options.memory_mb, options.ladder_budget,
                                                    profile)
    ans = summarise(kind, instances)
    v.answer = ans
    lines, failed = answer_lines(ans, meta, options.seed)
    num = v.numerical
    num.probes = len(instances)                  # every instance the answer ran on, probes and ladder draws
    num.failed = sum(1 for i in instances if i.error is not None or i.valid is False)
    num.passed = ans.valid and not failed
    num.largest_n_verified = ans.largest_n_checked
    num.frontier = frontier
    num.rungs = [Rung(n=i.n, seconds=i.seconds, rel_err=None, passed=i.error is None and i.valid is not False,
                      stage=i.stage, draw=i.draw, note=i.note) for i in instances]
    timings = [(i.n, i.seconds) for i in instances if i.error is None and i.seconds > 0]
    with timed(profile, "complexity_audit"):
        finding = audit_complexity(sub.complexity_O, sub.code, timings, side_is_sqrt_n(task, sub.complexity_O),
                                   frontier=frontier if frontier is not None and frontier.kind in ("time", "memory")
                                   else None, first_ladder_n=None)
    v.complexity = finding.to_verdict()
    v.class_.consistent = None
    v.class_.reasons = [f"not judged: a {kind} answer is not an exact method"]
    if stopped:
        lines.append(f"The climb stopped: {stopped}.")
    if finding.claimed_growth is None or finding.honest is False:
        lines.append("Complexity: " + "; ".join(finding.reasons))
    ok = num.passed and finding.claimed_growth is not None and finding.honest is not False
    v.feedback = "\n".join(lines)
    v.verdict = "accept" if ok and not v.sandbox.violations else "reject"
    _record_failure(v, kind, instances, finding)


def _record_failure(v, kind: str, instances, finding) -> None:
    """The Verdict's typed first failure (evaluators/verdict.Failure) of a rejected answer."""
    if v.accepted:
        return
    bad = next((i for i in instances if i.error is not None or i.valid is False), None)
    if bad is not None:
        what = bad.error or (f"the bounds miss the exact value by {bad.violation:.2e}" if kind == "bounds"
                             and bad.violation is not None else f"the {kind} does not hold against the exact value")
        v.fail("probes" if bad.stage == "probe" else "promotion ladder", f"at n={bad.n} ({bad.draw} draw): {what}")
    elif not v.numerical.passed:
        v.fail("probes", f"the {kind} answer was not shown valid on any instance with an exact value")
    if finding.claimed_growth is None or finding.honest is False:
        v.fail("complexity audit", "; ".join(finding.reasons) or f"claimed {finding.claimed}")
    if v.failure is None:
        v.fail("internal evaluator error", "rejected without a recorded failed check")


def describe(ans: Answer) -> str:
    """One line: the kind, whether it holds, and its figure per spin at each size (typical draws)."""
    key = "gap_per_spin" if ans.kind == "bounds" else "error_per_spin"
    label = "gap" if ans.kind == "bounds" else "error"
    sizes = ", ".join(f"{row['n']}: {row[key]:.3g}" for row in ans.by_size if row.get(key) is not None)
    if ans.kind == "approximation":
        changes = ", ".join(f"{row['n']}: {row['claimed_per_spin']:.3g}" for row in ans.by_size
                            if row.get("claimed_per_spin") is not None)
        sizes = (sizes + "; " if sizes else "") + (f"last change per spin by n {changes}" if changes else "")
    state = ("valid" if ans.kind == "bounds" else "honest") if ans.valid else "rejected"
    return (f"{ans.kind}, {state}, quality {ans.quality:.4f}; {label} per spin by n {sizes or 'none'}"
            f" ({ans.checked} checked against exact values)")
