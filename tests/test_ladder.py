"""The promotion ladder: verified beyond the probe sizes against exact oracles; wrong at scale
is a failure naming the size, running out of time/memory/float range only marks the frontier."""

import numpy as np
import pytest

from conftest import FIXTURES
from evaluators.ladder import LadderBudget
from evaluators.submission import Submission
from evaluators.verify import VerifyOptions, verify
from tasks.registry import get_task
from tasks.base import COLD_STRATA

QUICK = VerifyOptions(samples=2, judge=False, ladder_budget=LadderBudget(rung_timeout_s=10.0, total_s=60.0))

# Exact by enumeration up to n = 20, the "free chain" approximation beyond: right at every
# probe size of the paper, wrong at scale.
RIGHT_ONLY_SMALL = '''
import itertools, math
import numpy as np

def log_Z(params, n):
    beta, J = params["beta"], params["J"]
    h = np.asarray(params["h"], dtype=float)
    if n <= 20:
        best = []
        for s in itertools.product((-1.0, 1.0), repeat=n):
            s = np.array(s)
            best.append(beta * (J * np.dot(s[:-1], s[1:]) + np.dot(h, s)))
        m = max(best)
        return m + math.log(sum(math.exp(b - m) for b in best))
    return float(np.sum(np.log(2 * np.cosh(beta * h)))) + (n - 1) * math.log(math.cosh(beta * J))

def Z_efficient(params, n):
    return math.exp(log_Z(params, n))
'''


def test_right_only_at_probe_sizes_is_rejected_at_the_first_large_size(sandbox):
    v = verify(get_task("P02"), Submission(RIGHT_ONLY_SMALL), QUICK, sandbox)
    assert v.verdict == "reject"
    assert "At n=100 (beyond the probe sizes)" in v.feedback
    assert v.numerical.largest_n_verified == 12
    ladder = [r for r in v.numerical.rungs if r.stage == "ladder"]
    assert ladder and ladder[-1].n == 100 and not ladder[-1].passed


def test_correct_candidate_climbs_and_records_rung_times(sandbox):
    code = (FIXTURES / "p01_correct.py").read_text()
    v = verify(get_task("P01"), Submission(code), QUICK, sandbox)
    assert v.verdict == "accept", v.feedback
    ladder = [r for r in v.numerical.rungs if r.stage == "ladder"]
    # every size is checked on a typical draw and on one cold draw per stratum (beta |J| 6 .. 3000)
    assert [(r.n, r.draw) for r in ladder] == [(n, d) for n in get_task("P01").ladder_sizes
                                               for d in ("typical",) + ("cold",) * len(COLD_STRATA)]
    assert all(r.passed and r.seconds >= 0 and r.rel_err < 1e-6 for r in ladder)
    for n in get_task("P01").ladder_sizes:
        cold = [float(r.note.rsplit("= ", 1)[1]) for r in ladder if r.draw == "cold" and r.n == n]
        assert all(lo <= bj <= hi for bj, (lo, hi) in zip(cold, COLD_STRATA)), cold
    assert v.numerical.largest_n_verified == 100_000
    assert v.numerical.frontier is None


def test_a_size_cap_ends_the_climb_at_the_cap_as_the_verifiers_own_limit(sandbox):
    code = (FIXTURES / "p01_correct.py").read_text()
    capped = VerifyOptions(samples=1, judge=False, ladder_budget=LadderBudget(rung_timeout_s=10.0, total_s=60.0, max_n=5000))
    v = verify(get_task("P01"), Submission(code), capped, sandbox)
    assert v.verdict == "accept", v.feedback
    per_rung = 1 + len(COLD_STRATA)                 # a typical draw and the cold ones
    assert [r.n for r in v.numerical.rungs if r.stage == "ladder"] == [100] * per_rung + [1000] * per_rung, \
        "nothing above the cap runs"
    assert v.numerical.largest_n_verified == 1000
    assert (v.numerical.frontier.n, v.numerical.frontier.kind) == (10_000, "ladder_cap")
    assert "ladder_max_n" in v.numerical.frontier.detail


def test_z_overflow_ends_the_climb_and_asks_for_log_z(sandbox):
    code = "import math\ndef Z_efficient(params, n):\n    K = params['beta'] * params['J']\n    return 2 * (2 * math.cosh(K)) ** (n - 1)\n"
    v = verify(get_task("P01"), Submission(code), QUICK, sandbox)
    assert v.verdict == "accept"  # overflow is the frontier, not an error
    assert "log_Z(params, n)" in v.feedback
    assert 100 <= v.numerical.largest_n_verified < 100_000


def test_time_budget_marks_the_frontier(sandbox):
    code = (FIXTURES / "p06_bruteforce.py").read_text()
    budget = LadderBudget(rung_timeout_s=3.0, memory_mb=4096, total_s=30.0)
    v = verify(get_task("P06"), Submission(code), VerifyOptions(samples=1, judge=False, ladder_budget=budget), sandbox)
    assert v.verdict == "accept", v.feedback
    assert v.numerical.largest_n_verified in (10, 16)
    assert "stopped at n=" in v.feedback and ("time budget" in v.feedback or "memory budget" in v.feedback)


