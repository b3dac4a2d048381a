"""Beyond the numbers: complexity honesty, class consistency and physical assertions for a
candidate whose values were right, filled into the Verdict in one pass.

Budgets keep a whole verification under about two minutes here: extra timing points and the
physical assertions each get a bounded slice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evaluators.checks.claimed_cost import claimed_price
from evaluators.checks.classes import check_class
from evaluators.checks.complexity import audit_complexity, ladder_timings, suggest_sizes, time_sizes
from evaluators.checks.physics import physical_assertions
from evaluators.checks.static_cost import StaticFinding
from evaluators.checks.timing_fit import fit_growth
from evaluators.profile import Profile, timed
from evaluators.sandbox import Sandbox
from evaluators.submission import Submission
from evaluators.verdict import Failure, Verdict
from tasks.base import Task
from tasks.family import family_structure, side_is_sqrt_n

Z_ONLY_MAX_N = 200  # a Z_efficient-only candidate overflows a float beyond a few hundred spins


@dataclass(frozen=True)
class JudgeBudget:
    timing_total_s: float = 20.0   # extra timing points for the complexity fit
    timing_call_s: float = 8.0     # one extra timing call
    physics_s: float = 25.0        # the whole physical-assertion run
    # the assertions' size: the largest verified one whose ladder call took at most this (their
    # dozen calls then cost about a second; the ladder has verified the values further up)
    physics_call_s: float = 0.1
    memory_mb: int = 2048
    batch_timing_runs: bool = True  # each repeat of the timing sizes in one sandbox run (False: one run per call)


@dataclass
class Judgement:
    lines: list[str]        # feedback, one line per failure found
    ok: bool                # the non-numerical parts allow acceptance
    failures: list[Failure] = field(default_factory=list)   # the same failures, typed (the Verdict keeps the first)


def judge(task: Task, sub: Submission, v: Verdict, sandbox: Sandbox, seed: int = 0,
          budget: JudgeBudget = JudgeBudget(), ladder_ran: bool = False, profile: Profile | None = None) -> Judgement:
    """Fill ``complexity``, ``class`` and ``physics`` of ``v``, whatever its numbers were.

    Acceptable when the claim parses and is not shown dishonest, the class is consistent, and
    every physical assertion that ran passed. ``ladder_ran``: the promotion ladder was climbed,
    so its frontier (``v.numerical.frontier``) is evidence about cost.
    """
    uses_log = task.quantity.positive and sub.defines("log_Z")   # log_Z of a signed quantity is not called
    function = "log_Z" if uses_log else "Z_efficient"
    timings = ladder_timings(v.numerical.rungs)
    square = side_is_sqrt_n(task, sub.complexity_O)     # "L" in the claim is sqrt(n)
    # a fit needs three sizes whose times stand well above timer noise and any fixed per-call
    # overhead, spread wide enough; else time more sizes
    with timed(profile, "timing_fit"):
        usable = fit_growth(timings).usable
    if not usable:
        extra_sizes = suggest_sizes(timings, square)
        price = claimed_price(sub.complexity_O, square, timings)
        if price is not None:   # sizes the candidate's own exponential claim says cannot finish
            extra_sizes = [n for n in extra_sizes if price.too_costly(n, budget.timing_call_s, margin=1.0) is None]
        with timed(profile, "timing_runs") as extra:
            timings, extra["candidate_s"], extra["note"] = _time_more_sizes(sub.code, function, task, sandbox, seed,
                                                                            budget, timings, extra_sizes)
    first_rung = min(task.ladder_sizes) if ladder_ran and task.ladder_sizes else None
    last_rung = max(task.ladder_sizes) if ladder_ran and task.ladder_sizes else None
    with timed(profile, "complexity_audit"):
        finding = audit_complexity(sub.complexity_O, sub.code, timings, square,
                                   frontier=v.numerical.frontier if ladder_ran else None, first_ladder_n=first_rung,
                                   last_ladder_n=last_rung)
    v.complexity = finding.to_verdict()

    with timed(profile, "class_analysis"):
        family = family_structure(task)
        cls = check_class(sub.tractable_class, family, finding.measured_growth, class_static_kinds(finding.static))
    v.class_.claimed, v.class_.consistent, v.class_.reasons = cls.claimed, cls.consistent, list(cls.reasons)

    n_phys, n_small = physics_sizes(task, v, uses_log, per_call_s=budget.physics_call_s)
    outcome = physical_assertions(task, sub.code, uses_log, sandbox, n_phys, n_small, seed=seed,
                                  timeout_s=budget.physics_s, memory_mb=budget.memory_mb, profile=profile)
    v.physics.checks = outcome.checks
    v.physics.passed = all(c.passed for c in outcome.checks) if outcome.checks else None

    lines: list[str] = []
    failures: list[Failure] = []
    if finding.claimed_growth is None or finding.honest is False:
        lines.append("Complexity: " + "; ".join(finding.reasons))
        failures.append(Failure("complexity audit", "; ".join(finding.reasons) or
                                f"claimed {finding.claimed}, measured {v.complexity.measured}"))
    if cls.consistent is not True:
        why = "; ".join(r for r in cls.reasons if r)
        lines.append("Tractable class: " + (why or "inconsistent"))
        failures.append(Failure("class consistency", why or f"{cls.claimed} is inconsistent"))
    failed: dict[str, list[str]] = {}          # one line per distinct reason (a raise fails them all alike)
    for c in outcome.checks:
        if not c.passed:
            failed.setdefault(c.detail, []).append(c.name)
            failures.append(Failure("physical assertion", c.detail, c.name))
    for detail, names in failed.items():
        listed = ", ".join(f"'{name}'" for name in names)
        lines.append(f"Physical assertion{'s' if len(names) > 1 else ''} {listed} failed: {detail}.")
    inconclusive: dict[str, list[str]] = {}
    for note in outcome.notes:
        name, _, why = note.partition(": ")
        inconclusive.setdefault(why, []).append(name)
    for why, names in inconclusive.items():
        lines.append(f"Physical assertion{'s' if len(names) > 1 else ''} {', '.join(names)}: {why}.")
    unconfirmed = _no_rung_beyond_probes(task, v, ladder_ran, finding.claimed_growth)
    if unconfirmed:
        lines.append("Complexity: " + unconfirmed)
        failures.append(Failure("complexity audit", unconfirmed))
    ok = (finding.claimed_growth is not None and finding.honest is not False and cls.consistent is True
          and v.physics.passed is not False and not unconfirmed)
    return Judgement(lines, ok, failures)


def _time_more_sizes(code: str, function: str, task: Task, sandbox: Sandbox, seed: int, budget: JudgeBudget,
                     timings: list[tuple[int, float]], sizes: list[int]) -> tuple[list[tuple[int, float]], float, str]:
    """``timings`` with the extra ``sizes`` timed, cheapest first: the sizes within the range
    already timed, then, only when the fit still cannot be made from them, the sizes beyond it
    (each doubling beyond the top costs twice the largest call so far). The fit's own rule decides,
    as before; only sizes it turned out not to need go untimed. Also the candidate's seconds and a
    note for the profile."""
    top = max((n for n, _ in timings), default=0)
    spent, runs, calls = 0.0, 0, 0
    for part in ([n for n in sizes if n < top], [n for n in sizes if n >= top]):
        room = budget.timing_total_s - spent
        if not part or room <= 0:
            continue
        measured = time_sizes(code, function, task, part, sandbox, repeats=2, budget_s=budget.timing_call_s,
                              seed=seed, memory_mb=budget.memory_mb, total_s=room, batched=budget.batch_timing_runs)
        timings = timings + measured.points
        spent, runs, calls = spent + measured.candidate_s, runs + measured.runs, calls + measured.calls
        if fit_growth(timings).usable:
            break
    return timings, spent, f"{runs} run(s), {calls} call(s)"


def _no_rung_beyond_probes(task: Task, v: Verdict, ladder_ran: bool, claimed) -> str | None:
    """An accepted polynomial claim needs at least one ladder size verified beyond the probes. Out
    of time or memory there is already dishonest (the audit); this covers a Z that overflows at the
    first size on every draw. The verifier's own limits (no oracle, its total budget) do not count."""
    f = v.numerical.frontier
    if not (ladder_ran and v.numerical.passed and task.ladder_sizes and claimed is not None and claimed.polynomial):
        return None
    if any(r.stage == "ladder" and r.passed for r in v.numerical.rungs) or f is None or f.kind != "overflow":
        return None
    return (f"a polynomial claim needs at least one size beyond the probes verified, and at n={f.n} every draw "
            f"overflowed: define log_Z(params, n) returning log Z")


