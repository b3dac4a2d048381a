"""Judging more than numbers: complexity honesty, class consistency and physical assertions."""

import dataclasses
import json

import pytest

from conftest import FIXTURES, fixture_candidates
from evaluators.checks.physics import UNSEEN_SEED_OFFSET
from evaluators.ladder import LadderBudget
from evaluators.submission import Submission
from evaluators.verify import VerifyOptions, verify
from tasks.registry import get_task

FAST = VerifyOptions(samples=2, ladder_budget=LadderBudget(rung_timeout_s=10.0, total_s=30.0))
PROBES = VerifyOptions(samples=2, ladder=False)


def fixture(name: str, **override) -> tuple:
    claims = dict(fixture_candidates()[name])
    task = get_task(claims.pop("task"))
    claims.update(override)
    return task, Submission.from_response({**claims, "code": (FIXTURES / name).read_text()})


#: the P04 row transfer matrix climbs its whole ladder (about 35 s); P04 acceptance is also covered by
#: the structural proposer's Pfaffian (tests/test_structural_proposer.py)
SLOW_ACCEPTS = {"p04_rowtransfer.py"}
#: the P03 row transfer is exponential in the side: its n = 144 rung (12 x 12, 2^12 states per row)
#: waits out the 10 s rung timeout before the verdict (29 s in all); it is accepted at n = 64 either
#: way, so its climb stops there. A rung that times out is tests/test_ladder.py's subject.
LADDER_CAP = {"p03_correct.py": 64}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_ACCEPTS else n
                                  for n in sorted(fixture_candidates())])
def test_correct_honest_candidates_are_accepted_with_every_part_filled(name, sandbox):
    task, sub = fixture(name)
    options = FAST if name not in LADDER_CAP else dataclasses.replace(
        FAST, ladder_budget=dataclasses.replace(FAST.ladder_budget, max_n=LADDER_CAP[name]))
    v = verify(task, sub, options, sandbox)
    assert v.verdict == "accept", v.feedback
    assert v.complexity.honest is not False and v.class_.consistent is True
    assert v.physics.passed is True
    names = {c.name for c in v.physics.checks}
    assert {"beta_zero", "unseen_parameters", "convexity_in_beta", "energy", "low_temperature"} <= names
    assert ("gauge_invariance" in names) == (task.gauge(task.probe_params(task.probe_sizes[0], 0, 0), [1.0] * task.probe_sizes[0]) is not None)
    assert ("spin_flip" in names) == (task.id == "P02")


@pytest.mark.parametrize(
    "name,claim",
    [("p06_bruteforce.py", "O(n^2)"), ("p04_rowtransfer.py", "O(n^3)"), ("p03_correct.py", "O(n)")],
)
def test_exponential_method_under_polynomial_claim_is_dishonest(name, claim, sandbox):
    task, sub = fixture(name, complexity_O=claim)
    v = verify(task, sub, PROBES, sandbox)
    assert v.numerical.passed and v.verdict == "reject"
    assert v.complexity.honest is False and "exponential" in v.complexity.measured
    assert "Complexity:" in v.feedback


def test_the_papers_false_alarm_is_honest(sandbox):
    """P03 row transfer claimed O(n 2^sqrt(n)): an honest acknowledgement of 2^L = 2^sqrt(n)."""
    task, sub = fixture("p03_correct.py", complexity_O="O(n 2^sqrt(n))")
    v = verify(task, sub, PROBES, sandbox)
    assert v.complexity.honest is True and v.verdict == "accept", v.feedback


@pytest.mark.parametrize(
    "name,label",
    [("p05_correct.py", "percolation"), ("p04_rowtransfer.py", "gauge"), ("p06_bruteforce.py", "treewidth_bounded"),
     ("p01_correct.py", "no_efficient_known"), ("p02_correct.py", "ising_magic")],
)
def test_inadmissible_class_labels_are_inconsistent(name, label, sandbox):
    task, sub = fixture(name, tractable_class=label)
    v = verify(task, sub, PROBES, sandbox)
    assert v.numerical.passed and v.verdict == "reject"
    assert v.class_.consistent is False and v.class_.reasons
    assert "Tractable class:" in v.feedback


def test_pfaffian_claim_on_row_transfer_code_is_inconsistent(sandbox):
    task, sub = fixture("p04_rowtransfer.py", tractable_class="pfaffian", complexity_O="O(n^3)")
    v = verify(task, sub, PROBES, sandbox)
    assert v.verdict == "reject" and v.class_.consistent is False
    assert any("method" in r for r in v.class_.reasons)


def test_wrong_at_beta_zero_is_named(sandbox):
    code = (FIXTURES / "p05_correct.py").read_text().replace(
        "    beta = params[\"beta\"]\n", "    beta = params[\"beta\"]\n    if beta == 0:\n        return 0.0\n", 1)
    task, _ = fixture("p05_correct.py")
    sub = Submission(code, "gauge", "O(n)", 0.9)
    v = verify(task, sub, PROBES, sandbox)
    assert v.numerical.passed and v.verdict == "reject"
    failed = {c.name for c in v.physics.checks if not c.passed}
    assert "beta_zero" in failed and "Physical assertion 'beta_zero' failed" in v.feedback


