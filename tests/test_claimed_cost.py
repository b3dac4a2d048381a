"""A candidate's own exponential claim stops calls it prices far out of reach; polynomial and
unreadable claims never do (their frontier is evidence the audit needs)."""

import math

import pytest

from conftest import FIXTURES
from evaluators.checks.claimed_cost import MARGIN, claimed_price
from evaluators.checks.growth import Growth
from evaluators.ladder import LadderBudget
from evaluators.submission import Submission
from evaluators.verify import VerifyOptions, verify
from search.structural.proposer import StructuralProposer, assemble, make_plan
from tasks.registry import get_task

BUDGET = LadderBudget(rung_timeout_s=10.0, total_s=60.0)
NO_JUDGE = VerifyOptions(samples=2, judge=False, ladder_budget=BUDGET)


def test_an_exponential_claim_is_priced_from_the_largest_size_it_ran():
    price = claimed_price("O(n 2^n)", lattice=True, timings=[(9, 0.5), (16, 0.04), (16, 0.03), (4, 0.01)])
    assert (price.n0, price.t0, price.growth) == (16, 0.03, Growth("exp", 1.0))
    assert price.seconds_at(20) == pytest.approx(0.03 * 2 ** 4)
    assert price.too_costly(20, budget_s=1.0) is None                      # 0.48 s
    assert price.too_costly(30, budget_s=1.0) is not None                  # 0.03 * 2^14 = 492 s > 50 s
    assert price.too_costly(30, budget_s=10.0) is None                     # 492 s < 50 * 10 s
    assert price.too_costly(30, budget_s=10.0, margin=1.0) is not None
    assert math.isinf(price.seconds_at(5000))


def test_an_exponential_claim_in_the_lattice_side_grows_with_sqrt_n():
    price = claimed_price("O(L^2 2^L)", lattice=True, timings=[(256, 0.3)])
    assert price.growth.kind == "exp_sqrt"
    assert price.seconds_at(1024) == pytest.approx(0.3 * 2 ** 16)          # L: 16 -> 32


@pytest.mark.parametrize("claim", ["O(n^3)", "O(n^1.5 log n)", "polynomial", "2^poly(n)", "O(n!)", "O(m n)", None, ""])
def test_polynomial_unstated_and_unreadable_claims_price_nothing(claim):
    assert claimed_price(claim, lattice=True, timings=[(16, 1.0)]) is None


def test_nothing_timed_prices_nothing():
    assert claimed_price("O(2^n)", lattice=False, timings=[]) is None
    assert claimed_price("O(2^n)", lattice=False, timings=[(16, 0.0)]) is None


def test_the_ladder_does_not_run_a_size_the_exponential_claim_prices_out_of_reach(sandbox):
    code = (FIXTURES / "p01_correct.py").read_text()   # an O(n) chain transfer matrix
    task = get_task("P01")
    honest = verify(task, Submission(code, complexity_O="O(n)"), NO_JUDGE, sandbox)
    assert honest.numerical.largest_n_verified == 100_000 and honest.numerical.frontier is None
    # the same program claiming 2^n: at the probes it took milliseconds, so the claim prices
    # n = 100 at about 2^80 times as long, and it is believed
    pessimistic = verify(task, Submission(code, complexity_O="O(2^n)"), NO_JUDGE, sandbox)
    f = pessimistic.numerical.frontier
    assert f.kind == "claimed_cost" and f.n == task.ladder_sizes[0]
    assert pessimistic.numerical.largest_n_verified == max(task.probe_sizes)
    assert not [r for r in pessimistic.numerical.rungs if r.stage == "ladder"]
    assert pessimistic.verdict == "accept"    # the frontier is no evidence against the candidate
    assert f"not run: the claimed cost O(2^n) scaled from" in pessimistic.feedback
    assert f"{MARGIN:g} times the call's budget of 10 s" in pessimistic.feedback


def test_a_rung_within_the_claimed_price_still_runs(sandbox):
    # 2^(sqrt n): from the probes (n <= 20) to n = 100 the price grows about 2^5.5, far within budget
    code = (FIXTURES / "p01_correct.py").read_text()
    v = verify(get_task("P01"), Submission(code, complexity_O="O(2^sqrt(n))"), NO_JUDGE, sandbox)
    ladder = [r for r in v.numerical.rungs if r.stage == "ladder"]
    assert ladder and ladder[0].n == 100 and ladder[0].passed
    assert v.numerical.frontier.kind == "claimed_cost" and v.numerical.frontier.n > 100


def test_a_polynomial_claim_runs_into_its_time_frontier(sandbox):
    code = (FIXTURES / "p06_bruteforce.py").read_text()
    budget = LadderBudget(rung_timeout_s=3.0, memory_mb=4096, total_s=30.0)
    v = verify(get_task("P06"), Submission(code, complexity_O="O(n^2)"),
               VerifyOptions(samples=1, judge=False, ladder_budget=budget), sandbox)
    assert v.numerical.frontier.kind in ("time", "memory")


def test_an_honest_enumeration_is_judged_without_calls_it_says_cannot_finish(sandbox):
    """The structural proposer's enumeration of P04 (O(n 2^n), claimed so): it was run at n = 64
    until the 20 s rung budget killed it, and timed at n = 25 until the 8 s budget did."""
    task = get_task("P04")
    proposer = StructuralProposer(0)
    plan = make_plan(proposer.view(task), "enumeration")
    sub = Submission(assemble(task, plan), tractable_class=plan.claims.tractable_class,
                     complexity_O=plan.claims.complexity_O)
    v = verify(task, sub, VerifyOptions(samples=2), sandbox)
    assert plan.claims.complexity_O == "O(n 2^n)"
    assert v.numerical.frontier.kind == "claimed_cost" and v.numerical.frontier.n == task.ladder_sizes[0]
    assert v.complexity.honest is True
    assert not [r for r in v.numerical.rungs if r.stage == "ladder"]
    assert v.verdict == "reject" and "undersells the problem" in v.feedback   # the class, as before
