"""Negative prompting: method families from code, the per-island memory of what was tried, the
policy deciding when the block appears, and the prompt recording whether it did."""

import msgpack
import pytest

from evaluators.submission import Submission
from evaluators.verdict import (ClassCheck, Complexity, Failure, Numerical, Physics, PhysicsCheck, Rung, SandboxFindings,
                                Verdict)
from evaluators.verify import VerifyOptions, verify

from conftest import FIXTURES
from search.failure_reason import first_failure
from search.negative import (
    NegativeLedger, NegativeMemory, NegativePolicy, classify_method, diversity_per_100, failed_route,
    method_families, named_routes,
)
from search.prompt_builder import ProgramView, PromptBuilder, PromptConfig
from search.prompts import fill, load_templates
from tasks.registry import get_task

EXPECTED_FAMILY = {
    "p01_correct.py": "closed form",
    "p02_correct.py": "chain transfer matrix",
    "p03_correct.py": "row transfer",
    "p04_rowtransfer.py": "row transfer",
    "p05_correct.py": "gauge + magnetisation sum",
    "p06_bruteforce.py": "enumeration",
}


@pytest.mark.parametrize("name", sorted(EXPECTED_FAMILY))
def test_fixture_candidates_get_their_method_family(name):
    assert classify_method((FIXTURES / name).read_text()) == EXPECTED_FAMILY[name]


@pytest.mark.parametrize("code,family", [
    ("import numpy as np\ndef Z_efficient(p, n):\n    return np.einsum('ij,jk->', A, B)", "tensor network"),
    ("import numpy as np\ndef Z_efficient(p, n):\n    s, ld = np.linalg.slogdet(M)\n    return ld", "pfaffian/kac-ward"),
    ("def Z_efficient(p, n):\n    return kasteleyn_pfaffian(p)", "pfaffian/kac-ward"),
    ("import itertools\ndef Z_efficient(p, n):\n    return sum(1 for s in itertools.product([-1, 1], repeat=n))", "enumeration"),
    ("def Z_efficient(p, n):\n    return sum(1 for c in range(1 << n))", "enumeration"),
    ("def Z_efficient(p, n):\n    L = int(n ** 0.5)\n    return sum(1 for c in range(2 ** (L * L)))", "enumeration"),
    ("def Z_efficient(p, n):\n    L = int(n ** 0.5)\n    T = [[0] * 2 ** L for _ in range(2 ** L)]\n    return 1", "row transfer"),
    ("from functools import lru_cache\ndef Z_efficient(p, n):\n    msg = [1.0]\n    for i in range(n):\n"
     "        msg = logsumexp(msg)\n    return msg", "dynamic programming"),
    ("import math\ndef Z_efficient(p, n):\n    return 2 * (2 * math.cosh(p['beta'])) ** (n - 1)", "closed form"),
    ("def Z_efficient(p, n):\n    return 1.0", "other"),
    ("def Z_efficient(p, n) return einsum(", "tensor network"),  # does not parse: keywords still count
])
def test_method_family_of_synthetic_programs(code, family):
    assert classify_method(code) == family


def test_method_families_lists_every_mark_and_empty_code_is_other():
    code = "import numpy as np\ndef Z_efficient(p, n):\n    np.einsum('i->', x)\n    return sum(range(2 ** n))"
    assert method_families(code) == ["tensor network", "enumeration"]
    assert classify_method(None) == "other" and classify_method("") == "other"


@pytest.mark.parametrize("policy,accepted,failures,active", [
    (NegativePolicy(enabled=False, start_after_accepted=None), 5, 5, False),
    (NegativePolicy(enabled=True, start_after_accepted=1), 0, 9, False),
    (NegativePolicy(enabled=True, start_after_accepted=1), 1, 0, True),
    (NegativePolicy(enabled=True, start_after_accepted=2, start_after_failures=3), 1, 3, True),
    (NegativePolicy(enabled=True, start_after_accepted=None, start_after_failures=3), 9, 2, False),
    (NegativePolicy(enabled=True, start_after_accepted=None, start_after_failures=None), 0, 0, True),
])
def test_policy_decides_when_the_block_is_used(policy, accepted, failures, active):
    assert policy.active(accepted, failures) is active


