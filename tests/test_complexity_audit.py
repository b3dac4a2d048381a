"""The complexity audit: claim + static evidence + timings -> measured, honest, reasons."""

import math

import numpy as np
import pytest

from conftest import FIXTURES
from evaluators.checks.complexity import audit_complexity, ladder_timings, measure_times, suggest_sizes
from evaluators.checks.growth import Growth
from evaluators.sandbox.records import CallResult, SandboxReport
from evaluators.verdict import Rung
from tasks.registry import get_task

ROW_TRANSFER_P03 = (FIXTURES / "p03_correct.py").read_text()   # 2^L row states, eigvalsh of 2^L x 2^L
ROW_TRANSFER_P04 = (FIXTURES / "p04_rowtransfer.py").read_text()
CLOSED_FORM_P01 = (FIXTURES / "p01_correct.py").read_text()
BRUTE_FORCE = """
import itertools, math
def Z_efficient(params, n):
    Z = 0.0
    for s in itertools.product([-1, 1], repeat=n):
        Z += math.exp(params["beta"] * sum(a * b for a, b in zip(s, s[1:])))
    return Z
"""


def timings(sizes, f, seed=0, sigma=0.2):
    rng = np.random.default_rng(seed)
    return [(n, f(n) * float(np.exp(rng.normal(0.0, sigma)))) for n in sizes]


SIDES = [L * L for L in range(4, 13)]
EXP_SQRT_TIMES = timings(SIDES, lambda n: 1e-7 * math.sqrt(n) * 8 ** math.sqrt(n))   # L 2^(3L)
LINEAR_TIMES = timings([1000, 10_000, 100_000, 1_000_000, 3_000_000], lambda n: 1e-6 * n)
CUBIC_TIMES = timings([64, 128, 256, 512, 1024], lambda n: 1e-9 * n ** 3)


def test_paper_false_alarm_is_honest():
    """P03: 'O(n 2^sqrt(n))' for a row-transfer code is an honest claim (the paper's regex said no)."""
    f = audit_complexity("O(n 2^sqrt(n))", ROW_TRANSFER_P03, EXP_SQRT_TIMES, lattice=True)
    assert f.honest is True
    assert f.claimed_growth == Growth("exp_sqrt", 1.0)
    assert f.measured_growth.kind == "exp_sqrt"
    assert "exponential in sqrt(n)" in f.measured
    assert "covers the measured cost" in f.reasons[0]


@pytest.mark.parametrize("times", [EXP_SQRT_TIMES, [], [(9, 1e-4), (16, 3e-4)]])
def test_row_transfer_claimed_cubic_is_dishonest(times):
    """P04: a row-transfer code under a Pfaffian-style 'O(n^3)' label, with or without timings."""
    f = audit_complexity("O(n^3)", ROW_TRANSFER_P04, times, lattice=True)
    assert f.honest is False
    assert f.measured_growth.kind == "exp_sqrt"
    assert "claimed O(n^3)" in f.reasons[0] and "line" in f.reasons[0] and "2^(sqrt n)" in f.reasons[0]


def test_closed_form_linear_claim_is_honest():
    f = audit_complexity("O(n)", CLOSED_FORM_P01, LINEAR_TIMES, lattice=False)
    assert f.honest is True and f.static == []
    assert f.measured_growth.kind == "poly" and f.measured_growth.rate == pytest.approx(1.0, abs=0.2)
    assert "timings over n = " in f.measured


def test_brute_force_claimed_linear_is_dishonest_from_the_code_alone():
    few = [(6, 2e-5), (10, 3e-4)]  # the probe sizes: far too few points to fit anything
    f = audit_complexity("O(n)", BRUTE_FORCE, few, lattice=False)
    assert f.honest is False
    assert f.measured_growth == Growth("exp", 1.0) and "from the code" in f.measured
    reason = f.reasons[0]
    assert reason.startswith("claimed O(n) (polynomial, about n^1) but the code enumerates 2^n configurations")
    assert "line 5: itertools.product([-1, 1], repeat=n)" in reason


def test_brute_force_with_exponential_timings_names_both():
    times = timings(range(12, 25, 2), lambda n: 1e-7 * n * 2.0 ** n)
    f = audit_complexity("O(n)", BRUTE_FORCE, times, lattice=False)
    assert f.honest is False
    assert "its time grows like exponential in n" in f.reasons[0] and "over n = " in f.reasons[0]
    honest = audit_complexity("O(n 2^n)", BRUTE_FORCE, times, lattice=False)
    assert honest.honest is True  # an honest exponential claim is honest


def test_overclaiming_cost_is_not_dishonest():
    f = audit_complexity("O(n^3)", CLOSED_FORM_P01, LINEAR_TIMES, lattice=False)
    assert f.honest is True


