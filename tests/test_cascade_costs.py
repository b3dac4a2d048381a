"""What makes the cascade cheaper must not change what it measures: the judge's timing calls
batched into one run per repeat give the same timings under the same budgets, a per-call budget
kills a run at the call that exceeds it, a remembered static check still reports violations,
and a reference two evaluators need at once is computed once."""

import math
import threading
import time

import pytest

from evaluators import oracle_cache
from evaluators.checks.complexity import suggest_sizes, time_sizes
from evaluators.checks.judgement import JudgeBudget, _time_more_sizes
from evaluators.checks.timing_fit import fit_growth
from evaluators.oracles.base import OracleResult
from evaluators.sandbox import Call, CallResult, Limits, SandboxReport
from tasks.registry import get_task


class BatchSandbox:
    """Answers like the sandbox: seconds(n) per call (the first call of a size twice as slow, as
    under load), killing a run at the first call over ``call_timeout_s`` (or a one-call run over
    ``timeout_s``)."""

    def __init__(self, seconds):
        self.seconds, self.runs, self.seen = seconds, [], []

    def run(self, code, calls, limits):
        self.runs.append([c.n for c in calls])
        budget = limits.call_timeout_s or limits.timeout_s
        results = []
        for c in calls:
            t = self.seconds(c.n) * (2.0 if c.n not in self.seen else 1.0)
            self.seen.append(c.n)
            if t > budget:
                return SandboxReport(results=tuple(results), timed_out=True, error="timed out")
            results.append(CallResult(True, 1.0, None, t))
        return SandboxReport(results=tuple(results))


@pytest.mark.parametrize("seconds", [lambda n: 1e-7 * 2.0 ** n, lambda n: 1e-3 * n])
def test_batched_timing_measures_what_one_run_per_call_measures(seconds):
    sizes, task = [12, 16, 20, 24, 28, 30], get_task("P06")
    one, many = BatchSandbox(seconds), BatchSandbox(seconds)
    alone = time_sizes("code", "Z_efficient", task, sizes, one, repeats=3, budget_s=2.0, batched=False)
    batched = time_sizes("code", "Z_efficient", task, sizes, many, repeats=3, budget_s=2.0, batched=True)
    assert batched.points == alone.points                       # same sizes, same minimum seconds
    assert batched.runs <= 3 < alone.runs                       # one run per repeat instead of one per call
    assert all(len(set(r)) == len(r) for r in many.runs)        # no run calls one size twice (no cache helps)
    assert all(r == sorted(r) for r in many.runs)               # sizes climb within a run


def test_batched_timing_stops_climbing_at_the_first_call_over_budget():
    box = BatchSandbox(lambda n: 1e-7 * 2.0 ** n)
    out = time_sizes("code", "Z_efficient", get_task("P06"), [12, 16, 20, 24, 28, 30], box, repeats=3,
                     budget_s=2.0, batched=True)
    assert [n for n, _ in out.points] == [12, 16, 20]
    assert out.points[0][1] == pytest.approx(1e-7 * 2.0 ** 12)   # the minimum, not the slow first call
    assert all(28 not in r for r in box.runs[1:]) and all(24 not in r for r in box.runs[1:])


# a chain program's ladder timings: a 6 ms fixed cost per call, then linear; two sizes above noise
LINEAR_RUNGS = [(6, 0.006), (10, 0.006), (14, 0.006), (100, 0.0062), (1000, 0.008), (10_000, 0.026), (100_000, 0.206)]


def linear_seconds(n):
    return 0.006 + 2e-6 * n


