"""The verifier end to end (in-process API): accept correct candidates, reject wrong ones with
feedback that says what failed, and fill every Verdict field it owns."""

import pytest

from conftest import FIXTURES, fixture_candidates
from evaluators.submission import Submission
from evaluators.verify import VerifyOptions, verify
from tasks.registry import get_task

PROBES_ONLY = VerifyOptions(ladder=False, judge=False)


def sub_of(name: str) -> Submission:
    claims = dict(fixture_candidates()[name])
    claims.pop("task")
    return Submission.from_response({**claims, "code": (FIXTURES / name).read_text()})


@pytest.mark.parametrize("name", sorted(fixture_candidates()))
def test_reference_candidates_are_accepted(name, sandbox):
    task = get_task(fixture_candidates()[name]["task"])
    v = verify(task, sub_of(name), PROBES_ONLY, sandbox)
    assert v.verdict == "accept", v.feedback
    assert v.numerical.passed and v.numerical.failed == 0
    assert v.numerical.probes == 5 * len(task.probe_sizes)
    assert v.numerical.largest_n_verified == max(task.probe_sizes)
    assert v.numerical.max_rel_err < 1e-9
    assert "All samples passed" in v.feedback
    assert v.class_.claimed == fixture_candidates()[name]["tractable_class"]


WRONG = {
    "sign error": ("P01", "import math\ndef Z_efficient(params, n):\n    return 2*(2*math.cosh(params['beta']*params['J']))**(n-1) * math.exp(-params['J'])\n"),
    "off by one": ("P01", "import math\ndef Z_efficient(params, n):\n    return 2*(2*math.cosh(params['beta']*params['J']))**n\n"),
    "ignores fields": ("P02", "import math\ndef Z_efficient(params, n):\n    return 2*(2*math.cosh(params['beta']*params['J']))**(n-1)\n"),
}


@pytest.mark.parametrize("label", sorted(WRONG))
def test_wrong_candidates_are_rejected_with_relative_errors(label, sandbox):
    task_id, code = WRONG[label]
    v = verify(get_task(task_id), Submission(code), PROBES_ONLY, sandbox)
    assert v.verdict == "reject" and not v.numerical.passed
    assert v.numerical.failed > 0
    assert "samples failed" in v.feedback and ">> 1e-06 -- your computed Z disagrees with brute force" in v.feedback
    assert v.feedback.count("relative error") <= 3  # the paper lists at most three lines


@pytest.mark.parametrize(
    "code,expected",
    [
        ("def Z_efficient(params, n):\n    return float('nan')\n", "NaN"),
        ("def Z_efficient(params, n):\n    return [1.0, 2.0]\n", "non-scalar"),
        ("def Z_efficient(params, n):\n    raise ValueError('boom')\n", "ValueError: boom"),
        ("def Z_efficient(params, n):\n    return -1.0\n", "non-positive"),
        ("def Z_efficient(params, n):\n    return 'many'\n", "Z_efficient"),
    ],
)
def test_bad_returns_are_rejects_with_the_reason(code, expected, sandbox):
    v = verify(get_task("P01"), Submission(code), PROBES_ONLY, sandbox)
    assert v.verdict == "reject"
    assert expected in v.feedback


def test_syntax_error_did_not_run(sandbox):
    v = verify(get_task("P01"), Submission("def Z_efficient(params, n) return 1\n"), PROBES_ONLY, sandbox)
    assert v.verdict == "reject" and v.feedback.startswith("Your code did not run.")


def test_missing_function_did_not_run(sandbox):
    v = verify(get_task("P01"), Submission("def Z(params, n):\n    return 1.0\n"), PROBES_ONLY, sandbox)
    assert v.verdict == "reject" and "Z_efficient" in v.feedback and v.numerical.probes == 0


def test_forbidden_import_is_named(sandbox):
    v = verify(get_task("P01"), Submission("import os\ndef Z_efficient(params, n):\n    return 1.0\n"), PROBES_ONLY, sandbox)
    assert v.verdict == "reject"
    assert any("os" in x for x in v.sandbox.violations)
    assert "Sandbox violations" in v.feedback


def test_timeout_is_a_reject_not_a_hang(sandbox):
    code = "def Z_efficient(params, n):\n    while True:\n        pass\n"
    v = verify(get_task("P01"), Submission(code), VerifyOptions(ladder=False, timeout_s=2.0), sandbox)
    assert v.verdict == "reject" and "time" in v.feedback.lower()


def test_memory_bomb_is_a_reject(sandbox):
    code = "import numpy as np\ndef Z_efficient(params, n):\n    return float(np.ones(10**11).sum())\n"
    v = verify(get_task("P01"), Submission(code), PROBES_ONLY, sandbox)
    assert v.verdict == "reject" and "memory" in v.feedback.lower()


def test_log_z_is_checked_too(sandbox):
    """A right Z_efficient with a wrong log_Z is still wrong."""
    code = (FIXTURES / "p01_correct.py").read_text().replace("return math.log(2.0) +", "return math.log(3.0) +")
    code = code.replace("return math.exp(log_Z(params, n))", "import math as m\n    K = params['beta'] * params['J']\n    return 2 * (2 * m.cosh(K)) ** (n - 1)")
    v = verify(get_task("P01"), Submission(code), PROBES_ONLY, sandbox)
    assert v.verdict == "reject" and "samples failed" in v.feedback


def test_verdict_dict_has_the_documented_keys(sandbox):
    v = verify(get_task("P05"), sub_of("p05_correct.py"), PROBES_ONLY, sandbox).to_dict()
    assert v["schema"] == 2 and v["task"] == "P05" and v["verdict"] == "accept"
    assert set(v["numerical"]) >= {"passed", "max_rel_err", "probes", "failed", "largest_n_verified"}
    assert set(v["complexity"]) >= {"claimed", "measured", "honest"}
    assert set(v["class"]) >= {"claimed", "consistent", "reasons"}
    assert set(v["physics"]) >= {"passed", "checks"}
    assert v["sandbox"] == {"violations": []}
    assert isinstance(v["feedback"], str) and v["confidence"] == 0.95


def test_probe_values_are_deterministic_in_the_seed(sandbox):
    code = (FIXTURES / "p02_correct.py").read_text()
    a = verify(get_task("P02"), Submission(code), VerifyOptions(ladder=False, seed=4, samples=2), sandbox)
    b = verify(get_task("P02"), Submission(code), VerifyOptions(ladder=False, seed=4, samples=2), sandbox)
    assert a.numerical.max_rel_err == b.numerical.max_rel_err and a.numerical.probes == 6
