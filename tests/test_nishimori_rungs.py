"""The Nishimori rungs (evaluators/checks/nishimori_rungs.py): a Tier 2 program exact at small sizes
and wrong beyond them is rejected without an exact oracle (the ladder is off here), an exact one is
accepted, and a program too slow for the budget is inconclusive, not rejected."""

import json
from pathlib import Path

import numpy as np

from evaluators.checks.nishimori_rungs import NishimoriBudget, _judge_points, _Point, nishimori_rungs
from evaluators.submission import Submission
from evaluators.verify import VerifyOptions, verify
from tasks.registry import get_task

FIXTURES = Path(__file__).parent / "fixtures" / "candidates"
CLAIMS = {**json.loads((FIXTURES / "claims_tier2.json").read_text()),
          **json.loads((FIXTURES / "claims_decoding.json").read_text())}   # the T21 double: float64, p >= 1e-3
T21, T19 = get_task("T21"), get_task("T19")
NO_ORACLE_BEYOND_PROBES = VerifyOptions(samples=2, ladder=False, judge=False)


def submission(name: str, code: str | None = None) -> Submission:
    claims = {k: v for k, v in CLAIMS[name].items() if k != "task"}
    return Submission.from_response({**claims, "code": code if code is not None else (FIXTURES / name).read_text()})


def planted(name: str, wrapper: str) -> Submission:
    """The fixture with its log_Z renamed _exact_log_Z and ``wrapper`` (a new log_Z) appended."""
    code = (FIXTURES / name).read_text().replace("def log_Z(", "def _exact_log_Z(")
    return submission(name, code + "\n\n" + wrapper)


BIASED_BEYOND_5 = '''
def log_Z(params, n):
    value = _exact_log_Z(params, n)
    if math.isqrt(n) > 5 and params["cls"] == 1:     # right up to L = 5, class 1 favoured by e beyond
        value += 1.0
    return value
'''

WRONG_TEMPERATURE_BEYOND_5 = '''
def log_Z(params, n):
    if math.isqrt(n) <= 5:
        return _exact_log_Z(params, n)
    # beyond L = 5 the model assumes 0.6 p: overconfident class probabilities
    return _exact_log_Z({**params, "p": 0.6 * float(params["p"])}, n)
'''


def test_the_exact_program_is_accepted_and_its_rungs_recorded(sandbox):
    v = verify(T21, submission("t21_pair_transfer.py"), NO_ORACLE_BEYOND_PROBES, sandbox)
    assert v.verdict == "accept", v.feedback
    rungs = [r for r in v.numerical.rungs if r.stage == "nishimori"]
    assert len(rungs) == 4 and all(r.passed for r in rungs)
    assert {r.n for r in rungs} == {16, 64}                         # L = 4 (the probes') and L = 8
    assert "Nishimori rungs: 4 passed" in v.feedback


def test_a_program_biased_beyond_L5_is_rejected_by_the_calibration_rung(sandbox):
    v = verify(T21, planted("t21_pair_transfer.py", BIASED_BEYOND_5), NO_ORACLE_BEYOND_PROBES, sandbox)
    assert v.verdict == "reject"
    assert all(r.passed for r in v.numerical.rungs if r.stage == "probe")      # right where it was probed
    failed = [r for r in v.numerical.rungs if r.stage == "nishimori" and not r.passed]
    assert failed and all(r.n == 64 and r.note.startswith("nishimori_calibration") for r in failed)
    assert "the Nishimori identity of decoding" in v.feedback


def test_a_program_at_the_wrong_temperature_beyond_L5_is_rejected(sandbox):
    v = verify(T21, planted("t21_pair_transfer.py", WRONG_TEMPERATURE_BEYOND_5), NO_ORACLE_BEYOND_PROBES, sandbox)
    assert v.verdict == "reject"
    assert any(r.stage == "nishimori" and not r.passed for r in v.numerical.rungs), v.feedback


