"""The database's score, fitness, features and behaviour signatures."""

import math

import numpy as np
import pytest
from database_helpers import EXP1, POLY2, code, program, verdict

from evaluators.checks.growth import Growth
from search.candidate import Candidate
from search.database import Program, fitness, measured_growth, named_score, score_of
from search.database.dedup import normalised_hash
from search.database.features import FeatureSpace, behaviour_signature


# -- score -------------------------------------------------------------------------------------

def test_score_order():
    s = lambda **kw: score_of(verdict(**kw), code())  # noqa: E731
    assert s(accept=True, n=16) > s(accept=False, n=1024)                       # accepted beats rejected
    assert s(n=256) > s(n=64)                                                   # larger verified n wins
    assert s(n=64, measured=POLY2) > s(n=64, measured=EXP1)                     # poly beats exp at equal n
    assert s(n=64, measured=EXP1) > s(n=64, measured=None, honest=None)         # measured beats unknown
    # an honest claim counts where it is the costlier (an exponential method timed at small sizes) ...
    assert s(n=64, measured=POLY2, claimed="O(n^3)") > s(n=64, measured=POLY2, claimed="O(2^n)")
    assert s(n=64, measured=POLY2, claimed="O(2^n)") == s(n=64, measured=EXP1.replace("0.", "1."), claimed="O(2^n)")
    assert s(n=64, measured=POLY2, claimed="O(2^n)", honest=None)[3:5] == s(n=64, measured=POLY2)[3:5]  # if honest
    # ... and where nothing could be timed (a program too fast for the timer)
    assert s(n=64, measured=None, claimed="O(n)") > s(n=64, measured=POLY2) > s(n=64, measured=None, claimed="O(n^3)")
    assert s(measured=POLY2) > s(measured=POLY2.replace("n^2", "n^3"))          # lower degree wins
    assert s(accept=False, n=16) > s(accept=False, n=1024, passed=False)        # wrong values lose
    assert s(accept=False, physics=True) > s(accept=False, physics=None) > s(accept=False, physics=False)
    assert s(accept=False, consistent=True) > s(accept=False, consistent=False)
    assert s(accept=False, honest=True) > s(accept=False, honest=False)
    short, long_ = code(1.0), code(1.0, "\n\n\ndef helper():\n    return 0\n")
    assert score_of(verdict(), short) > score_of(verdict(), long_)              # shorter code breaks ties
    commented = "# why this works: bonds are independent\n" + code(1.0).replace("return", '"""doc"""\n    return')
    assert score_of(verdict(), commented) == score_of(verdict(), short)        # comments cost nothing
    failed = [score_of(None, code()), score_of(verdict(), None), score_of(verdict(violations=["open"]), code())]
    assert all(f < s(accept=False, passed=False, n=0) for f in failed)         # failures rank lowest
    assert all(type(x) is float for x in s()) and all(type(x) is float for x in failed[0])


def test_fitness_respects_status_and_numerical_pass_exactly():
    worst_accepted = score_of(verdict(n=0, measured=None, physics=None, consistent=None, honest=None),
                              code(extra="\n" + "x = 1\n" * 3000))
    best_rejected = score_of(verdict(accept=False, n=10 ** 9, measured="O(1) (from the code)"), "x=1")
    worst_rejected_pass = score_of(verdict(accept=False, n=0, measured=None, physics=False, consistent=False,
                                           honest=False), code(extra="\n" + "x = 1\n" * 3000))
    best_rejected_fail = score_of(verdict(accept=False, passed=False, n=10 ** 9, measured="O(1) (from x)"), "x=1")
    assert fitness(worst_accepted) > fitness(best_rejected)
    assert fitness(worst_rejected_pass) > fitness(best_rejected_fail)
    assert fitness(best_rejected_fail) > fitness(score_of(None, "x=1"))
    assert 0.0 <= fitness(score_of(None, "x" * 10 ** 6)) and fitness(score_of(verdict(n=10 ** 9), "x=1")) <= 1.0


def test_the_measured_growth_is_typed_and_old_verdicts_are_upgraded_from_their_sentence():
    """The audit records the growth as data; a Verdict journaled before that (only the sentence) is upgraded
    when it loads, to the same (kind, rate) for every growth Growth.describe can write."""
    from evaluators.verdict import Verdict

    rng = np.random.default_rng(0)
    for kind in ("poly", "exp_sqrt", "exp"):
        for rate in [0.0, float("inf")] + list(np.round(rng.uniform(0.1, 6.0, 20), 2)):
            g = Growth(kind, float(rate))
            old = verdict(measured=g.describe() + " (from timings over n = 8..64)").to_dict()
            for key in ("measured_kind", "measured_rate"):
                del old["complexity"][key]
            got_kind, got_rate = measured_growth(Verdict.from_dict(old))
            assert got_kind == kind
            if math.isinf(rate):
                assert got_rate == 99.0
            elif kind != "poly" or rate == 0:
                assert got_rate == pytest.approx(float(f"{rate:.2g}"))
            else:
                assert got_rate == pytest.approx(round(rate, 1))
    assert measured_growth(None) == ("unknown", 99.0) and measured_growth(verdict(measured="n log n"))[0] == "unknown"


