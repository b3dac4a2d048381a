"""What a run's limits say about its cost, for or against a claimed complexity.

Two readings the fitted timings cannot give:

- against: the ladder's frontier. A candidate that ran out of its call's time or memory at size
  n (whoever raised the MemoryError: the sandbox or the code itself) has a cost there that a
  polynomial claim must explain. A polynomial claim that cannot reach the first ladder size is
  dishonest outright (the first rung is chosen small for every task); at a later size the claim
  is held against what it predicts from the last size that finished: time t (n / m)^(d + 0.75)
  well inside the budget, or memory of at most ``BYTES_PER_STEP`` per step of cost n^(d + 0.75).
- for: a ceiling. A size n finished in t seconds took at most t * 1e11 elementary steps, so a
  cost n^e with n^e above that is impossible: when that rules out every degree above the claim
  (plus 0.75 for logs and noise), the timings confirm the claim, even when they are all too fast
  to fit (a closed form: n = 100000 in a millisecond).
- for: the whole ladder within the claim (:func:`ladder_within_claim`). A program too fast for the
  timer (a closed form, an O(n) loop in numpy) gives no fit and, claiming O(1) or O(n), no ceiling
  either. When its sizes reach the task's last ladder size and span a factor ``LADDER_SPAN`` in n,
  and from the smallest size to every larger one its time grew no more than the claim allows
  (the claim's growth times n^0.75 for logs, plus ``MIN_SECONDS`` of noise a call's time carries),
  the measured cost stayed at or below the claim wherever it was measured: the claim is honest on
  that evidence, and the verdict says it is that evidence (a cost that stays within the noise at
  every size cannot be told from a smaller one). The code's own costliest construct, when it
  costs more than the claim, is not overruled by it.
"""

from __future__ import annotations

import math

from evaluators.checks.growth import Growth, log2_steps
from evaluators.checks.timing_fit import MIN_SECONDS
from evaluators.verdict import Frontier

DEGREE_SLACK = 0.75           # as in growth.at_least: log factors and timing noise
MAX_STEPS_PER_SECOND = 1e11   # no Python/numpy code on 2 cores does more elementary steps than this
BYTES_PER_STEP = 1e4          # a generous ceiling on the memory one step of cost can claim
PREDICTED_SHARE = 0.25        # a claim predicting less than this share of the budget is contradicted


def frontier_contradiction(claimed: Growth | None, frontier: Frontier | None, timings: list[tuple[int, float]],
                           first_ladder_n: int | None) -> str | None:
    """Why the ladder's frontier contradicts a polynomial claim (a sentence), or None."""
    if claimed is None or not claimed.polynomial or frontier is None or frontier.kind not in ("time", "memory"):
        return None
    n, what = frontier.n, _budget_text(frontier)
    head = f"could not finish n={n} within {what} ({frontier.detail})"
    if first_ladder_n is not None and n <= first_ladder_n:
        return (f"{head}, and n={n} is the first size beyond the probes: a {claimed.describe()} program reaches it "
                f"(a frontier is evidence about cost)")
    done = [(m, t) for m, t in timings if m < n and t is not None]
    if not done:
        return None
    degree = claimed.rate + DEGREE_SLACK
    if frontier.kind == "time" and frontier.budget_s:
        m, t = max(done)
        predicted = max(t, MIN_SECONDS) * (n / m) ** degree
        if predicted < PREDICTED_SHARE * frontier.budget_s:
            return (f"{head}, yet from {t:.3g} s at n={m} a cost of {claimed.describe()} predicts about "
                    f"{predicted:.2g} s there")
    if frontier.kind == "memory" and frontier.memory_mb:
        ceiling = BYTES_PER_STEP * n ** degree
        if ceiling < frontier.memory_mb * 2 ** 20:
            return (f"{head}, yet a cost of {claimed.describe()} cannot touch more than about "
                    f"{ceiling / 2 ** 20:.3g} MB at n={n}")
    return None


def timing_ceiling_support(claimed: Growth | None, timings: list[tuple[int, float]]) -> str | None:
    """A sentence when some finished (n, seconds) rules out every cost above the claim, else None."""
    if claimed is None or not claimed.polynomial or math.isinf(claimed.rate):
        return None
    degree = claimed.rate + DEGREE_SLACK
    for n, t in sorted(timings, key=lambda p: -p[0]):
        if n > 1 and degree * math.log10(n) > math.log10(max(t, MIN_SECONDS) * MAX_STEPS_PER_SECOND):
            return (f"it finished n={n} in {t:.2g} s, which no cost of n^{degree:.3g} or more allows "
                    f"(at most {MAX_STEPS_PER_SECOND:.0e} steps per second)")
    return None


LADDER_SPAN = 100.0          # the sizes timed must span this factor in n for the ladder reading


def ladder_within_claim(claimed: Growth | None, timings: list[tuple[int, float]],
                        last_ladder_n: int | None) -> str | None:
    """A sentence when the measured cost stays at or below the claim over the whole ladder (see the
    module docstring), else None."""
    if claimed is None or last_ladder_n is None or math.isinf(claimed.rate):
        return None
    best: dict[int, float] = {}
    for n, t in timings:
        if n > 0 and t is not None and math.isfinite(t) and t >= 0:
            best[int(n)] = min(t, best.get(int(n), math.inf))
    sizes = sorted(best)
    if not sizes or sizes[-1] < last_ladder_n or sizes[-1] < LADDER_SPAN * sizes[0]:
        return None
    n0 = sizes[0]
    base = math.log2(max(best[n0], 1e-9))
    for n in sizes[1:]:
        # what the claim lets the smallest size's time grow to, plus the noise a call's time carries
        grown = base + log2_steps(claimed, n) - log2_steps(claimed, n0) + DEGREE_SLACK * math.log2(n / n0)
        if grown < 60 and best[n] > 2.0 ** grown + MIN_SECONDS:
            return None
    top = sizes[-1]
    quiet = all(t < MIN_SECONDS for t in best.values())
    floor = (f"; every time was under {MIN_SECONDS * 1e3:g} ms, the calls' noise, so a cost smaller than the "
             "claim looks the same" if quiet else "")
    return (f"its timings over the whole ladder: {len(sizes)} sizes from n={n0} to n={top} (the last ladder size "
            f"{last_ladder_n} included) took {best[n0]:.2g} s to {best[top]:.2g} s, never growing faster than "
            f"{claimed.describe()} allows (within {MIN_SECONDS * 1e3:g} ms of noise), so its measured cost stayed "
            f"at or below the claim{floor}")


def _budget_text(frontier: Frontier) -> str:
    if frontier.kind == "time":
        return f"the call's budget of {frontier.budget_s:.0f} s" if frontier.budget_s else "its time budget"
    return f"the call's budget of {frontier.memory_mb} MB" if frontier.memory_mb else "its memory budget"