def test_success_that_falls_with_L_below_threshold_fails_the_trend_rung():
    rng = np.random.default_rng(0)
    n = 400

    def point(L, p, right):
        true = rng.integers(0, 2, n)
        good = rng.random(n) < right
        answer = np.where(good, true, 1 - true)
        log_p = np.log(np.where(np.arange(2)[None, :] == answer[:, None], right, 1 - right))
        return _Point(L, p, log_p, true, 0.0)

    rungs = []
    failure = _judge_points([point(4, 0.05, 0.95), point(8, 0.05, 0.80), point(4, 0.2, 0.6), point(8, 0.2, 0.55)],
                            4.0, rungs)
    assert failure is not None and "must rise" in failure
    assert [r.passed for r in rungs if r.note.startswith("success_trend")] == [False, True]
    assert all(r.passed for r in rungs if r.note.startswith("nishimori_calibration"))   # each point is calibrated
    assert len(rungs) == 4


def test_too_slow_for_the_budget_is_inconclusive_not_a_failure(sandbox):
    slow = planted("t21_pair_transfer.py", '''
def log_Z(params, n):
    if math.isqrt(n) > 5:
        x = 0
        for k in range(30_000_000):
            x += k
    return _exact_log_Z(params, n)
''')
    out = nishimori_rungs(T21, slow.code, True, sandbox, verified_n=16, budget=NishimoriBudget(total_s=10, pilot_s=2))
    assert out.failure is None and out.rungs == []
    assert out.notes and out.notes[0].startswith("inconclusive")


def test_identity_rungs_catch_an_energy_wrong_beyond_the_ladder(sandbox):
    exact = submission("t19_gauge_energy.py")
    v = verify(T19, exact, VerifyOptions(samples=2, judge=False), sandbox)
    assert v.verdict == "accept", v.feedback
    rungs = [r for r in v.numerical.rungs if r.stage == "nishimori"]
    assert {r.n for r in rungs} == {40_000, 160_000} and all(r.passed for r in rungs)
    code = exact.code.replace("def Z_efficient(", "def _exact(") + '''

def Z_efficient(params, n):
    return _exact(params, n) * (1.0 if n <= 10_000 else 1.001)   # right on the whole ladder, off beyond
'''
    v = verify(T19, submission("t19_gauge_energy.py", code), VerifyOptions(samples=2, judge=False), sandbox)
    assert v.verdict == "reject"
    assert v.numerical.largest_n_verified == 10_000 and "Nishimori identity" in v.feedback


def test_t18_errors_are_drawn_in_the_toric_programs_conventions(sandbox):
    """The rungs draw T18's errors themselves (evaluators/decoding/codes.py): the class index 2a + b
    and the syndrome must be the task's, or an exact program would look miscalibrated. At L = 4,
    p = 0.15, 40% of the errors are in class 1 or 2 (a != b); with a and b swapped the class ranked
    first is right 0.38 of the time where the probabilities claim 0.54."""
    from evaluators.checks.nishimori_rungs import _ask
    from evaluators.decoding.codes import CODES

    code, L, p = CODES["T18"], 4, 0.15
    syn, true_class = code.draw(np.random.default_rng(5), L, p, 200)
    log_p, _, err, _ = _ask(code, L, p, syn, "log_Z", (FIXTURES / "t18_dual_transfer.py").read_text(), sandbox,
                            60.0, 2048)
    assert err is None, err
    rungs = []
    assert _judge_points([_Point(L, p, log_p, true_class.astype(np.int64), 0.0)] * 4, 4.0, rungs) is None
    assert all(abs(float(r.note.split("z = ")[1].split()[0].rstrip(",)"))) < 2 for r in rungs)
    pt = _Point(L, p, log_p, true_class.astype(np.int64), 0.0)
    assert pt.indicator().mean() > 0.45 and np.isin(true_class, (1, 2)).mean() > 0.15    # (1/4 by chance)
    swapped = np.array([2 * (c % 2) + c // 2 for c in true_class], dtype=np.int64)
    rungs = []
    assert _judge_points([_Point(L, p, log_p, swapped, 0.0)] * 4, 4.0, rungs) is not None
    assert "z = -4.8" in rungs[0].note                 # measured; the exact convention's is within +-2
