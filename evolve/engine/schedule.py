"""The order a generation's evaluations are queued in: the expected longest first.

Most of an evaluation is its ladder: a program climbs the task's sizes until a call runs out of
its budget or the top rung is passed, so a program that claims O(n^3) runs for many seconds at
the top rungs while a transfer matrix claiming O(L^2 2^L) is stopped by its own claim a few
rungs up. Queued in slot order, a long one often started last and the other evaluators idled
until it ended (``evolve perf search`` on P04: a dense O(n^3) Pfaffian, 15 s at n = 1024, queued
behind three 2 s programs, with the second evaluator idle for 12 s). Longest first is the
classic cure for that tail.

Only the order changes: the engine hands the results to the strategy in slot order whichever
ends first, so a run makes the same choices. A claim is untrusted, but here it only decides
when its own program runs: a false one costs its run some idle time, nothing else.
"""

from __future__ import annotations

from evaluators.checks.complexity_claim import ClaimParseError, parse_claim
from search.candidate import Candidate

UNKNOWN_WEIGHT = 1.0   # a claim that does not parse: as long as a linear one


def expected_weight(candidate: Candidate, lattice: bool) -> float:
    """How long the evaluation of ``candidate`` is expected to run, as an order only: the
    polynomial degree of its claimed cost (infinite for "poly(n)"); 0 for an exponential claim
    (its own claim stops the ladder early); ``UNKNOWN_WEIGHT`` when the claim does not parse."""
    try:
        growth = parse_claim(candidate.complexity_O, lattice)
    except ClaimParseError:
        return UNKNOWN_WEIGHT
    if not growth.polynomial:
        return 0.0
    return float(growth.rate)


def longest_first(candidates: list[Candidate], lattice: bool) -> list[Candidate]:
    """``candidates`` by decreasing :func:`expected_weight`; ties keep their order (slot order)."""
    return sorted(candidates, key=lambda c: -expected_weight(c, lattice))
