"""What a run has spent, and the budget rule that stops it."""

from __future__ import annotations

from dataclasses import dataclass

from evaluators.checks.complexity_claim import ClaimParseError, parse_claim


@dataclass
class Counters:
    generation: int = 0
    proposals: int = 0
    evaluations: int = 0
    accepted: int = 0
    conclusive: int = 0           # accepted programs that settle the task (see ``conclusive``)
    duplicates: int = 0
    failed_proposals: int = 0
    tokens: int = 0
    usd: float = 0.0
    elapsed_s: float = 0.0        # wall time spent by this run, across resumes


def stop_reason(budgets, c: Counters, elapsed_s: float) -> str | None:
    """Why the run must not start another generation (``budgets``: the config's ``budgets:``), or None."""
    b = budgets
    if c.proposals >= b.proposals:
        return f"proposal budget reached ({b.proposals})"
    if c.evaluations >= b.evaluations:
        return f"evaluation budget reached ({b.evaluations})"
    if elapsed_s >= b.wall_time_s:
        return f"wall-time budget reached ({b.wall_time_s:.0f} s)"
    if b.tokens is not None and c.tokens >= b.tokens:
        return f"token budget reached ({b.tokens})"
    if b.usd is not None and c.usd >= b.usd:
        return f"USD budget reached ({b.usd})"
    if b.stop_when_accepted and c.conclusive > 0:
        return "an accepted program was found (stop_when_accepted)"
    return None


def conclusive(tractable_class: str, complexity: str, lattice: bool) -> bool:
    """Whether an accepted program settles its task, so that ``stop_when_accepted`` may end the run:
    its claimed cost is polynomial, or it claims ``no_efficient_known`` (which the verifier refuses
    where the task's family is known to be tractable, so an accepted one is an honest negative). A
    tractable label with an exponential cost (a row transfer matrix on a torus, say) does not: a
    polynomial program may still come from another proposer."""
    if tractable_class == "no_efficient_known":
        return True
    try:
        return parse_claim(complexity, lattice).rank == 0
    except ClaimParseError:
        return False