def physics_sizes(task: Task, v: Verdict, uses_log: bool, per_call_s: float) -> tuple[int, int]:
    """(n for most assertions, n small enough that Z fits a float at low temperature).

    The main size is the largest verified one whose rung ran within ``per_call_s`` seconds, or
    the first verified ladder size when none did, so the dozen assertion calls go beyond the
    probes at a modest cost.
    """
    small = max(task.probe_sizes)
    verified = [r for r in v.numerical.rungs if r.passed and r.stage == "ladder" and r.n <= v.numerical.largest_n_verified]
    if not uses_log:   # a Z-only candidate: where Z fitted a float on the task's own parameters
        verified = [r for r in verified if r.draw == "typical" and r.n <= Z_ONLY_MAX_N]
    quick = [r.n for r in verified if r.seconds <= per_call_s]
    return max(quick, default=min((r.n for r in verified), default=small)), small


def class_static_kinds(static: list[StaticFinding]) -> list[str]:
    """The static findings in class-consistency's vocabulary (see ``classes.STATIC_KINDS``)."""
    out = []
    for f in static:
        g = f.implies
        if g is None:
            continue
        if f.kind == "enumeration":
            out.append("enumerates_2^n" if g.kind == "exp" else "enumerates_2^L" if g.kind == "exp_sqrt" else "")
        elif f.kind == "dense_matrix" and g.kind != "poly":
            out.append("dense_2^L_matrix" if g.kind == "exp_sqrt" else "enumerates_2^n")
        elif f.kind == "loop_nest" and g.kind == "poly":
            out.append(f"nested_loops_n^{round(g.rate)}")
        elif f.kind == "dense_linalg":
            out.append({"poly": "dense_linalg_n^3", "exp_sqrt": "dense_2^L_matrix", "exp": "enumerates_2^n"}[g.kind])
    return [k for k in out if k]
