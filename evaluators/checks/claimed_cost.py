"""What a candidate's own exponential claim says a call at size n would cost, from its last
measured call: used to skip calls the claim itself says cannot finish.

A program that claims O(n 2^n) and took 5 ms at n = 16 says a call at n = 64 needs about
2^48 times as long. The ladder used to run that call anyway and kill it at the rung budget
(20 s), and the judge's extra timing sizes did the same at their 8 s budget: about a minute of
evaluator time per honest enumeration, to learn what the candidate had said. Now such a call is
not run when its claimed price is over ``MARGIN`` times the call's budget on the ladder (a value
verified there is worth a long shot), or over the budget itself for an extra timing size (a
killed timing call measures nothing).

Only exponential claims (in n or in sqrt(n)) are priced. A polynomial claim is never taken at its
word: running out of time at a size it reaches is the evidence the complexity audit holds
against it (``cost_evidence``), so those calls always run. A claim of unstated rate (``2^poly``,
``n!``) or one that does not parse prices nothing. The price uses the growth class only (its
polynomial prefactor dropped), so it underestimates and skips later rather than sooner.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from evaluators.checks.complexity_claim import ClaimParseError, parse_claim
from evaluators.checks.growth import Growth, log2_steps

#: a call is skipped when its claimed price exceeds this many times its budget
MARGIN = 50.0


@dataclass(frozen=True)
class ClaimedPrice:
    """The claimed growth, anchored at a measured call: ``seconds_at(n0) == t0``."""

    growth: Growth
    claim: str
    n0: int
    t0: float

    def seconds_at(self, n: int) -> float:
        """Claimed seconds of one call at size n (n spins); inf when it overflows a float."""
        exponent = log2_steps(self.growth, n) - log2_steps(self.growth, self.n0)
        return self.t0 * 2.0 ** exponent if exponent < 1000 else math.inf

    def too_costly(self, n: int, budget_s: float, margin: float = MARGIN) -> str | None:
        """Why a call at size n is not worth running under ``budget_s``, or None to run it."""
        price = self.seconds_at(n)
        if price <= margin * budget_s:
            return None
        shown = f"{price:.2g} s" if math.isfinite(price) else "more than 1e300 s"
        return (f"not run: the claimed cost {self.claim} scaled from {self.t0:.2g} s at n={self.n0} prices a call "
                f"at n={n} at {shown}, over " + (f"{margin:g} times " if margin != 1 else "") +
                f"the call's budget of {budget_s:g} s")


def claimed_price(claim: str | None, lattice: bool, timings: list[tuple[int, float]]) -> ClaimedPrice | None:
    """The price of an exponential ``claim`` anchored at the largest size timed (its fastest
    call: load only adds time, so this prices low); None when the claim is not priced (see the
    module doc) or nothing was timed."""
    measured = [(n, t) for n, t in timings if t > 0]
    if not measured:
        return None
    try:
        growth = parse_claim(claim, lattice)
    except ClaimParseError:
        return None
    if growth.polynomial or not math.isfinite(growth.rate) or growth.rate <= 0:
        return None
    n0 = max(n for n, _ in measured)
    t0 = min(t for n, t in measured if n == n0)
    return ClaimedPrice(growth, str(claim), int(n0), float(t0))