def test_the_judge_times_sizes_within_the_ladder_first_and_beyond_only_if_the_fit_needs_them():
    assert not fit_growth(LINEAR_RUNGS).usable
    sizes = suggest_sizes(LINEAR_RUNGS, lattice=False)
    assert any(n > 100_000 for n in sizes) and any(n < 100_000 for n in sizes)
    box = BatchSandbox(linear_seconds)
    timings, _, note = _time_more_sizes("code", "log_Z", get_task("P01"), box, 0, JudgeBudget(), LINEAR_RUNGS, sizes)
    assert note.startswith(f"{len(box.runs)} run(s)")                 # the profile note counts the runs made
    assert fit_growth(timings).usable
    assert all(n < 100_000 for r in box.runs for n in r)       # the doublings (0.4-0.8 s a call) never ran
    assert [n for n, _ in timings[len(LINEAR_RUNGS):]] == [n for n in sizes if n < 100_000]

    # a cost that the sizes within the ladder cannot resolve (flat there): the sizes beyond are timed as before
    flat = BatchSandbox(lambda n: 0.006 if n <= 100_000 else 1e-6 * n)
    rungs = [(n, 0.006) for n, _ in LINEAR_RUNGS]
    timings, _, _ = _time_more_sizes("code", "log_Z", get_task("P01"), flat, 0, JudgeBudget(), rungs,
                                     suggest_sizes(rungs, lattice=False))
    assert any(n > 100_000 for r in flat.runs for n in r)
    assert any(n > 100_000 for n, _ in timings)


SPIN_AT_2 = """
def Z_efficient(params, n):
    if n == 2:
        while True:
            pass
    return 1.0
"""


def test_a_call_over_its_own_budget_ends_the_run_there(sandbox):
    started = time.monotonic()
    report = sandbox.run(SPIN_AT_2, [Call("Z_efficient", {}, n) for n in (1, 2, 3)],
                         Limits(timeout_s=60.0, cpu_s=65, call_timeout_s=1.0))
    assert time.monotonic() - started < 15.0                   # not the run's 60 s
    assert report.timed_out and [r.value for r in report.results] == [1.0]
    assert "call 2" in report.error


def test_a_remembered_static_check_still_reports_its_violations(sandbox):
    code = f"import os\n# {time.time_ns()}\ndef Z_efficient(params, n):\n    return 1.0\n"
    before = sandbox.stats.static_checks
    first = sandbox.run(code, [Call("Z_efficient", {}, 1)])
    second = sandbox.run(code, [Call("Z_efficient", {}, 1)])
    assert first.violations and second.violations == first.violations and not second.results
    assert sandbox.stats.static_checks == before + 1


def test_a_reference_wanted_twice_at_once_is_computed_once(tmp_path, monkeypatch):
    monkeypatch.setenv("STATMECH_CACHE", str(tmp_path))
    monkeypatch.setattr(oracle_cache, "_memory", {})
    computed = []

    def slow_compute(task, params, n, method):
        computed.append(n)
        time.sleep(0.5)
        return OracleResult(1.25, "test", 0.5)

    monkeypatch.setattr(oracle_cache, "_compute", slow_compute)
    task, sources = get_task("P01"), []

    def want():
        result, source = oracle_cache.lookup(task, {"beta": 0.5}, 10)
        sources.append((result.log_z, source))

    threads = [threading.Thread(target=want) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert computed == [10]
    assert sorted(sources) == [(1.25, "computed"), (1.25, "waited")]
    assert oracle_cache.lookup(task, {"beta": 0.5}, 10) == (OracleResult(1.25, "test", 0.5), "memory")


def test_a_reference_computed_inside_another_takes_no_second_lock(tmp_path, monkeypatch):
    monkeypatch.setenv("STATMECH_CACHE", str(tmp_path))
    monkeypatch.setattr(oracle_cache, "_memory", {})
    task = get_task("P01")

    def nested_compute(t, params, n, method):
        if n == 20:
            inner = oracle_cache.reference(t, params, 10).log_z
            return OracleResult(2 * inner, "nested", 0.0)
        return OracleResult(math.log(2.0), "leaf", 0.0)

    monkeypatch.setattr(oracle_cache, "_compute", nested_compute)
    locks, flock = [], oracle_cache.fcntl.flock
    monkeypatch.setattr(oracle_cache.fcntl, "flock", lambda fd, op: (locks.append(op), flock(fd, op)))
    done = []
    worker = threading.Thread(target=lambda: done.append(oracle_cache.reference(task, {"beta": 0.5}, 20)))
    worker.start()
    worker.join(20)
    assert done and done[0].log_z == pytest.approx(2 * math.log(2.0))
    assert len(locks) == 1      # the outer computation's lock only
