"""The cases issue 13 saw, each judged end to end as the issue says it must be.

- a P01 program that enumerates 2^n states and raises MemoryError past the probes, claiming
  transfer_matrix O(n): rejected as dishonest (a frontier is evidence about cost);
- a float64 Kac-Ward program for P04: rejected, the feedback naming the n and beta where it lost
  accuracy (the ladder draws cold parameters);
- a log-gamma Curie-Weiss sum for P05 that returns Z only: accepted (overflow is a frontier
  everywhere, in the ladder and in the physical assertions);
- a brute-force program claiming gauge O(n) that fails a rung: still told its claim is dishonest
  (every check that can run runs);
- an O(n) closed form: honest=True from the code and its timings.
"""

import json
import re
from pathlib import Path

import pytest

from conftest import FIXTURES
from evaluators.ladder import LadderBudget
from evaluators.submission import Submission
from evaluators.verify import VerifyOptions, verify
from tasks.registry import get_task

TRUST = Path(__file__).parent / "fixtures" / "trust"
FULL = VerifyOptions(samples=2, ladder_budget=LadderBudget(rung_timeout_s=15.0, total_s=60.0))


def case(name: str, directory: Path = TRUST) -> tuple:
    claims = dict(json.loads((directory / "claims.json").read_text())[name])
    task = get_task(claims.pop("task"))
    return task, Submission.from_response({**claims, "code": (directory / name).read_text()})


def test_enumeration_that_stops_at_the_first_rung_is_dishonest_under_a_linear_claim(sandbox):
    task, sub = case("p01_enumerate_memory.py")
    v = verify(task, sub, FULL, sandbox)
    assert v.numerical.passed, v.feedback          # right at every probe: numbers alone do not reject it
    assert v.verdict == "reject"
    assert v.complexity.honest is False, v.feedback
    assert v.numerical.frontier is not None and v.numerical.frontier.n == 100
    assert v.numerical.frontier.kind == "memory"
    assert re.search(r"Complexity: .*could not (finish|reach) n=100", v.feedback), v.feedback


def test_float64_kac_ward_is_rejected_where_it_loses_accuracy_and_says_where(sandbox):
    task, sub = case("p04_kac_ward_float64.py")
    v = verify(task, sub, FULL, sandbox)
    assert v.verdict == "reject"
    bad = [r for r in v.numerical.rungs if r.stage == "ladder" and not r.passed]
    assert bad and bad[0].draw == "cold", v.feedback
    n = bad[0].n
    assert re.search(rf"At n={n} .*cold: beta = [0-9.]+.*relative error", v.feedback), v.feedback
    # the typical draws at the same sizes are right: only the cold ones expose it
    assert all(r.passed for r in v.numerical.rungs if r.stage == "ladder" and r.draw == "typical" and r.n <= n)


def test_log_gamma_curie_weiss_returning_z_is_accepted(sandbox):
    task, sub = case("p05_log_gamma_z_only.py")
    v = verify(task, sub, FULL, sandbox)
    assert v.verdict == "accept", v.feedback
    assert v.physics.passed is True
    assert "log_Z(params, n)" in v.feedback      # the frontier asks for log Z
    assert not any("OverflowError" in c.detail for c in v.physics.checks if not c.passed)


def test_brute_force_failing_a_rung_still_hears_its_claim_is_dishonest(sandbox):
    task, sub = case("p05_brute_force_value_error.py")
    v = verify(task, sub, FULL, sandbox)
    assert v.verdict == "reject"
    assert not v.numerical.passed and "At n=100 (beyond the probe sizes)" in v.feedback
    assert "raised ValueError" in v.feedback
    assert v.complexity.honest is False and "exponential" in (v.complexity.measured or ""), v.feedback
    assert "Complexity:" in v.feedback


def test_linear_closed_form_is_found_honest(sandbox):
    claims = dict(json.loads((FIXTURES / "claims.json").read_text())["p01_correct.py"])
    task = get_task(claims.pop("task"))
    sub = Submission.from_response({**claims, "code": (FIXTURES / "p01_correct.py").read_text()})
    v = verify(task, sub, FULL, sandbox)
    assert v.verdict == "accept", v.feedback
    assert v.complexity.honest is True, v.feedback
    assert v.numerical.largest_n_verified == 100_000


@pytest.mark.parametrize("name", ["p01_enumerate_memory.py", "p05_brute_force_value_error.py"])
def test_every_failure_is_in_the_verdict_and_the_feedback(name, sandbox):
    """All checks ran: complexity, class and physics are filled even when the numbers failed."""
    task, sub = case(name)
    v = verify(task, sub, FULL, sandbox)
    assert v.complexity.claimed == "O(n)" and v.complexity.honest is not None
    assert v.class_.consistent is not None and v.physics.checks


def test_polynomial_claim_with_no_rung_beyond_the_probes_is_not_accepted(sandbox):
    """Overflow asks for log_Z and is held against nothing, but a polynomial claim must still be
    seen working beyond the probes: a Z-only program that overflows at the first size on every
    draw is not accepted, and the feedback says what to do."""
    code = (FIXTURES / "p01_correct.py").read_text().replace(
        "def Z_efficient(params, n):\n", "def Z_efficient(params, n):\n    if n >= 100:\n        raise OverflowError('math range error')\n", 1)
    assert "OverflowError" in code
    code = code.replace("def log_Z(", "def _log_Z(").replace("math.exp(log_Z(", "math.exp(_log_Z(")
    v = verify(get_task("P01"), Submission(code, "transfer_matrix", "O(n)", 0.9), FULL, sandbox)
    assert v.numerical.passed and v.numerical.frontier.kind == "overflow"
    assert v.complexity.honest is not False
    assert v.verdict == "reject" and "needs at least one size beyond the probes" in v.feedback, v.feedback


def test_t14_program_that_read_its_ground_state_line_off_two_runs_is_rejected_cold(sandbox):
    """Issue 36: the T14 program as derived on main (planar Pfaffian, colder than beta |J| = 12 the
    ground-state line read off unbounded runs at 10 and 12) passed every check while the cold draws
    stopped at beta |J| = 10. It is wrong above 12 (0.02 in log Z on 16 x 16, 60 on 32 x 32 at 20):
    the cold draws now reach it, and the feedback names the draw."""
    task, sub = case("t14_line_from_two_runs.py")
    v = verify(task, sub, FULL, sandbox)
    assert v.verdict == "reject", v.feedback
    bad = [r for r in v.numerical.rungs if not r.passed]
    assert bad and bad[0].stage == "ladder" and bad[0].draw == "cold", v.feedback
    assert float(bad[0].note.rsplit("= ", 1)[1]) > 12.0
    assert re.search(rf"At n={bad[0].n} .*cold: beta = [0-9.e+]+, beta\*\|J\| = [0-9.e+]+.*relative error", v.feedback)
    # right wherever it was checked before: the probes and the warm draws
    assert all(r.passed for r in v.numerical.rungs if r.stage != "ladder" or r.draw == "typical")