FAIL_FEEDBACK = "Verifier ran on 10 (n, params) samples.\n4/10 samples failed.\n- relative error 3.1e-01 >> 1e-06"
PROBES_FAILED = Verdict(task="P06", numerical=Numerical(probes=10, failed=4, max_rel_err=0.31,
                                                       rungs=[Rung(8, 0.01, 0.31, False), Rung(8, 0.01, 0.0, True)]),
                        feedback=FAIL_FEEDBACK,
                        failure=Failure("probes", "4/10 probe samples failed (relative error 3.1e-01 >> 1e-06)"))


def test_memory_lists_tried_approaches_and_failed_routes():
    mem = NegativeMemory()
    p01 = (FIXTURES / "p01_correct.py").read_text()
    p06 = (FIXTURES / "p06_bruteforce.py").read_text()
    mem.record("transfer_matrix", p01, accepted=True)
    mem.record("no_efficient_known", p06, accepted=False, verdict=PROBES_FAILED)
    mem.record("gauge", None, accepted=False, reason="the response was empty")
    assert (mem.accepted, mem.failures) == (1, 2)
    block = mem.block(NegativePolicy(enabled=True, start_after_accepted=1, max_items=10))
    assert block.used
    assert block.items[0] == "transfer_matrix / closed form (tried 1 time(s), accepted 1 time(s))"
    assert ("failed route: no_efficient_known via enumeration: probes: 4/10 probe samples failed "
            "(relative error 3.1e-01 >> 1e-06)") in block.items
    assert "failed route: gauge via no runnable code: the response was empty" in block.items
    assert len(mem.block(NegativePolicy(enabled=True, start_after_accepted=1, max_items=2)).items) == 2
    assert not mem.block(NegativePolicy(enabled=True, start_after_accepted=2)).used


PASSED = "Verifier ran on 10 (n, params) samples.\nAll samples passed (max relative error 3.55e-15)."


def rejected(**parts) -> Verdict:
    """A rejected Verdict whose numbers passed (the feedback starts with the all-passed branch)."""
    v = Verdict(task="P04", numerical=Numerical(passed=True, probes=10, max_rel_err=3.55e-15, largest_n_verified=4096,
                                                rungs=[Rung(16, 0.01, 1e-15, True)]),
                feedback=PASSED + "\nPromotion ladder: exact against the oracle up to n=4096. Every rung passed.")
    for k, value in parts.items():
        setattr(v, k, value)
    return v


@pytest.mark.parametrize("verdict,expected", [
    # written by the verifier: the typed failure is rendered as it is
    (rejected(failure=Failure("class consistency", "the code enumerates 2^L row states: a transfer matrix, not a "
                                                   "Pfaffian")),
     "class consistency: the code enumerates 2^L row states: a transfer matrix, not a Pfaffian"),
    (rejected(failure=Failure("physical assertion", "log Z disagrees at beta = 6", "low_temperature")),
     "physical assertion low_temperature: log Z disagrees at beta = 6"),
    # journaled before the typed failure existed: named from the typed fields, the prose is never read
    (rejected(class_=ClassCheck("pfaffian", False, ["the code enumerates 2^L row states: a transfer matrix, not a "
                                                    "Pfaffian"])),
     "class consistency: the code enumerates 2^L row states: a transfer matrix, not a Pfaffian"),
    (rejected(complexity=Complexity("O(n^1.5)", "exp(sqrt n)", False),
              feedback=PASSED + "\nComplexity: measured growth exp(sqrt n) is faster than the claimed O(n^1.5)"),
     "complexity audit: claimed O(n^1.5), measured exp(sqrt n)"),
    (rejected(physics=Physics(False, [PhysicsCheck("beta_zero", True, "ok"),
                                      PhysicsCheck("low_temperature", False, "log Z disagrees at beta = 6")])),
     "physical assertion low_temperature: log Z disagrees at beta = 6"),
    (rejected(numerical=Numerical(passed=False, probes=10, failed=1, rungs=[Rung(16, 0.01, 1e-15, True),
                                                                             Rung(64, 0.1, 0.2, False, "ladder")]),
              feedback=PASSED + "\nAt n=64 (beyond the probe sizes) your log_Z is wrong: relative error 2.0e-01"),
     "promotion ladder: At n=64 (beyond the probe sizes) the value was wrong"),
    (rejected(sandbox=SandboxFindings(["import:os"]), feedback="Your code did not run. Error: forbidden construct(s)"),
     "sandbox: forbidden construct(s) import:os"),
    (Verdict(task="P04", feedback="Your code did not run. Error: the code does not define Z_efficient(params, n)"),
     "did not run: no value was returned"),
])
def test_the_first_failure_is_the_check_that_failed_never_a_passed_stage(verdict, expected):
    assert first_failure(verdict) == expected
    route = failed_route("pfaffian", "row transfer", first_failure(verdict))
    assert "All samples passed" not in route and route == f"pfaffian via row transfer: {expected}"


