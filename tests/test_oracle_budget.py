"""Every oracle call answers or refuses in one line within a stated budget (issue 36), an
impossible size is refused before anything is allocated and a long call shows progress (issue 32,
items 4 and 6).

- T12 n = 256 at beta J = 1000 ran over 900 s through the tensor network's log-domain route: the
  Mattis torus is now Kaufman's after a gauge (instant, checked against brute force and the
  tensor network), and a call whose only method is too slow refuses within its budget, naming it;
- a hopeless contraction path is refused without a search; the registry hands a model over when a
  method refuses on time; refusals are cached (structural ones on disk);
- `evolve oracle --task P04 --n 100000000` exhausted 24 GB: now one line, exit 2, in seconds, the
  process small; `--budget` validated; progress lines on stderr while a call runs.
"""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from evaluators import oracle_cache
from evaluators.oracles import budget
from evaluators.oracles.base import TooLarge
from evaluators.oracles.brute import brute_log_z
from evaluators.oracles.budget import OverBudget
from evaluators.oracles.registry import exact_log_z
from evaluators.oracles.tensor_network import tensor_network_log_z
from evolve.cli import main
from tasks.registry import get_task

EVOLVE = str(Path(sys.executable).with_name("evolve"))


def _t12(n: int, beta_j: float, seed: int = 0):
    task = get_task("T12")
    p = task.probe_params(n, seed, 0)
    return task.to_model(task.with_beta(p, beta_j / abs(p["J"])), n)


@pytest.mark.parametrize("beta_j", [0.3, 1.0, 20.0, 1000.0])
def test_the_mattis_torus_is_kaufman_after_a_gauge_at_every_beta(beta_j):
    small = _t12(16, beta_j)
    got = exact_log_z(small)
    assert got.method == "kaufman" and got.log_z == pytest.approx(brute_log_z(small), rel=1e-13)
    started = time.perf_counter()
    assert exact_log_z(_t12(256, beta_j)).method == "kaufman" and time.perf_counter() - started < 2.0
    if beta_j <= 1.0:                               # the tensor network is fast while warm
        mid = _t12(64, beta_j)
        assert exact_log_z(mid).log_z == pytest.approx(tensor_network_log_z(mid), rel=1e-12)


def test_a_frustrated_sign_pattern_is_not_taken_for_a_gauge():
    m = _t12(16, 1.0)
    w = m.weights.copy()
    w[0] = -w[0]                                    # one flipped bond: a cycle with an odd number of signs
    from evaluators.oracles.kaufman import kaufman_applies
    assert "no gauge makes equal" in kaufman_applies(m.with_weights(w))


def test_a_call_refuses_within_its_budget_in_one_line():
    """The tensor network is the only method for T12 under its own name: forced, with a 3 s budget,
    at a temperature where its float64 route underflows, it refuses in time, naming the budget."""
    m = _t12(256, 1000.0)       # 16 x 16: over 900 s before budgets existed
    started = time.perf_counter()
    with pytest.raises((OverBudget, TooLarge)) as info:      # out of time, or a path priced out within it
        exact_log_z(m, "tensor_network", budget_s=3.0)
    assert time.perf_counter() - started < 3.0 + 2.0
    text = str(info.value)
    assert "\n" not in text and "3 s budget" in text


def test_a_hopeless_contraction_is_refused_without_a_search():
    """The 32 x 32 triangular antiferromagnet: greedy costs ~1e22; it searched for 65 s before."""
    task = get_task("T14")
    m = task.to_model(task.probe_params(1024, 0, 0), 1024)
    started = time.perf_counter()
    with pytest.raises(TooLarge, match="no path search brings that within"):
        tensor_network_log_z(m)
    assert time.perf_counter() - started < 10.0


def test_the_registry_hands_over_when_a_method_is_too_slow(monkeypatch):
    """A method that refuses for time passes the model on: here brute force (n = 16) is priced out
    by a slow enumeration rate, and the next method answers."""
    from evaluators.oracles import brute

    task = get_task("P04")
    m = task.to_model(task.probe_params(16, 0, 0), 16)
    exact = brute_log_z(m)
    monkeypatch.setattr(brute, "STATES_PER_S", 1.0)
    got = exact_log_z(m, budget_s=30.0)
    assert got.method != "brute" and got.log_z == pytest.approx(exact, rel=1e-12)
    with pytest.raises(OverBudget, match=r"enumerating 2\^1[56] states would take about 9 h"):
        exact_log_z(m, "brute", budget_s=30.0)


