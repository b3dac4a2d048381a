"""Rungs from physics for Tier 2 programs: identities of the Nishimori line checked on the
candidate at sizes beyond those verified, where no exact oracle is needed, so that a program right
at small sizes and wrong at large ones is caught anyway.

Decoding tasks (T21, T18: :mod:`evaluators.decoding.codes`). Errors are drawn from the noise model
at (L, p) for a size L_s verified before and L_l = 2 L_s, at p_low below the threshold and p_high
above it (200 errors each, 600 at (L_l, p_high), where a wrong posterior shows most: measured on
T21 at L = 8, a class bias of e gives z ~ -11 there, a model at 0.6 p z ~ -6, an exact program
|z| <= 2.1 over six seeds); the candidate gives every class's P(a, S) of each syndrome. With pi(a) = P(a, S) / sum_b
P(b, S) its posterior and a_E the error's own class:

- ``nishimori_calibration``: E[1{argmax pi = a_E}] = E[max pi]. On the Nishimori line the decoder's
  model is the noise model, so given S the class is distributed as pi and both sides are the ML
  success probability; a program whose probabilities are off (biased, at the wrong temperature)
  is right less often than it claims, or more. Tested at p_high on the per-sample differences
  (at p_low a miss is a rare event: with a few hundred errors the mean difference is far from
  normal, and an exact program scored z = +3.3 there on two seeds of two).
- ``success_trend``: the success probability (the indicator's mean, which needs no trust in the
  program) does not fall significantly from L_s to L_l at p_low, nor rise at p_high.

Disorder averages on the Nishimori line (T19, T20): ``nishimori_identity``: the candidate's value at
4 and 16 times the largest verified size equals the identity (T19: [<H>] = -N_B J (1 - 2p); T20:
(cosh beta J / cosh beta_N J)^N_B), on typical, critical and cold draws.

A failure is a numerical failure (the verdict rejects), named with its size and statistic. Too
slow for the budget (a pilot call times the candidate first; an exponential claim is priced out
beforehand, as on the ladder) is a note, not a failure. Tests use z = 4 (a false alarm per
statistic ~6e-5 for an exact program); every draw is seeded.
"""

from __future__ import annotations

import math
import time
import zlib
from dataclasses import dataclass, field

import numpy as np

from evaluators.checks.claimed_cost import claimed_price
from evaluators.comparison import passes, relative_error
from evaluators.decoding.codes import DecodingCode, decoding_code
from evaluators.sandbox import Call, Limits, Sandbox
from evaluators.verdict import Rung
from tasks.base import Task
from tasks.family import side_is_sqrt_n

_STREAM = 0x4E15     # the rungs' own random stream ("NIShimori")


@dataclass(frozen=True)
class NishimoriBudget:
    total_s: float = 60.0       # every sandbox run of the rungs together
    pilot_s: float = 15.0       # the pilot run that times the candidate at the largest size
    samples: int = 200          # errors per (L, p) ...
    decisive: int = 3           # ... times this at (L_l, p_high), where a wrong posterior shows most
    z: float = 4.0
    p_low: float = 0.05
    p_high: float = 0.2
    memory_mb: int = 2048


@dataclass
class RungsOutcome:
    rungs: list[Rung] = field(default_factory=list)
    failure: str | None = None
    notes: list[str] = field(default_factory=list)


def nishimori_rungs(task: Task, code: str, uses_log_z: bool, sandbox: Sandbox, verified_n: int, seed: int = 0,
                    budget: NishimoriBudget = NishimoriBudget(), claim: str | None = None,
                    timings: list[tuple[int, float]] = ()) -> RungsOutcome:
    """The rungs that apply to ``task`` (none for a task off the Nishimori line), above
    ``verified_n`` (the largest size verified so far)."""
    if getattr(task, "tier", 1) != 2 or not getattr(task, "nishimori_line", False):
        return RungsOutcome()
    dc = decoding_code(task)
    if dc is not None:
        return _decoding(task, dc, code, uses_log_z, sandbox, verified_n, seed, budget, claim, list(timings))
    return _identity(task, code, uses_log_z, sandbox, verified_n, seed, budget)


def _rng(task: Task, seed: int, *words: int) -> np.random.Generator:
    return np.random.default_rng([zlib.crc32(task.id.encode()), int(seed), _STREAM, *words])


def _limits(seconds: float, memory_mb: int) -> Limits:
    return Limits(timeout_s=max(seconds, 1.0), cpu_s=int(max(seconds, 1.0)) + 5, memory_mb=memory_mb)


# -- decoding tasks -------------------------------------------------------------------------------

@dataclass
class _Point:
    L: int
    p: float
    log_p: np.ndarray          # (samples, classes)
    true_class: np.ndarray
    seconds: float

    def posterior(self) -> np.ndarray:
        top = self.log_p.max(axis=1, keepdims=True)
        w = np.exp(self.log_p - top)
        return w / w.sum(axis=1, keepdims=True)

    def indicator(self) -> np.ndarray:
        """1 when the top class is the error's, 1/k when k classes tie for the top."""
        top = self.log_p.max(axis=1, keepdims=True)
        ties = self.log_p == top
        return ties[np.arange(len(ties)), self.true_class] / ties.sum(axis=1)