def test_cubic_timings_under_linear_claim_are_dishonest():
    f = audit_complexity("O(n)", CLOSED_FORM_P01, CUBIC_TIMES, lattice=False)
    assert f.honest is False
    assert f.measured_growth.kind == "poly" and f.measured_growth.rate == pytest.approx(3.0, abs=0.3)
    assert "its time grows like polynomial, about n^" in f.reasons[0] and "over n = 128..1024" in f.reasons[0]
    assert audit_complexity("O(n^3)", CLOSED_FORM_P01, CUBIC_TIMES, lattice=False).honest is True


@pytest.mark.parametrize("claim,why", [(None, "no complexity was claimed"), ("", "no complexity was claimed"),
                                       ("—", "unparseable claim"), ("O(|E|)", "unparseable claim")])
def test_missing_or_unreadable_claims_are_not_judged(claim, why):
    f = audit_complexity(claim, BRUTE_FORCE, [], lattice=False)
    assert f.honest is None and f.claimed_growth is None
    assert f.measured_growth == Growth("exp", 1.0)  # still measured
    assert any(why in r for r in f.reasons)


def test_nothing_measured_means_no_judgement():
    f = audit_complexity("O(n)", CLOSED_FORM_P01, [(10, 1e-5), (100, 1e-5)], lattice=False)
    assert f.honest is None and f.measured is None
    assert any(r.startswith("nothing measured") for r in f.reasons)


# P01's closed form as `evolve verify` timed it: the probes and the whole ladder, every call tens of
# microseconds (load noise makes larger sizes no slower, sometimes faster)
FAST_LADDER = [(6, 1.2e-5), (10, 1.6e-5), (14, 1.5e-5), (100, 6.9e-5), (1000, 5.9e-5), (10_000, 7.3e-5),
               (100_000, 6.5e-5), (200_000, 7.2e-6), (400_000, 7.9e-6)]


@pytest.mark.parametrize("claim", ["O(1)", "O(n)", "O(n^2)"])
def test_a_program_too_fast_for_the_timer_is_honest_over_the_whole_ladder_and_says_on_what(claim):
    f = audit_complexity(claim, CLOSED_FORM_P01, FAST_LADDER, lattice=False, last_ladder_n=100_000)
    assert f.honest is True, f.reasons
    c = f.to_verdict()
    assert c.honest is True and c.evidence == f.reasons[0]
    if claim == "O(1)":      # no ceiling rules out anything above O(1): the whole ladder is the evidence
        assert "its timings over the whole ladder: 9 sizes from n=6 to n=400000" in c.evidence
        assert "the last ladder size 100000 included" in c.evidence and "under 2 ms" in c.evidence
    else:
        assert c.evidence.startswith(f"claimed {claim}")


def test_the_whole_ladder_reading_needs_the_whole_ladder_and_a_cost_within_the_claim():
    # the ladder stopped early (a quick look): nothing said about the sizes it did not reach
    assert audit_complexity("O(1)", CLOSED_FORM_P01, FAST_LADDER[:5], lattice=False,
                            last_ladder_n=100_000).honest is None
    # the time grew 40000-fold from n = 6 to n = 100000: not O(1), whatever the fit could not say
    growing = [(6, 1.2e-5), (10, 1.6e-5), (14, 2e-5), (100, 1e-4), (1000, 1e-3), (100_000, 0.5)]
    assert audit_complexity("O(1)", CLOSED_FORM_P01, growing, lattice=False, last_ladder_n=100_000).honest is None
    # the code's own costliest construct (a loop over n) is more than O(1): the ladder does not overrule it
    loop = "def Z_efficient(params, n):\n    z = 1.0\n    for i in range(n):\n        z *= 2.0\n    return z\n"
    assert audit_complexity("O(1)", loop, FAST_LADDER, lattice=False, last_ladder_n=100_000).honest is None


def test_guarded_brute_force_fallback_does_not_count():
    code = "import math\n" + BRUTE_FORCE.replace(
        "    Z = 0.0\n", "    if n > 20:\n        return 2 * (2 * math.cosh(params['beta'])) ** (n - 1)\n    Z = 0.0\n")
    f = audit_complexity("O(n)", code, LINEAR_TIMES, lattice=False)
    assert f.honest is True
    assert [s.kind for s in f.static] == ["bounded"]


def test_static_evidence_contradicted_by_a_fast_large_run_is_dropped():
    # an enumeration the AST walk cannot see is guarded (the guard is in another function)
    code = BRUTE_FORCE.replace("def Z_efficient(params, n):", "def slow(params, n):") + (
        "\ndef Z_efficient(params, n):\n    return fast(params, n) if big(n) else slow(params, n)\n")
    f = audit_complexity("O(n)", code, LINEAR_TIMES, lattice=False)
    assert f.honest is True
    assert any(r.startswith("not counted:") and "finished n = 3000000" in r for r in f.reasons)


