"""The complexity audit: is the claimed ``complexity_O`` at least the cost we can establish?

Three sources, combined into ``Verdict.complexity`` (``measured``, ``honest``):

1. the claim, parsed with sympy (``complexity_claim.parse_claim``);
2. static evidence from the code (``static_cost.static_evidence``): a lower bound, e.g. an
   enumeration over 2^n states is exponential even if the times at small n look polynomial;
3. timings (n, seconds) from the ladder and from ``measure_times`` (``timing_fit``).

measured = the larger of the static lower bound and what the timings establish beyond noise
(``Fit.established``). A static finding is dropped when a completed run contradicts it (the
code finished a size that cost would not allow in the time taken: more than 1e11 elementary
steps per second), which covers enumerations hidden behind guards the AST walk misses.
honest = ``at_least(claimed, measured)``: claiming more cost than measured is honest, an
honest exponential claim is honest. Two more readings (``cost_evidence``): the ladder's frontier
(out of time or memory at a size a polynomial claim reaches) makes a polynomial claim dishonest;
when nothing was measured, the code's costliest construct (``static_estimate``, a single loop
over n included) within the claim, or a size finished faster than any costlier program could,
or times that grew no faster than the claim over the whole ladder (``ladder_within_claim``: a
program too fast for the timer) make it honest. None only when the claim is missing or
unreadable, or when neither the code nor the timings say anything. The verdict carries the
sentence the judgement rests on (``Complexity.evidence``), so an honest verdict says on what.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from evaluators.checks.complexity_claim import ClaimParseError, parse_claim
from evaluators.checks.cost_evidence import frontier_contradiction, ladder_within_claim, timing_ceiling_support
from evaluators.checks.growth import Growth, at_least, log2_steps
from evaluators.checks.static_cost import StaticFinding, growth_key, static_estimate, static_evidence
from evaluators.checks.timing_fit import MIN_SECONDS, Fit, fit_growth
from evaluators.sandbox import Call, Limits
from evaluators.verdict import Complexity, Frontier

MAX_STEPS_PER_SECOND = 1e11  # no Python/numpy code on 2 cores does more elementary steps than this


@dataclass
class ComplexityFinding:
    claimed: str | None
    claimed_growth: Growth | None
    measured: str | None
    measured_growth: Growth | None
    static: list[StaticFinding] = field(default_factory=list)
    honest: bool | None = None
    reasons: list[str] = field(default_factory=list)
    fit: Fit | None = field(default=None, repr=False)

    def to_verdict(self) -> Complexity:
        """The Verdict's ``complexity`` section; ``evidence`` is the sentence the judgement rests on."""
        evidence = self.reasons[0] if self.honest is not None and self.reasons else None
        return Complexity(claimed=self.claimed, measured=self.measured, honest=self.honest, evidence=evidence)

    def feedback(self) -> str:
        """Plain words for the next proposal; empty when the claim was found honest."""
        return "" if self.honest else "\n".join(self.reasons)


def audit_complexity(claim: str | None, code: str, timings: list[tuple[int, float]],
                     lattice: bool, frontier: Frontier | None = None,
                     first_ladder_n: int | None = None, last_ladder_n: int | None = None) -> ComplexityFinding:
    """Judge ``claim`` against the code and its (n, seconds) timings (n = number of spins).

    ``lattice``: the task's n is L^2 (so L in the claim means sqrt(n)); see ``parse_claim``.
    ``frontier``: where the ladder ran out of time or memory, if it did; ``first_ladder_n`` the
    task's first size beyond the probes (a polynomial claim must reach it); ``last_ladder_n`` its
    last size, when the ladder was climbed (timings that reach it and stay within the claim are
    evidence for it).
    """
    reasons: list[str] = []
    claimed_growth = None
    if claim is None or not str(claim).strip():
        reasons.append("no complexity was claimed (complexity_O is empty), so honesty cannot be judged")
    else:
        try:
            claimed_growth = parse_claim(claim, lattice)
        except ClaimParseError as exc:
            reasons.append(f"unparseable claim: {exc.reason} (claimed {claim!r}); write it as e.g. "
                           f"'O(n^3)', 'O(L 2^(2L))' or 'O(n 2^n)'")
    timings = [(int(n), float(t)) for n, t in timings if t is not None and math.isfinite(t) and t >= 0]
    static = static_evidence(code)
    fit = fit_growth(timings)

    live: list[StaticFinding] = []
    for f in static:
        if f.implies is None:
            continue
        refuted = _contradicting_run(f.implies, timings)
        if refuted:
            n, t = refuted
            reasons.append(f"not counted: {f.detail}, yet the code finished n = {n} in {t:.3g} s, "
                           f"which that cost would not allow")
        else:
            live.append(f)
    static_bound = max((f.implies for f in live), key=growth_key, default=None)
    timing_bound = fit.established if fit.usable else None
    sources = [g for g in (static_bound, timing_bound) if g is not None]
    measured_growth = max(sources, key=growth_key) if sources else None

    measured = None
    if measured_growth is not None:
        origin = [w for w, g in (("the code", static_bound), (f"timings over {fit.span}", timing_bound))
                  if g is not None and g.rank == measured_growth.rank]
        measured = f"{measured_growth.describe()} (from {' and '.join(origin)})"
    else:
        reasons.append(f"nothing measured: no costly construct found in the code, and {fit.detail}")

    honest = None
    if claimed_growth is not None and measured_growth is not None:
        honest = at_least(claimed_growth, measured_growth)
        reasons.insert(0, _judgement(claim, claimed_growth, honest, live, static_bound, fit, measured_growth))
    elif measured_growth is not None and fit.usable:
        reasons.append(f"measured: time grows like {fit.growth.describe()} ({fit.detail})")

    against = frontier_contradiction(claimed_growth, frontier, timings, first_ladder_n)
    if against is not None:
        honest = False
        reasons = [r for r in reasons if not r.startswith("nothing measured")]
        reasons.insert(0, f"claimed {claim} ({claimed_growth.describe()}) but it {against}")
        if measured is None:
            measured = f"more than the claim allows (from the ladder: out of {frontier.kind} at n={frontier.n})"
    elif honest is None and claimed_growth is not None:
        support = _support(claimed_growth, code, timings, last_ladder_n)
        if support:
            honest = True
            reasons = [r for r in reasons if not r.startswith("nothing measured")]
            reasons.insert(0, f"claimed {claim} ({claimed_growth.describe()}) agrees with " + " and ".join(support))
    return ComplexityFinding(claim, claimed_growth, measured, measured_growth, static, honest, reasons, fit)


