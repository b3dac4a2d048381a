"""The evaluation cascade: one candidate in, one Verdict out.

Stages: static policy check; a sandboxed run at the paper's probe sizes compared with brute
force; the promotion ladder to sizes only exact oracles reach (for candidates right at every
probe); for Tier 2 tasks on the Nishimori line, rungs from its identities beyond the verified
sizes (evaluators/checks/nishimori_rungs.py); then, for every candidate that ran at all, right or wrong, the complexity audit, class
consistency and physical assertions. Each stage records everything it found in the Verdict, and
the feedback lists every failure at once (a wrong rung does not hide a dishonest claim); nothing
the candidate does can make this function raise.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluators import feedback as fb
from evaluators.bounds_check import verify_answer
from evaluators.comparison import passes, relative_error
from evaluators.checks.complexity import ladder_timings
from evaluators.checks.judgement import JudgeBudget, judge
from evaluators.checks.nishimori_rungs import NishimoriBudget, nishimori_stage
from evaluators.ladder import LadderBudget, climb
from evaluators.oracle_cache import reference
from evaluators.oracles.contraction.executor_rates import ExecutorRates, using
from evaluators.profile import Profile, timed
from evaluators.sandbox import Call, Limits, Sandbox
from evaluators.submission import Submission
from evaluators.verdict import Rung, Verdict
from tasks.base import Task


@dataclass(frozen=True)
class VerifyOptions:
    seed: int = 0
    samples: int = 5           # parameter samples per probe size (the paper's default)
    timeout_s: float = 30.0    # wall clock for the probe run (the paper's per-trial timeout)
    memory_mb: int = 2048
    ladder: bool = True        # climb the promotion ladder after the probes pass
    ladder_budget: LadderBudget = LadderBudget()
    judge: bool = True         # complexity, class and physics for every candidate that ran
    judge_budget: JudgeBudget = JudgeBudget()
    nishimori: NishimoriBudget | None = NishimoriBudget()   # Tier 2 physics rungs beyond the verified sizes
    #: what a flop and a written entry cost the tensor-network oracle's executor: the rates a run learned once
    #: and recorded in its directory (None: the oracle's fixed default, DEFAULT_RATES)
    executor_rates: ExecutorRates | None = None


@dataclass(frozen=True)
class Probe:
    n: int
    params: dict
    log_z: float  # exact natural log Z (of the task's quantity; the value itself if not positive)


def probe_set(task: Task, seed: int, samples: int) -> list[Probe]:
    """The paper's probes: ``samples`` seeded parameter draws at each probe size, with exact log Z."""
    out = []
    for n in task.probe_sizes:
        for k in range(samples):
            params = task.probe_params(n, seed, k)
            out.append(Probe(n, params, reference(task, params, n, method="brute").log_z))
    return out


def verify(task: Task, sub: Submission, options: VerifyOptions = VerifyOptions(), sandbox: Sandbox | None = None,
           profile: Profile | None = None) -> Verdict:
    """Judge ``sub`` on ``task``; the returned Verdict's ``verdict`` is accept or reject. A
    ``profile`` given is filled with where the time went (:mod:`evaluators.profile`). Exact oracles
    called on the way search their contraction paths by ``options.executor_rates``."""
    with using(options.executor_rates):
        return _verify(task, sub, options, sandbox, profile)