def test_verdict_section_and_feedback():
    f = audit_complexity("O(n^3)", ROW_TRANSFER_P04, [], lattice=True)
    c = f.to_verdict()
    assert (c.claimed, c.honest) == ("O(n^3)", False) and c.measured == f.measured
    assert "claimed O(n^3)" in f.feedback()
    assert audit_complexity("O(n)", CLOSED_FORM_P01, LINEAR_TIMES, lattice=False).feedback() == ""


def test_ladder_timings_keep_rungs_that_ran():
    rungs = [Rung(6, 1e-4, 1e-12, True), Rung(100, 0.0, None, False), Rung(1000, 2e-3, 1e-11, True, "ladder")]
    assert ladder_timings(rungs) == [(6, 1e-4), (1000, 2e-3)]


def test_suggest_sizes():
    lattice = suggest_sizes([(9, 1e-4), (16, 1e-4), (36, 3e-3), (64, 0.02), (144, 5.0)], lattice=True)
    assert lattice == [25, 49, 81, 100, 121, 169]
    small = suggest_sizes([(8, 1e-4), (10, 2e-4), (16, 0.01), (24, 2.0)], lattice=False, count=5)
    assert small == [12, 14, 18, 20, 22]
    big = suggest_sizes([(100, 1e-5), (1000, 1e-5), (10_000, 1e-4), (100_000, 1e-3)], lattice=False, count=3)
    assert big == [200_000, 400_000, 800_000]


# -- measure_times ------------------------------------------------------------------------

class FakeSandbox:
    """Answers like the sandbox: seconds(n) per call, with a slow first repeat (load)."""

    def __init__(self, seconds, budget_fail_above=math.inf):
        self.seconds, self.calls, self.cut = seconds, [], budget_fail_above

    def run(self, code, calls, limits):
        (call,) = calls
        self.calls.append(call.n)
        t = self.seconds(call.n) * (2.0 if self.calls.count(call.n) == 1 else 1.0)
        if t > limits.timeout_s or call.n > self.cut:
            return SandboxReport(timed_out=True, error="timed out")
        return SandboxReport(results=(CallResult(True, 1.0, None, t),))


def test_measure_times_keeps_the_minimum_and_stops_at_the_budget():
    box = FakeSandbox(lambda n: 1e-7 * 2.0 ** n)
    out = measure_times("code", "Z_efficient", get_task("P06"), [12, 16, 20, 24, 28, 30], box, repeats=3, budget_s=2.0)
    assert [n for n, _ in out] == [12, 16, 20]
    assert out[0][1] == pytest.approx(1e-7 * 2.0 ** 12)       # min over repeats, not the slow first one
    assert 28 not in box.calls and 30 not in box.calls        # nothing after the size over budget
    assert box.calls.count(12) == 3


def test_measure_times_skips_sizes_the_task_does_not_define():
    box = FakeSandbox(lambda n: 1e-3)
    out = measure_times("code", "Z_efficient", get_task("P03"), [16, 20, 25, 36], box, repeats=1)
    assert [n for n, _ in out] == [16, 25, 36]


def test_measure_times_with_the_real_sandbox(sandbox):
    brute = (FIXTURES / "p06_bruteforce.py").read_text()
    out = measure_times(brute, "log_Z", get_task("P06"), [8, 10, 30, 12], sandbox, repeats=2, budget_s=3.0,
                        memory_mb=1024)
    assert [n for n, _ in out] == [8, 10, 12]        # n = 30 needs 2^30 x 30 spins: memory or time runs out
    assert all(t > 0 for _, t in out)


# Timings of tests/fixtures/candidates/p03_correct.py measured with measure_times on the shared
# 2-core machine (min of 3): the pre-asymptotic rise of 2^L .. 2^(3L) terms bends the curve so
# that 2^(0.11 n) fitted best; an honest O(L 2^(2L)) claim must not be accused from it.
P03_MEASURED = [(9, 0.0016), (16, 0.002), (25, 0.0017), (36, 0.0025), (49, 0.008), (64, 0.0159),
                (81, 0.0662), (100, 0.4214), (121, 3.2902)]
P04_MEASURED_WITH_LOAD_SPIKE = [(9, 0.0012), (16, 0.0057), (25, 0.0014), (36, 0.0036), (49, 0.0076),
                                (64, 0.0246), (81, 0.0816), (100, 0.3444), (121, 1.8507)]


@pytest.mark.parametrize("times", [P03_MEASURED, P04_MEASURED_WITH_LOAD_SPIKE])
def test_real_row_transfer_timings_do_not_accuse_an_honest_claim(times):
    assert audit_complexity("O(L 2^(2L))", ROW_TRANSFER_P03, times, lattice=True).honest is True
    no_code_evidence = audit_complexity("O(L 2^(2L))", "def Z_efficient(params, n):\n    pass\n", times, lattice=True)
    assert no_code_evidence.honest is True and no_code_evidence.measured_growth.kind != "exp"
    assert audit_complexity("O(n^3)", ROW_TRANSFER_P03, times, lattice=True).honest is False