def _support(claimed: Growth, code: str, timings, last_ladder_n: int | None = None) -> list[str]:
    """Evidence that the cost is within the claim when nothing costly was measured."""
    out = []
    estimate = static_estimate(code)
    if estimate is not None and at_least(claimed, estimate.implies):
        out.append(f"the code, whose costliest construct {estimate.sentence()}")
    ceiling = timing_ceiling_support(claimed, timings)
    if ceiling:
        out.append(f"its timings: {ceiling}")
    elif not out and estimate is None:   # the weakest reading: only when nothing stronger, or against it, is there
        within = ladder_within_claim(claimed, timings, last_ladder_n)
        if within:
            out.append(within)
    return out


def _judgement(claim, claimed: Growth, honest: bool, live, static_bound, fit: Fit, measured: Growth) -> str:
    head = f"claimed {claim} ({claimed.describe()})"
    evidence = []
    strong = [f for f in live if f.implies is not None and growth_key(f.implies) == growth_key(static_bound)]
    if strong and (not honest or static_bound.rank == measured.rank):
        evidence.append("the code " + "; ".join(f.sentence() for f in strong[:2]))
    if fit.usable and (honest or not at_least(claimed, fit.established)):  # timings that support the verdict
        evidence.append(f"its time grows like {fit.established.describe()} over {fit.span}")
        if fit.established != fit.growth:
            evidence[-1] += f" (best reading {fit.growth.describe()}, not beyond noise)"
    elif fit.usable:
        evidence.append(f"its timings over {fit.span} do not show it yet ({fit.established.describe()})")
    else:
        evidence.append(f"its timings say little ({fit.detail.removeprefix('timings not usable: ')})")
    if honest:
        return f"{head} covers the measured cost: " + " and ".join(evidence)
    return f"{head} but " + " and ".join(evidence) + f": the cost is at least {measured.describe()}"


def _contradicting_run(g: Growth, timings) -> tuple[int, float] | None:
    """A completed (n, seconds) too fast for cost ``g`` (more than 1e11 steps per second)."""
    for n, t in sorted(timings, key=lambda p: -p[0]):
        if log2_steps(g, n) - math.log2(max(t, MIN_SECONDS)) > math.log2(MAX_STEPS_PER_SECOND):
            return n, t
    return None


def ladder_timings(rungs) -> list[tuple[int, float]]:
    """(n, seconds) of every Verdict rung that produced a value (probe and ladder stages)."""
    return [(r.n, r.seconds) for r in rungs if r.rel_err is not None and r.seconds]


@dataclass(frozen=True)
class TimingRuns:
    """What ``time_sizes`` measured: (n, seconds) pairs, and what it cost."""

    points: list[tuple[int, float]]
    runs: int = 0               # sandbox runs
    calls: int = 0              # calls that completed
    candidate_s: float = 0.0    # seconds inside the candidate's calls


def measure_times(code: str, function: str, task, sizes, sandbox, repeats: int = 3, budget_s: float = 20.0,
                  seed: int = 0, memory_mb: int = 2048, total_s: float = 120.0,
                  batched: bool = False) -> list[tuple[int, float]]:
    """(n, seconds) pairs of ``time_sizes`` (see there)."""
    return time_sizes(code, function, task, sizes, sandbox, repeats, budget_s, seed, memory_mb, total_s, batched).points