def _ask(dc: DecodingCode, L: int, p: float, syn, fname: str, code: str, sandbox: Sandbox, seconds: float,
         memory_mb: int) -> tuple[np.ndarray | None, float, str | None, bool]:
    """(log P (count, classes) or None, seconds inside the calls, what went wrong, whether that
    was the budget running out rather than the program failing)."""
    calls = [Call(fname, dc.params(p, s, a), L * L) for s in syn for a in range(dc.classes)]
    report = sandbox.run(code, calls, _limits(seconds, memory_mb))
    spent = float(sum(r.seconds for r in report.results))
    where = f"at L = {L} (n = {L * L}), p = {p:g}"
    for r in report.results:
        if not r.ok:
            out_of = r.error_type == "MemoryError"
            return None, spent, f"{where} your code raised {r.error}", out_of
    if len(report.results) < len(calls):
        return None, spent, f"{where}: {report.error or 'the run ended early'}", report.timed_out or report.memory_exhausted
    values = np.array([r.value for r in report.results], dtype=float)
    if fname == "Z_efficient":
        with np.errstate(divide="ignore", invalid="ignore"):
            values = np.where(values > 0, np.log(np.where(values > 0, values, 1.0)), np.nan)
    if not np.all(np.isfinite(values)) or np.any(values > 1e-9):
        bad = values[~(np.isfinite(values) & (values <= 1e-9))][0]
        return None, spent, f"{where} your code returned {bad!r} for a log probability", False
    return values.reshape(len(syn), dc.classes), spent, None, False


def _decoding(task, dc, code, uses_log_z, sandbox, verified_n, seed, budget, claim, timings) -> RungsOutcome:
    out = RungsOutcome()
    L_s = max(dc.min_L, math.isqrt(max(verified_n, 1)))
    L_l = 2 * L_s
    price = claimed_price(claim, side_is_sqrt_n(task, claim), timings)
    why = price.too_costly(L_l * L_l, budget.pilot_s) if price is not None else None
    if why is not None:
        out.notes.append(f"not run at L = {L_l}: {why.removeprefix('not run: ')}")
        return out
    fname = "log_Z" if uses_log_z else "Z_efficient"
    started = time.monotonic()
    syn, _ = dc.draw(_rng(task, seed, L_l, 0), L_l, budget.p_high, 2)
    _, pilot_s, err, frontier = _ask(dc, L_l, budget.p_high, syn, fname, code, sandbox, budget.pilot_s, budget.memory_mb)
    if err is not None:
        if frontier:
            out.notes.append(f"inconclusive: the pilot {err}")
        else:
            out.failure = f"On the Nishimori rungs (fresh errors beyond the verified sizes), {err}."
        return out
    per_sample = max(pilot_s / 2, 1e-4)
    remaining = budget.total_s - (time.monotonic() - started)
    counts = (budget.samples, budget.samples, budget.samples, budget.decisive * budget.samples)
    # the counts are fixed (the same errors on every machine); the small size costs less than the
    # large one, so pricing every error at L_l is safe
    if sum(counts) * per_sample > remaining:
        out.notes.append(f"inconclusive: at {per_sample:.2g} s per error at L = {L_l}, {sum(counts)} errors need "
                         f"{sum(counts) * per_sample:.0f} s, more than the {remaining:.0f} s left of the budget")
        return out
    points = []
    for k, (L, p) in enumerate(((L_s, budget.p_low), (L_l, budget.p_low), (L_s, budget.p_high), (L_l, budget.p_high))):
        syn, true_class = dc.draw(_rng(task, seed, L, 1 + k), L, p, counts[k])
        left = budget.total_s - (time.monotonic() - started)
        log_p, spent, err, frontier = _ask(dc, L, p, syn, fname, code, sandbox, left, budget.memory_mb)
        if err is not None:
            if frontier:
                out.notes.append(f"inconclusive: {err}")
            else:
                out.failure = f"On the Nishimori rungs (fresh errors beyond the verified sizes), {err}."
            return out
        points.append(_Point(L, p, log_p, true_class.astype(np.int64), spent))
    out.failure = _judge_points(points, budget.z, out.rungs)
    return out


def _mean_se(x: np.ndarray) -> tuple[float, float]:
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(len(x)))