def test_the_verifier_keeps_the_earliest_failed_stage_and_the_record_round_trips():
    v = Verdict(task="P04")
    v.fail("physical assertion", "log Z disagrees", "low_temperature")
    v.fail("complexity audit", "measured exp(n)  faster\nthan O(n)")
    v.fail("class consistency", "not a Pfaffian")
    assert v.failure == Failure("complexity audit", "measured exp(n) faster than O(n)")
    assert Verdict.from_dict(v.to_dict()).failure == v.failure
    old = v.to_dict()
    del old["failure"]                                   # a journal written before the field existed
    assert Verdict.from_dict(old).failure is None


def test_an_accepted_verdict_has_no_failure():
    assert first_failure(rejected(verdict="accept")) is None and first_failure(None) is None


def test_a_dishonest_row_transfer_claimed_as_pfaffian_is_named_by_its_class_and_complexity(sandbox):
    """The issue's case, through the real verifier: every sample passes, the claim is a lie."""
    code = (FIXTURES / "p04_rowtransfer.py").read_text()
    v = verify(get_task("P04"), Submission(code, "pfaffian", "O(n^1.5)", 0.9, "FKT on the grid"),
               VerifyOptions(samples=2, ladder=False), sandbox)
    assert not v.accepted and v.numerical.passed and "All samples passed" in v.feedback
    failure = first_failure(v)
    assert failure.startswith(("complexity audit:", "class consistency:")), failure
    mem = NegativeMemory()
    mem.record("pfaffian", code, accepted=False, verdict=v)
    assert mem.failed_routes == [f"pfaffian via row transfer: {failure}"]


@pytest.mark.parametrize("spelling", ["Kac-Ward", "Kac Ward", "kacward", "kac_ward", "KacWard", "Kac\u2013Ward",
                                      "Pfaffian", "pfaff", "Kasteleyn", "FKT"])
def test_routes_are_recognised_by_their_usual_spellings(spelling):
    code = f"import numpy as np\n\n\ndef Z_efficient(params, n):\n    # {spelling} route\n    return 1.0\n"
    assert classify_method(code) == "pfaffian/kac-ward"
    assert named_routes(f"the {spelling} determinant") == {"pfaffian/kac-ward"}


def test_route_names_do_not_fire_on_ordinary_words():
    assert named_routes("for i, x in enumerate(xs): total = sum(product(x))") == set()
    assert classify_method((FIXTURES / "t14_kac_ward.py").read_text()) == "pfaffian/kac-ward"
    assert named_routes("a row-by-row transfer") == {"row transfer"}
    assert named_routes("belief propagation on the tree") == {"dynamic programming"}
    assert named_routes("# with fields there is no Pfaffian; instead of Kac-Ward we sweep rows") == set()
    assert classify_method((FIXTURES / "t16_row_transfer.py").read_text()) != "pfaffian/kac-ward"


def test_memory_round_trips_and_islands_are_separate():
    ledger = NegativeLedger()
    ledger.island(0).record("pfaffian", "x = np.linalg.slogdet(M)", accepted=False, verdict=PROBES_FAILED)
    ledger.island(3).record("gauge", None, accepted=True)
    assert ledger.island(1).approaches == {}
    back = NegativeLedger.from_dict(msgpack.unpackb(msgpack.packb(ledger.to_dict()), strict_map_key=False))
    assert back.to_dict() == ledger.to_dict()
    assert back.island(0).failures == 1 and back.island(3).accepted == 1


def test_evolve_prompt_records_whether_the_negative_block_was_used():
    task = get_task("P01")
    mem = NegativeMemory()
    mem.record("transfer_matrix", (FIXTURES / "p01_correct.py").read_text(), accepted=True)
    on = PromptBuilder(PromptConfig(negative=NegativePolicy(enabled=True, start_after_accepted=1)))
    off = PromptBuilder(PromptConfig(negative=NegativePolicy(enabled=False)))
    with_block = on.evolve(task.description(), negative=mem)
    without = off.evolve(task.description(), negative=mem)
    assert with_block.meta["negative"] is True and with_block.meta["negative_items"] == 1
    assert "Approaches already tried" in with_block.messages[1]["content"]
    assert "transfer_matrix / closed form" in with_block.messages[1]["content"]
    assert without.meta["negative"] is False
    assert "Approaches already tried" not in without.messages[1]["content"]
    assert "negative@" in with_block.prompt_id and "negative@" not in without.prompt_id