def test_refusals_are_kept_and_a_larger_budget_tries_again(tmp_path, monkeypatch):
    monkeypatch.setenv("STATMECH_CACHE", str(tmp_path))
    monkeypatch.setattr(oracle_cache, "_memory", {})
    task = get_task("P04")
    params = {**task.probe_params(4096, 0, 0), "beta": 20.0}
    with pytest.raises(TooLarge, match="stops at 4096 couplings in cycles"):
        oracle_cache.reference(task, params, 4096)
    stored = list((tmp_path / "oracle").glob("*.json"))
    assert len(stored) == 1 and "refused" in json.loads(stored[0].read_text())
    monkeypatch.setattr(oracle_cache, "_memory", {})
    started = time.perf_counter()
    with pytest.raises(TooLarge, match="stops at 4096 couplings in cycles"):
        oracle_cache.reference(task, params, 4096)        # read from disk: no elimination
    assert time.perf_counter() - started < 1.0
    calls = []
    def too_slow(*args):
        calls.append(budget.total())
        raise OverBudget("too slow")

    monkeypatch.setattr(oracle_cache, "_compute", too_slow)
    other = {**params, "beta": 21.0}
    for budget_s in (5.0, 5.0, 2.0, 50.0):
        with pytest.raises(OverBudget):
            oracle_cache.reference(task, other, 4096, budget_s=budget_s)
    assert calls == [5.0, 50.0]                    # kept for budgets no larger; a larger one tries again


def test_cli_budget_is_validated_and_stated(tmp_path, capsys):
    for bad in ("0", "-3", "nan", "inf"):
        assert main(["oracle", "--task", "P04", "--n", "16", "--seed", "0", "--budget", bad]) == 2
        assert "--budget must be a positive number of seconds" in capsys.readouterr().err
    path = tmp_path / "t12.json"
    task = get_task("T12")
    path.write_text(json.dumps(task.with_beta(task.probe_params(256, 0, 0), 1000.0)))
    assert main(["oracle", "--task", "T12", "--n", "256", "--params", str(path), "--method", "tensor_network",
                 "--budget", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "3 s budget" in err


def test_cli_shows_progress_while_a_call_runs(capsys, monkeypatch):
    """The first P04 n = 4096 call spent 29 s compiling numba kernels without a word: now a line on
    stderr after PROGRESS_AFTER_S (a terminal, or STATMECH_PROGRESS=1), naming what runs."""
    from evolve.commands import oracle as command

    monkeypatch.setenv("STATMECH_PROGRESS", "1")
    monkeypatch.setattr(command, "PROGRESS_AFTER_S", 0.05)
    real = budget.stage

    def slow_stage(text):
        real(text)
        time.sleep(0.3)

    monkeypatch.setattr("evaluators.oracles.registry.stage", slow_stage)
    assert main(["oracle", "--task", "P04", "--n", "16", "--seed", "0"]) == 0
    captured = capsys.readouterr()
    assert "P04 n=16: log Z =" in captured.out
    line = captured.err.splitlines()[0]
    assert line.startswith("evolve oracle: P04 n=16: method ") and "of the 600 s budget" in line
    assert "numba" in line


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs a resource limit on a child process")
def test_an_impossible_size_is_refused_in_seconds_while_the_process_stays_small():
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    # RUSAGE_CHILDREN of this (xdist worker) process is the peak of every child it ever waited for: the
    # command runs under a fresh parent of its own, which reports the peak of that one child
    measure = ("import resource, subprocess, sys\n"
               "done = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=120)\n"
               "sys.stderr.write(done.stderr)\n"
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
               "sys.exit(done.returncode)\n")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", measure, EVOLVE, "oracle", "--task", "P04", "--n", str(10 ** 8),
                           "--seed", "0"], capture_output=True, text=True, preexec_fn=limit, timeout=150)
    elapsed = time.perf_counter() - started
    peak_kb = int(done.stdout.split()[-1])
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "needs about" in done.stderr and "memory" in done.stderr and "fit" in done.stderr
    assert elapsed < 60.0 and peak_kb < 1.5e6, (elapsed, peak_kb)


def test_the_memory_estimate_grows_with_n_and_fits_the_ladder():
    from tasks.memory import estimated_bytes, memory_refusal

    for task_id in ("P01", "P04", "T14", "T17", "T19"):
        task = get_task(task_id)
        assert memory_refusal(task, max(task.ladder_sizes)) is None, task_id
        small, big = estimated_bytes(task, 10 ** 4), estimated_bytes(task, 10 ** 8)
        assert big >= 1e4 * small * 0.99 and math.isfinite(big)
    assert memory_refusal(get_task("P04"), 10 ** 8) is not None
    assert np.isfinite(estimated_bytes(get_task("P04"), 64))