def test_memory_budget_marks_the_frontier(sandbox):
    code = (FIXTURES / "p04_rowtransfer.py").read_text()
    budget = LadderBudget(rung_timeout_s=15.0, memory_mb=1024, total_s=60.0)
    v = verify(get_task("P04"), Submission(code), VerifyOptions(samples=1, judge=False, ladder_budget=budget), sandbox)
    assert v.verdict == "accept", v.feedback
    assert v.numerical.largest_n_verified == 64
    assert "memory budget" in v.feedback


def test_draws_cover_the_whole_physical_range():
    """Cold draws at every rung, one per stratum of beta * max|J| (6 .. 30, 30 .. 300, 300 .. 3000:
    issue 36's program changed route at 12, past the old single draw in [6, 10]); critical draws
    where the task has a critical point; the error-rate tasks' cold p down to ~1e-304 (K <= 350)."""
    from evaluators.ladder import ladder_draws
    from tasks.base import coupling_scale
    from tasks.catalog.p03_torus import ONSAGER_KC

    for task_id in ("P01", "P03", "P04", "P05", "P06", "T08", "T10", "T17"):
        task = get_task(task_id)
        n = task.ladder_sizes[-1]
        draws = ladder_draws(task, n, seed=3)
        cold = [d for d in draws if d.kind == "cold"]
        assert len(cold) == len(COLD_STRATA), task_id
        for d, (lo, hi) in zip(cold, COLD_STRATA):
            model = task.to_model(d.params, n)
            assert lo <= model.beta * coupling_scale(model) <= hi, task_id
            assert d.note.startswith("cold: beta = ")
        assert any(d.kind == "critical" for d in draws) == (task_id in ("P03", "T10")), task_id
    p03 = {d.kind: d for d in ladder_draws(get_task("P03"), 1024, seed=0)}
    assert p03["critical"].params["beta"] * p03["critical"].params["J"] == pytest.approx(ONSAGER_KC)
    for task_id in ("T18", "T19", "T20"):
        draws = ladder_draws(get_task(task_id), 64, seed=1)
        ks = [0.5 * (np.log1p(-d.params["p"]) - np.log(d.params["p"])) for d in draws if d.kind == "cold"]
        assert len(ks) == 3 and all(lo <= k <= min(hi, 350.0) for k, (lo, hi) in zip(ks, COLD_STRATA)), ks
        assert [d.params["p"] for d in draws if d.kind == "critical"] == [pytest.approx(0.10919)]


def test_an_evaluator_draws_each_rung_once_and_per_task_object():
    """The draws are kept per (task object, n, seed, samples): a second ask returns the same
    values without drawing again; another task object with the same id draws its own."""
    import copy

    from evaluators import ladder

    task = get_task("P01")
    first = ladder.ladder_draws(task, 10000, seed=7)
    again = ladder.ladder_draws(task, 10000, seed=7)
    assert [d.kind for d in again] == [d.kind for d in first] and all(a is b for a, b in zip(again, first))
    fresh = ladder._make_draws(task, 10000, 7, 1)
    for a, b in zip(first, fresh):
        assert a.note == b.note and a.params.keys() == b.params.keys()
        for k in a.params:
            assert np.array_equal(np.asarray(a.params[k]), np.asarray(b.params[k])), k
    assert ladder.ladder_draws(task, 10000, seed=8)[0].params != first[0].params   # the seed is in the key
    twin = copy.copy(task)
    assert all(a is not b for a, b in zip(ladder.ladder_draws(twin, 10000, seed=7), first))


def test_wrong_only_when_cold_is_rejected_naming_the_draw(sandbox):
    """Right on the sampler's temperatures, wrong once beta |J| > 5: only the cold draw sees it."""
    code = (FIXTURES / "p01_correct.py").read_text().replace(
        "def log_Z(params, n):\n", "def log_Z(params, n):\n    if abs(params['beta'] * params['J']) > 5:\n        return 0.0\n", 1)
    assert code != (FIXTURES / "p01_correct.py").read_text()
    v = verify(get_task("P01"), Submission(code), QUICK, sandbox)
    assert v.verdict == "reject"
    assert "At n=100 (beyond the probe sizes), on cold: beta = " in v.feedback
    bad = [r for r in v.numerical.rungs if not r.passed]
    assert [(r.n, r.draw) for r in bad] == [(100, "cold")]


def test_references_are_sought_within_what_is_left_of_the_climbs_budget(sandbox, monkeypatch):
    """A cold draw whose reference no oracle gives in time used to get the oracle's own 120 s even
    when the climb had 60 s in all (T18 at n = 256: a 100 s search, then the climb's budget was
    gone before the next draw): every lookup now gets at most what is left."""
    from evaluators import ladder as ladder_module

    asked = []
    real = ladder_module.lookup

    def recording(task, params, n, method=None, budget_s=None):
        asked.append(budget_s)
        return real(task, params, n, method, budget_s)

    monkeypatch.setattr(ladder_module, "lookup", recording)
    code = (FIXTURES / "p01_correct.py").read_text()
    out = ladder_module.climb(get_task("P01"), code, True, sandbox, budget=LadderBudget(rung_timeout_s=10.0, total_s=30.0))
    assert out.largest_n_verified == 100_000 and asked
    assert all(1.0 <= b <= 30.0 for b in asked) and asked[0] > asked[-1]