def _judge_points(points: list[_Point], z: float, rungs: list[Rung]) -> str | None:
    failures = []
    for pt in points[2:]:        # p_high only: at p_low a miss is a rare event, and a mean of rare events is not normal
        ind, claimed = pt.indicator(), pt.posterior().max(axis=1)
        d, se = _mean_se(ind - claimed)
        zd = d / se if se > 0 else (0.0 if d == 0 else math.inf)
        ok = abs(zd) <= z
        note = (f"nishimori_calibration: right {ind.mean():.3f} of the time, claims {claimed.mean():.3f} "
                f"(z = {zd:+.1f}, {len(ind)} errors)")
        rungs.append(Rung(n=pt.L * pt.L, seconds=pt.seconds, rel_err=None, passed=ok, stage="nishimori",
                          draw=f"p = {pt.p:g}", note=note))
        if not ok:
            failures.append(f"at L = {pt.L} (n = {pt.L * pt.L}), p = {pt.p:g}, over {len(ind)} errors drawn from the "
                            f"noise model, the class you rank first is right {ind.mean():.3f} of the time but your "
                            f"probabilities claim {claimed.mean():.3f} on average (z = {zd:+.1f}); for the exact "
                            "P(a, S) the two agree (the Nishimori identity of decoding)")
    for low, high in ((points[0], points[1]), (points[2], points[3])):
        a, sa = _mean_se(low.indicator())
        b, sb = _mean_se(high.indicator())
        diff, se = b - a, math.hypot(sa, sb)
        below = low is points[0]
        zd = diff / se if se > 0 else 0.0
        ok = zd >= -z if below else zd <= z
        way = "rise" if below else "fall"
        rungs.append(Rung(n=high.L * high.L, seconds=0.0, rel_err=None, passed=ok, stage="nishimori",
                          draw=f"p = {low.p:g}", note=f"success_trend: L = {low.L} -> {high.L}: {a:.3f} -> {b:.3f} "
                                                      f"(should {way}; z = {zd:+.1f})"))
        if not ok:
            failures.append(f"at p = {low.p:g} ({'below' if below else 'above'} the threshold) your decoder's success "
                            f"goes from {a:.3f} at L = {low.L} to {b:.3f} at L = {high.L} (z = {zd:+.1f}): the ML "
                            f"decoder's success must {way} with L there")
    if not failures:
        return None
    return "On the Nishimori rungs (fresh errors beyond the verified sizes), " + "; ".join(failures) + "."


# -- disorder averages on the Nishimori line --------------------------------------------------------

def _identity(task, code, uses_log_z, sandbox, verified_n, seed, budget) -> RungsOutcome:
    out = RungsOutcome()
    fname = "log_Z" if uses_log_z else "Z_efficient"
    for factor in (4, 16):
        L = math.isqrt(max(verified_n, 9) * factor)
        n = L * L
        base = task.probe_params(n, seed + _STREAM, 0)
        draws = [("typical", base, "")]
        for kind, made in (("cold", task.cold_params(base, n, _rng(task, seed, n))), ("critical", task.critical_params(base, n))):
            if made is not None:
                draws.append((kind, made[0], made[1]))
        refs = []
        for kind, params, note in draws:
            own = task.own_reference(params, n, "auto")
            if own is None or own[1] != "nishimori_identity":
                return out
            refs.append(own[0])
        report = sandbox.run(code, [Call(fname, params, n) for _, params, _ in draws], _limits(budget.pilot_s, budget.memory_mb))
        for (kind, params, note), ref, res in zip(draws, refs, report.results):
            if not res.ok:
                out.failure = f"On the Nishimori rungs at n = {n} ({note or 'a typical draw'}), your code raised {res.error}."
                return out
            err, why = relative_error(res.value, ref, returns_log=uses_log_z, positive=task.quantity.positive)
            ok = err is not None and passes(err, ref if task.quantity.positive else 0.0)
            out.rungs.append(Rung(n=n, seconds=res.seconds, rel_err=None, passed=ok, stage="nishimori", draw=kind,
                                  note=f"nishimori_identity: relative error {err:.2e}" if err is not None else why))
            if not ok:
                out.failure = (f"On the Nishimori rungs at n = {n} ({note or 'a typical draw'}), your value disagrees "
                               f"with the Nishimori identity: " + (f"relative error {err:.2e}" if err is not None else why) + ".")
                return out
        if len(report.results) < len(draws):
            out.notes.append(f"inconclusive at n = {n}: {report.error or 'the run ended early'}")
            return out
    return out


def nishimori_stage(task: Task, sub, v, sandbox: Sandbox, seed: int, budget: NishimoriBudget, uses_log_z: bool,
                    timings: list[tuple[int, float]]) -> None:
    """Run the rungs after the ladder and record them in the Verdict ``v``: rungs in
    ``v.numerical.rungs`` (stage "nishimori"), a failure as a numerical failure with its feedback,
    notes as feedback lines."""
    out = nishimori_rungs(task, sub.code, uses_log_z, sandbox, v.numerical.largest_n_verified, seed, budget,
                          sub.complexity_O, timings)
    num = v.numerical
    num.rungs.extend(out.rungs)
    lines = []
    if out.failure:
        num.passed = False
        num.failed += 1
        lines.append(out.failure)
        v.fail("promotion ladder", out.failure)      # a rung beyond the verified sizes, judged by an identity
    elif out.rungs:
        lines.append(f"Nishimori rungs: {len(out.rungs)} passed, up to n = {max(r.n for r in out.rungs)}.")
    lines += [f"Nishimori rungs: {note}." for note in out.notes]
    if lines:
        v.feedback = v.feedback + "\n" + "\n".join(lines)