def _verify(task: Task, sub: Submission, options: VerifyOptions, sandbox: Sandbox | None,
            profile: Profile | None) -> Verdict:
    v = Verdict(task=task.id, confidence=sub.confidence)
    v.complexity.claimed = sub.complexity_O
    v.class_.claimed = sub.tractable_class

    own = sandbox is None
    sandbox = sandbox or Sandbox()   # starts nothing yet: its fork server starts at the first run
    try:
        with timed(profile, "static_check"):   # a code the sandbox checked before is not checked again
            violations = sandbox.check(sub.code)
        syntax = [x for x in violations if x.startswith("syntax:")]
        if syntax:  # code that does not parse did not run; it broke no rule of the sandbox
            v.feedback = fb.did_not_run("SyntaxError: " + syntax[0][len("syntax:"):])
            v.fail("did not run", "SyntaxError: " + syntax[0][len("syntax:"):])
            return v
        if violations:
            v.sandbox.violations = list(violations)
            v.feedback = "\n".join([fb.did_not_run("forbidden construct(s) in the code"), fb.violations_text(violations)])
            v.fail("sandbox", "forbidden construct(s) " + ", ".join(violations[:4]))
            return v
        if sub.answer_kind != "exact":   # bounds or an approximation: judged by evaluators/bounds_check.py
            verify_answer(task, sub, sub.answer_kind, options, sandbox, v, profile)
            return v
        if not sub.defines("Z_efficient"):
            v.feedback = fb.did_not_run("the code does not define a top-level function Z_efficient(params, n)")
            v.fail("did not run", "the code does not define a top-level function Z_efficient(params, n)")
            return v

        with timed(profile, "sandbox_start"):   # nothing to do when it is warm; a crash later restarts it in a stage
            try:
                sandbox.start()
            except (RuntimeError, OSError):
                pass   # the probe run tries again and reports why it cannot start
        ran = _probe_stage(task, sub, options, sandbox, v, profile)
        climbed = options.ladder and v.numerical.passed and bool(task.ladder_sizes)
        if climbed:
            _ladder_stage(task, sub, options, sandbox, v, profile)
        if options.nishimori is not None and v.numerical.passed:      # evaluators/checks/nishimori_rungs.py
            with timed(profile, "nishimori_rungs"):
                nishimori_stage(task, sub, v, sandbox, options.seed, options.nishimori, uses_log_z(task, sub),
                                ladder_timings(v.numerical.rungs))
        judged_ok = True
        if options.judge and ran:
            try:
                outcome = judge(task, sub, v, sandbox, seed=options.seed, budget=options.judge_budget,
                                ladder_ran=climbed, profile=profile)
            except Exception as exc:  # an evaluator bug must not crash evolve; it must not accept either
                judged_ok = False
                v.feedback += f"\nInternal evaluator error while judging (not your fault): {type(exc).__name__}: {exc}"
                v.fail("internal evaluator error", f"while judging (not your fault): {type(exc).__name__}: {exc}")
            else:
                judged_ok = outcome.ok
                if outcome.lines:
                    v.feedback += "\n" + "\n".join(outcome.lines)
                for failure in outcome.failures:
                    v.fail(failure.stage, failure.reason, failure.subject)
        v.verdict = "accept" if v.numerical.passed and judged_ok and not v.sandbox.violations else "reject"
        if v.accepted:
            v.failure = None
        elif v.failure is None:          # a rejection always says why (a check added without its failure)
            v.fail("internal evaluator error", "rejected without a recorded failed check")
        return v
    finally:
        if own:
            sandbox.close()