def test_features_and_signature():
    p = program("a", cls="Transfer-Matrix")
    space = FeatureSpace()
    assert space.cell_of(p.descriptors) == "method=closed form|class=transfer_matrix|complexity=poly|length=1"
    assert FeatureSpace(("class",)).cell_of(program("b", cls="magic").descriptors) == "class=unlisted"
    assert FeatureSpace(("length",), length_bins=2).cell_of({"lines": 1000}) == "length=1"
    with pytest.raises(ValueError):
        FeatureSpace(("colour",))
    # equal behaviour -> equal signature; any rung outcome or the verdict changes it
    assert behaviour_signature(verdict()) == behaviour_signature(verdict(err=2e-13, physics=False))
    assert behaviour_signature(verdict()) != behaviour_signature(verdict(err=1e-9))
    assert behaviour_signature(verdict()) != behaviour_signature(verdict(n=128))
    assert behaviour_signature(verdict()) != behaviour_signature(verdict(accept=False))
    assert behaviour_signature(verdict()) != behaviour_signature(verdict(measured=EXP1))
    assert behaviour_signature(None) == "failed"


def test_program_from_candidate_and_dict_round_trip():
    cand = Candidate("abc", "P01", code(2.0), "transfer_matrix", "O(n)", 0.8, parent_ids=["p", "q"])
    p = Program.from_candidate(cand, verdict())
    assert (p.id, p.tractable_class, p.complexity_O, p.parent_ids) == ("abc", "transfer_matrix", "O(n)", ["p", "q"])
    assert p.code_hash == normalised_hash(cand.code) and p.score == score_of(verdict(), cand.code)
    assert p.accepted and not p.failed and Program.from_dict(p.to_dict()) == p
    assert Program.from_candidate(Candidate.failed("x", "P01", "no JSON"), None).failed


# -- the named view of a score -------------------------------------------------------------------------

def test_named_score_reads_every_component_back_from_the_tuple():
    rng = np.random.default_rng(4)
    for _ in range(200):
        n = int(rng.choice([0, 6, 14, 100, 4096, 100000, 10 ** 9]))
        kind, rate = [("poly", f"polynomial, about n^{rng.choice([0.5, 1, 2.5])}"),
                      ("exp", "exponential in n, about 2^(0.75 n)"), ("unknown", None),
                      ("poly", "polynomial of unstated degree")][int(rng.integers(4))]
        tri = [None, True, False]
        physics, consistent, honest = (tri[int(rng.integers(3))] for _ in range(3))
        accept = bool(rng.random() < 0.5)
        v = verdict(accept=accept, n=n, measured=rate and rate + " (from timings)", physics=physics,
                    consistent=consistent, honest=honest, passed=bool(rng.random() < 0.8))
        c = code(float(rng.uniform()), "\n" * int(rng.integers(3)))
        s = score_of(v, c)
        named = named_score(s)
        assert named.status == ("accepted" if accept else "rejected") and named.numerical_pass == v.numerical.passed
        assert named.largest_n_verified == n                      # exact, from log2(1 + n)
        assert (named.physics, named.class_consistent, named.complexity_honest) == (physics, consistent, honest)
        if kind == "unknown" and honest:                          # nothing timed: the honest claim, O(n^2)
            kind, rate = "poly", "n^2"
        assert named.growth == kind and named.code_length == -s[8] and named.fitness == fitness(s)
        if kind == "exp":
            expected_rate = 0.75
        elif kind == "unknown" or "unstated" in rate:
            expected_rate = None
        else:
            expected_rate = round(float(rate.split("^")[1]) * 2) / 2     # degrees quantised to 0.5
        assert named.growth_rate == expected_rate
        assert f"largest n verified {n};" in named.text() and named.to_dict()["largest_n_verified"] == n


def test_named_score_of_a_failed_program_and_of_what_is_not_a_score():
    failed = named_score(score_of(None, "x = 1"))
    assert failed.status == "failed" and failed.text().startswith("failed (no code, no verdict")
    assert named_score([1, 64.0]) is None and named_score(["a"] * 9) is None and named_score(None) is None
    assert named_score([3.0] + [0.0] * 8) is None              # no such status