def time_sizes(code: str, function: str, task, sizes, sandbox, repeats: int = 3, budget_s: float = 20.0,
               seed: int = 0, memory_mb: int = 2048, total_s: float = 120.0, batched: bool = False) -> TimingRuns:
    """Time ``function`` ("Z_efficient" or "log_Z") of ``code`` at extra ``sizes`` (n, spins).

    Sizes run in increasing order, each up to ``repeats`` times (a call longer than ``budget_s / 4``
    is timed precisely enough once); the minimum seconds per size is kept, since load on the
    machine only adds time. A call that runs longer than ``budget_s`` (it is killed), fails or
    exhausts memory ends the measurement; so does ``total_s`` of time spent. Sizes the task does
    not define (``task.check_size``) are skipped. Parameters come from ``task.probe_params(n, seed,
    0)``. Values are not checked here: this is timing only.

    ``batched=False`` gives every call a sandbox run of its own. ``batched=True`` runs each repeat
    as one sandbox run calling every size once, in increasing order, with ``budget_s`` per call
    (the sandbox kills the run at the first call over it): the first run climbs the sizes and
    stops where the rule above says, later runs repeat the quick sizes it reached (a failure
    there ends that repeat only). The same calls under the same budgets, with one run's overhead
    instead of one per call. A run never calls the same size twice, so nothing a candidate keeps
    between calls (a cache keyed by its parameters or by n) can shorten a timed call.
    """
    todo = []
    for n in sorted(set(int(s) for s in sizes)):
        try:
            todo.append((n, task.probe_params(n, seed, 0)))
        except ValueError:
            continue
    if batched:
        return _time_batched(code, function, todo, sandbox, max(1, repeats), budget_s, memory_mb, total_s)
    return _time_one_by_one(code, function, todo, sandbox, max(1, repeats), budget_s, memory_mb, total_s)


def _time_one_by_one(code, function, todo, sandbox, repeats, budget_s, memory_mb, total_s) -> TimingRuns:
    limits = Limits(timeout_s=budget_s, cpu_s=int(budget_s) + 5, memory_mb=memory_mb)
    out: list[tuple[int, float]] = []
    spent, runs, calls = 0.0, 0, 0
    for n, params in todo:
        best = math.inf
        for _ in range(repeats):
            report = sandbox.run(code, [Call(function, params, n)], limits)
            runs += 1
            res = report.results[0] if report.results else None
            if report.timed_out or report.memory_exhausted or res is None or not res.ok:
                if best < math.inf:
                    out.append((n, best))
                return TimingRuns(out, runs, calls, spent)
            best = min(best, res.seconds)
            spent += res.seconds
            calls += 1
            if res.seconds > budget_s / 4:  # a slow call is timed precisely enough once
                break
        out.append((n, best))
        if best > budget_s or spent > total_s:
            break
    return TimingRuns(out, runs, calls, spent)


def _time_batched(code, function, todo, sandbox, repeats, budget_s, memory_mb, total_s) -> TimingRuns:
    best: dict[int, float] = {}
    spent, runs, calls = 0.0, 0, 0
    for rep in range(repeats):
        # the first pass climbs the sizes; later passes repeat the quick ones it reached
        batch = todo if rep == 0 else [(n, p) for n, p in todo if n in best and best[n] <= budget_s / 4]
        room = total_s - spent
        if not batch or room <= 0:
            break
        limits = Limits(timeout_s=room + budget_s, cpu_s=int(room + budget_s) + 5, memory_mb=memory_mb,
                        call_timeout_s=budget_s)
        report = sandbox.run(code, [Call(function, p, n) for n, p in batch], limits)
        runs += 1
        for (n, _), res in zip(batch, report.results):
            if not res.ok:
                break
            best[n] = min(res.seconds, best.get(n, math.inf))
            spent += res.seconds
            calls += 1
            if rep == 0 and spent > total_s:
                break
        if rep == 0:  # the climb ends where the first pass stopped (a failure, a killed call, the total)
            todo = [(n, p) for n, p in todo if n in best]
    return TimingRuns(sorted(best.items()), runs, calls, spent)


def suggest_sizes(timings: list[tuple[int, float]], lattice: bool, count: int = 6) -> list[int]:
    """Extra sizes worth timing, ascending: on a lattice every side L from the last size below
    the timer noise up to 4 beyond the largest timed side; with n <= 64 (exponential territory)
    even n in steps of 2 up to 12 beyond; else doublings beyond the largest n and geometric
    midpoints between timed sizes. ``measure_times`` stops at its budget, so overshooting is cheap.
    """
    have = sorted({int(n) for n, _ in timings})
    if not have:
        return []
    quiet = [n for n, t in timings if t < MIN_SECONDS]
    start = max(quiet) if quiet else have[0]
    top = have[-1]
    if lattice:
        side = math.isqrt(top)
        cands = [L * L for L in range(max(3, math.isqrt(start)), side + 5)]
    elif top <= 64:
        cands = list(range(max(4, start - start % 2), top + 13, 2))
    else:
        cands = [top * 2 ** k for k in range(1, count + 1)]
        cands += [int(round(math.sqrt(a * b))) for a, b in zip(have, have[1:]) if b >= 2.5 * a and a >= start]
    return sorted(n for n in set(cands) if n not in have and n > start)[:count]