def memorizer(task, base_code: str, seen: list[dict]) -> str:
    """Exact on the parameter sets it has seen, 1% off on anything else (reward hacking)."""
    keys = sorted({repr(sorted(p.items())) for p in seen})
    return base_code + f'''

_SEEN = set({keys!r})
_exact_log_Z = log_Z


def log_Z(params, n):
    value = _exact_log_Z(params, n)
    return value if repr(sorted(params.items())) in _SEEN else value + 0.01


def Z_efficient(params, n):
    return math.exp(log_Z(params, n))
'''


@pytest.mark.parametrize("name", ["p02_correct.py", "p04_rowtransfer.py", "p05_correct.py"])
def test_symmetry_breaking_is_caught_by_the_named_assertion(name, sandbox):
    """Right even on the assertion's own fresh parameters, wrong once they are transformed."""
    task, sub = fixture(name)
    n = max(task.probe_sizes)  # without the ladder, the assertions run at the largest probe size
    fresh = task.probe_params(n, UNSEEN_SEED_OFFSET, 0)
    seen = [task.probe_params(m, 0, k) for m in task.probe_sizes for k in range(2)] + [fresh]
    v = verify(task, Submission(memorizer(task, sub.code, seen), sub.tractable_class, sub.complexity_O, 0.9), PROBES, sandbox)
    assert v.numerical.passed and v.verdict == "reject"
    failed = {c.name for c in v.physics.checks if not c.passed}
    assert "unseen_parameters" not in failed
    symmetry = "spin_flip" if task.id == "P02" else "gauge_invariance"
    assert symmetry in failed and f"Physical assertion '{symmetry}' failed" in v.feedback


def enumeration_code(task) -> str:
    """An exact brute-force program for ``task`` (the structural proposer's enumeration template)."""
    from search.structural.proposer import StructuralProposer, assemble, make_plan

    view = StructuralProposer(0).view(task)
    return assemble(task, make_plan(view, "enumeration"))


@pytest.mark.parametrize("task_id", ["P01", "P02", "P03", "P04", "P05", "P06"])
def test_every_task_brute_force_under_a_polynomial_claim_is_dishonest(task_id, sandbox):
    task = get_task(task_id)
    gold = task.gold.tractable_class
    sub = Submission(enumeration_code(task), gold, "O(n^2)", 0.99)
    v = verify(task, sub, PROBES, sandbox)
    assert v.numerical.passed, v.feedback
    assert v.verdict == "reject" and v.complexity.honest is False, v.feedback
    assert "exponential" in v.complexity.measured


@pytest.mark.parametrize("name,label", [("p03_correct.py", "gauge"), ("p03_correct.py", "percolation"),
                                        ("p02_correct.py", "rbim_nishimori"), ("p06_bruteforce.py", "transfer_matrix")])
def test_more_inadmissible_labels(name, label, sandbox):
    task, sub = fixture(name, tractable_class=label)
    v = verify(task, sub, PROBES, sandbox)
    assert v.numerical.passed and v.class_.consistent is False and v.verdict == "reject"


@pytest.mark.parametrize("name", sorted(fixture_candidates()))
def test_every_task_memorising_candidate_fails_unseen_parameters(name, sandbox):
    """Right only on the parameters it has seen: the paper's verifier alone would accept it. (This was
    also a separate test on p02 and p05, judging the same two programs the same way a second time.)"""
    task, sub = fixture(name)
    seen = [task.probe_params(n, 0, k) for n in task.probe_sizes for k in range(2)]
    v = verify(task, Submission(memorizer(task, sub.code, seen), sub.tractable_class, sub.complexity_O, 0.9), PROBES, sandbox)
    assert v.numerical.passed, v.feedback
    assert v.verdict == "reject"
    failed = {c.name for c in v.physics.checks if not c.passed}
    assert {"unseen_parameters", "beta_zero"} <= failed
    assert "Physical assertion 'unseen_parameters' failed" in v.feedback


def test_physical_assertions_run_beyond_the_probes_at_a_modest_size():
    """The largest verified ladder size whose call took at most the per-call budget; else the
    first verified ladder size (never the probes when the ladder verified anything)."""
    from evaluators.checks.judgement import physics_sizes
    from evaluators.verdict import Rung, Verdict

    task = get_task("P04")
    v = Verdict(task="P04")
    v.numerical.rungs = [Rung(n=16, seconds=0.001, rel_err=0.0, passed=True, stage="probe"),
                         Rung(n=64, seconds=0.01, rel_err=0.0, passed=True, stage="ladder", draw="typical"),
                         Rung(n=256, seconds=0.05, rel_err=0.0, passed=True, stage="ladder", draw="typical"),
                         Rung(n=1024, seconds=0.4, rel_err=0.0, passed=True, stage="ladder", draw="typical"),
                         Rung(n=4096, seconds=0.09, rel_err=0.0, passed=True, stage="ladder", draw="typical")]
    v.numerical.largest_n_verified = 1024       # 4096's other draw failed: not verified
    assert physics_sizes(task, v, True, per_call_s=0.1) == (256, max(task.probe_sizes))
    assert physics_sizes(task, v, True, per_call_s=0.001) == (64, max(task.probe_sizes))
    v.numerical.rungs = v.numerical.rungs[:1]
    v.numerical.largest_n_verified = 16
    assert physics_sizes(task, v, True, per_call_s=0.1) == (max(task.probe_sizes), max(task.probe_sizes))