def test_evolve_prompt_slots_parent_inspirations_failed_checks_hints_and_diff_format():
    task = get_task("P01")
    parent_code = "import math\n\n\n\ndef Z_efficient(params, n):\n    return 1.0\n"
    verdict = Verdict(task="P01", verdict="reject", numerical=Numerical(probes=10, failed=10, max_rel_err=0.9),
                      class_=ClassCheck(reasons=["claimed gauge but the couplings carry no disorder"]),
                      physics=Physics(checks=[PhysicsCheck("beta0", False, "Z(beta=0) != 2^n")]),
                      feedback="Verifier ran on 10 (n, params) samples.\n10/10 samples failed.")
    parent = ProgramView("par1", parent_code, "gauge", "O(n)", 0.4, verdict)
    other = ProgramView("insp1", "def Z_efficient(p, n):\n    return 2.0\n", "pfaffian", None, None, None)
    b = PromptBuilder(PromptConfig(hints=True, output_format="diff"))
    p = b.evolve(task.description(), parent, [other], {"planar": "yes", "max degree": "2"})
    user = p.messages[1]["content"]
    assert parent_code.rstrip() in user  # code verbatim (blank lines kept), so SEARCH text can match it
    assert "--- parent program (par1) ---" in user and "--- other program 1 (insp1) ---" in user
    assert "10/10 probes failed" in user and "class check: claimed gauge" in user
    assert "physics check beta0: Z(beta=0) != 2^n" in user
    assert "- planar: yes" in user and "<<<<<<< SEARCH" in user
    assert p.meta == {"kind": "evolve", "mode": "crossover", "format": "diff", "interface": False, "negative": False,
                      "negative_items": 0, "hints": True, "inspirations": 1, "parent": "par1"}
    assert "\n\n\n" not in user.replace(parent_code.rstrip(), "")
    # hints off: facts are not shown; no parent: diff falls back to the full format
    q = PromptBuilder(PromptConfig(hints=False, output_format="diff")).evolve(task.description(), None, (), {"planar": "yes"})
    assert "planar" not in q.messages[1]["content"] and q.meta["format"] == "full"


def test_prompt_templates_are_overridable_and_fill_is_strict(tmp_path):
    (tmp_path / "negative.txt").write_text("TRIED BEFORE:\n{items}\n")
    t = load_templates(tmp_path)
    assert t["negative"] == "TRIED BEFORE:\n{items}" and t.sources["negative"] == str(tmp_path / "negative.txt")
    assert t["system"] == load_templates()["system"]
    assert t.prompt_id("negative") != load_templates().prompt_id("negative")
    with pytest.raises(FileNotFoundError):
        load_templates(tmp_path / "missing")
    with pytest.raises(KeyError):
        fill("no slots here", items="x")
    assert fill("{a} {b} {a}", a="{b}", b="2") == "{b} 2 {b}"  # one pass: values are not re-filled


def test_diversity_is_measured_per_negative_block_use():
    recs = [{"code": "def Z_efficient(p, n):\n    return sum(range(2 ** n))", "tractable_class": "no_efficient_known",
             "prompt_meta": {"negative": False}}] * 4
    recs += [{"code": "import math\ndef Z_efficient(p, n):\n    return math.cosh(1)", "tractable_class": "transfer_matrix",
              "prompt_meta": {"negative": True}},
             {"code": "def Z_efficient(p, n):\n    return np.einsum('i->', x)", "tractable_class": "pfaffian",
              "prompt_meta": {"negative": True}}]
    d = diversity_per_100(recs)
    assert d["without"] == {"proposals": 4, "families_per_100": 25.0, "labels_per_100": 25.0, "signatures_per_100": 0.0}
    assert d["with"] == {"proposals": 2, "families_per_100": 100.0, "labels_per_100": 100.0, "signatures_per_100": 0.0}
    recs = [{**r, "id": f"c{i}"} for i, r in enumerate(recs)]
    d = diversity_per_100(recs, {"c0": "accept|a", "c1": "reject|b", "c2": "reject|b", "c4": "x", "c5": "x"})
    assert d["without"]["signatures_per_100"] == 50.0 and d["with"]["signatures_per_100"] == 50.0
