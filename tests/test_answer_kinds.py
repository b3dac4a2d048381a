"""Answers that are not exact programs (evaluators/answer_kinds.py, evaluators/bounds_check.py): a set of
bounds and approximation candidates (tests/fixtures/answers, each file stating its expected outcome and, for
a rejection, what the feedback must name; "# claim:" its complexity, else O(n)) judged by the full cascade on P06, with the ladder capped at
n = 16 so each takes seconds; valid bounds ranked by tightness, above approximations, below exact programs;
old (schema 1) Verdicts still load."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from evaluators.answer_kinds import BOUND_SLACK, read_answer
from evaluators.ladder import LadderBudget
from evaluators.sandbox import Sandbox
from evaluators.sandbox.records import CallResult
from evaluators.submission import Submission
from evaluators.verdict import Verdict
from evaluators.verify import VerifyOptions, verify
from search.database.program import named_score, score_of
from tasks.registry import get_task

FIXTURES = Path(__file__).parent / "fixtures" / "answers"
OPTIONS = VerifyOptions(samples=2, ladder_budget=LadderBudget(max_n=16, total_s=60.0))
EXACT = '''
import numpy as np


def log_Z(params, n):
    e = np.asarray(params["edges"], dtype=np.int64)
    J = float(params["beta"]) * np.asarray(params["J"], dtype=float)
    s = 1.0 - 2.0 * ((np.arange(1 << n)[:, None] >> np.arange(n)) & 1)
    w = (s[:, e[:, 0]] * s[:, e[:, 1]]) @ J
    return float(w.max() + np.log(np.exp(w - w.max()).sum()))


def Z_efficient(params, n):
    return float(np.exp(log_Z(params, n)))
'''


@pytest.fixture(scope="module")
def judged():
    sandbox, out = Sandbox(), {}
    try:
        for path in sorted(FIXTURES.glob("*.py")):
            text = path.read_text()
            claim = next((ln.removeprefix("# claim: ") for ln in text.splitlines() if ln.startswith("# claim: ")), "O(n)")
            sub = Submission(text, "no_efficient_known", claim, 0.9, "fixture")
            out[path.stem] = verify(get_task("P06"), sub, OPTIONS, sandbox=sandbox)
        out["exact"] = verify(get_task("P06"), Submission(EXACT, "no_efficient_known", "O(n 2^n)", 0.9, "exact"),
                              OPTIONS, sandbox=sandbox)
    finally:
        sandbox.close()
    return out


def _expectation(name: str) -> tuple[str, str, list[str]]:
    line = (FIXTURES / f"{name}.py").read_text().splitlines()[0]
    verdict, _, rest = line.removeprefix("# expect: ").partition(" ")
    return verdict, rest, [x for x in rest.split("|") if x]


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.py")))
def test_each_candidate_of_the_set_is_judged_as_expected(judged, name):
    v = judged[name]
    verdict, rest, named = _expectation(name)
    assert v.verdict == verdict, (name, v.feedback)
    assert v.answer is not None and v.answer.kind == ("bounds" if "bounds" in (FIXTURES / f"{name}.py").read_text()
                                                      .split("def log_Z")[1][:8] else "approximation")
    if verdict == "accept":
        assert v.answer.valid and v.numerical.passed and v.answer.checked >= 6 and v.answer.largest_n_checked == 16
    else:
        assert not v.numerical.passed and score_of(v, "x")[1] == 0.0
        for phrase in named:                  # the feedback names the instance or the defect
            assert phrase in v.feedback, (name, phrase, v.feedback)
    assert "exact log Z" not in v.feedback and "reference" not in v.feedback.lower()


def test_valid_bounds_rank_by_tightness_above_approximations_and_below_exact_programs(judged):
    score = {k: score_of(v, "x" * 100) for k, v in judged.items()}
    assert judged["exact"].accepted and judged["exact"].answer is None
    order = ["exact", "p06_exact_small", "p06_trivial_bounds", "p06_one_sided", "p06_approx_honest", "p06_nan"]
    assert [score[k] for k in order] == sorted((score[k] for k in order), reverse=True)
    assert judged["p06_exact_small"].answer.gap_per_spin < judged["p06_trivial_bounds"].answer.gap_per_spin
    assert judged["p06_one_sided"].answer.quality == 0.5
    named = named_score(score["p06_trivial_bounds"])
    assert named.answer == "bounds" and "valid bounds (quality" in named.text()
    assert named_score(score["p06_approx_honest"]).answer == "approximation"
    assert named_score(score["exact"]).answer == "exact"


def test_the_answer_survives_the_verdict_round_trip_and_schema_1_still_loads(judged):
    v = judged["p06_trivial_bounds"]
    back = Verdict.from_dict(v.to_dict())
    assert back.answer == v.answer and back.to_dict() == v.to_dict()
    old = {**judged["exact"].to_dict(), "schema": 1}
    old.pop("answer")
    assert Verdict.from_dict(old).answer is None
    with pytest.raises(ValueError):
        Verdict.from_dict({**old, "schema": 99})


def _results(values):
    return [CallResult(True, v, None, 0.01) for v in values]


def test_reading_answers_refuses_what_bounds_or_converges_nothing():
    assert read_answer("bounds", _results([1.0, 2.0])).error is None
    assert read_answer("bounds", _results([-math.inf, 2.0])).error is None
    assert "bound nothing" in read_answer("bounds", _results([math.inf, math.inf])).error
    assert read_answer("bounds", _results([2.0, 2.0 - 0.5 * BOUND_SLACK * 2.0])).error is None   # rounding only
    assert "exceeds" in read_answer("bounds", _results([2.0, 1.9])).error
    ok = read_answer("approximation", _results([2.0, 4.0, 1.0, 8.0, 1.5] + [math.nan] * 12))
    assert ok.error is None and ok.pairs == ((4.0, 1.0), (8.0, 1.5))
    assert "cut short" in read_answer("approximation", _results([3.0, 4.0, 1.0])).error
    assert "at most" in read_answer("approximation", _results([9.0] + [1.0] * 18)).error