def _probe_stage(task: Task, sub: Submission, opt: VerifyOptions, sandbox: Sandbox, v: Verdict,
                 profile: Profile | None = None) -> bool:
    """Run the probes and fill ``v.numerical``; True when the candidate returned anything at all."""
    with timed(profile, "probe_references"):
        probes = probe_set(task, opt.seed, opt.samples)
    functions = ["Z_efficient"] + (["log_Z"] if uses_log_z(task, sub) else [])
    calls = [Call(f, p.params, p.n) for p in probes for f in functions]
    limits = Limits(timeout_s=opt.timeout_s, cpu_s=int(opt.timeout_s) + 5, memory_mb=opt.memory_mb)
    with timed(profile, "probes") as extra:
        report = sandbox.run(sub.code, calls, limits)
        extra["candidate_s"] = sum(r.seconds for r in report.results)
    v.sandbox.violations = list(report.violations)
    if report.violations:
        v.fail("sandbox", "forbidden construct(s) " + ", ".join(list(report.violations)[:4]))
    num = v.numerical
    num.probes = len(probes)

    if report.error and not report.results:     # nothing returned (a timeout, a crash): every probe failed
        num.failed = len(probes)
        v.feedback = _join(fb.did_not_run(report.error), report.violations)
        v.fail("did not run", report.error)
        return False

    failures: list[fb.ProbeFailure] = []
    errs: list[float] = []
    for i, probe in enumerate(probes):
        worst, reason, secs = 0.0, None, 0.0
        for j, fname in enumerate(functions):
            k = i * len(functions) + j
            if k >= len(report.results):
                reason = reason or _cut_short(report)
                worst = None
                continue
            res = report.results[k]
            secs += res.seconds
            if not res.ok:
                reason, worst = f"{fname} raised {res.error}", None
                continue
            err, why = relative_error(res.value, probe.log_z, returns_log=(fname == "log_Z"),
                                      positive=task.quantity.positive)
            if err is None:
                reason, worst = f"{fname} {why}", None
            elif worst is not None:
                worst = max(worst, err)
        ok = worst is not None and passes(worst)
        num.rungs.append(Rung(n=probe.n, seconds=secs, rel_err=worst, passed=ok, stage="probe"))
        if worst is not None:
            errs.append(worst)
        if not ok:
            failures.append(fb.ProbeFailure(probe.n, worst, reason))

    num.failed = len(failures)
    num.max_rel_err = max(errs) if errs else None
    num.passed = not failures
    num.largest_n_verified = _largest_clean_prefix(task, num.rungs)
    v.feedback = _join(fb.numerical_summary(len(probes), failures, num.max_rel_err), report.violations)
    if failures:
        v.fail("probes", f"{len(failures)}/{len(probes)} probe samples failed ({fb.probe_failure_text(failures[0])})")
    return bool(report.results)


def uses_log_z(task: Task, sub: Submission) -> bool:
    """Whether the candidate's log_Z is what the verifier calls (only for positive quantities)."""
    return task.quantity.positive and sub.defines("log_Z")


def _ladder_stage(task: Task, sub: Submission, opt: VerifyOptions, sandbox: Sandbox, v: Verdict,
                  profile: Profile | None = None) -> None:
    uses_log = uses_log_z(task, sub)
    out = climb(task, sub.code, uses_log, sandbox, seed=opt.seed, budget=opt.ladder_budget,
                start_n=v.numerical.largest_n_verified, profile=profile, claim=sub.complexity_O,
                timings=ladder_timings(v.numerical.rungs))
    num = v.numerical
    num.rungs.extend(out.rungs)
    num.largest_n_verified = out.largest_n_verified
    num.frontier = out.frontier
    if out.rungs:
        num.max_rel_err = max([num.max_rel_err or 0.0] + [r.rel_err for r in out.rungs if r.rel_err is not None])
    notes = []
    if out.failure:
        num.passed = False
        num.failed += 1
        notes.append(out.failure)
        v.fail("promotion ladder", out.failure)
    else:
        top = out.largest_n_verified
        kinds = sorted({r.draw for r in out.rungs})
        drawn = f" ({', '.join(kinds)} draws)" if kinds else ""
        notes.append(f"Promotion ladder: exact against the oracle up to n={top}{drawn}."
                     + (f" The climb {out.stopped}." if out.stopped else " Every rung passed."))
    notes += [f"Promotion ladder: {note}." for note in out.notes]
    v.feedback = v.feedback + "\n" + "\n".join(notes)


def _largest_clean_prefix(task: Task, rungs: list[Rung]) -> int:
    """Largest probe size such that it and every smaller size passed on all samples."""
    best = 0
    for n in sorted(task.probe_sizes):
        if all(r.passed for r in rungs if r.n == n):
            best = n
        else:
            break
    return best


def _cut_short(report) -> str:
    if report.timed_out:
        return f"not reached: {report.error or 'the run timed out'}"
    if report.memory_exhausted:
        return "not reached: memory limit exceeded"
    return f"not reached: {report.error or 'the run ended early'}"


def _join(text: str, violations) -> str:
    return text if not violations else text + "\n" + fb.violations_text(list(violations))
