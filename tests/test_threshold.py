"""`evolve threshold`: the run directory (journal per batch of samples, summary, report), resuming
after kill -9, the statistics on curves whose crossing is known, a program as the decoder, the
refusals, Ray; the full default run on T21 is the slow benchmark at the end (-m slow)."""

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from evolve import cli
from evolve.store.journal import read_journal
from evolve.threshold import stats
from evolve.threshold.records import BatchKey, BatchResult, Settings
from evolve.threshold.run import P_C_REFERENCE

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "candidates" / "t21_pair_transfer.py"
SMALL = ["--task", "T21", "--sizes", "3,4,5", "--p", "0.05,0.1,0.2", "--samples", "60", "--batch", "20", "--no-ray",
         "--quiet"]


def evolve(argv, capsys):
    status = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def run_json(argv, capsys) -> dict:
    status, out, err = evolve([*argv, "--json"], capsys)
    assert status == 0, err
    assert out.count("\n") == 1
    return json.loads(out)


def test_a_small_run_writes_journal_summary_and_report(tmp_path, capsys):
    out = tmp_path / "run"
    s = run_json(["threshold", *SMALL, "--out", out], capsys)
    for key in ("p_c", "p_c_err", "sizes", "samples", "wall_s"):
        assert key in s
    assert s["sizes"] == [3, 4, 5] and s["samples"] == 60 and s["samples_total"] == 9 * 60
    assert s["estimator"] == "nishimori" and s["batches_run"] == 27 and s["batches_resumed"] == 0
    assert len(s["points"]) == 9 and len(s["crossings"]) == 2
    journal = read_journal(out / "journal.msgpack")
    kinds = [r["kind"] for r in journal.records]
    assert kinds.count("batch") == 27 and kinds[-1] == "session"
    assert journal.header["settings"]["sizes"] == [3, 4, 5]
    assert json.loads((out / "summary.json").read_text())["samples_total"] == 540
    html = (out / "report.html").read_text()
    assert "crossing-plot" in html and "error_y" in html and "Nishimori estimator" in html
    assert "<script src" not in html and "<link" not in html        # self-contained: nothing fetched


def test_resuming_after_kill_9_gives_the_uninterrupted_result(tmp_path, capsys):
    # 900 batches: long enough that the kill lands mid-run on an idle machine (180 finished before it once)
    argv = ["threshold", "--task", "T21", "--sizes", "4,6,8", "--p", "0.05,0.1,0.2", "--samples", "2000", "--batch", "20",
            "--no-ray", "--quiet"]
    total = 3 * 3 * 2000 // 20
    whole = run_json([*argv, "--out", tmp_path / "whole"], capsys)
    killed = tmp_path / "killed"
    env = {**os.environ, "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", str(ROOT / ".venv" / "numba-cache"))}
    proc = subprocess.Popen([sys.executable, "-m", "evolve.cli", *argv, "--out", str(killed)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    journal = killed / "journal.msgpack"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists() and journal.stat().st_size > 40_000:       # a few batches in, most still to do
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    had = sum(r["kind"] == "batch" for r in read_journal(journal).records)
    assert 0 < had < total
    with open(journal, "ab") as f:                    # and a torn frame at the end, as a kill mid-write leaves
        f.write(b"\x00\x00\x01\x00partial")
    resumed = run_json([*argv, "--out", killed], capsys)
    assert resumed["batches_resumed"] == had and resumed["batches_run"] == total - had
    assert resumed["points"] == whole["points"]                     # the same samples, decoded the same
    assert resumed["p_c"] == whole["p_c"]


def test_a_directory_of_other_settings_is_refused_in_one_line(tmp_path, capsys):
    out = tmp_path / "run"
    run_json(["threshold", *SMALL, "--out", out], capsys)
    status, _, err = evolve(["threshold", *SMALL, "--out", out, "--seed", "7"], capsys)
    assert status == 2 and err.count("\n") == 1 and "other settings" in err and "seed" in err
    grown = run_json(["threshold", *SMALL[:7], "120", *SMALL[8:], "--out", out], capsys)   # more samples: a run grows
    assert grown["samples_total"] == 9 * 120 and grown["batches_resumed"] == 27


@pytest.mark.parametrize("task,words", [("T18", "toric"), ("T19", "not a decoding task"), ("P04", "not a Tier 2")])
def test_other_tasks_are_refused_in_one_line(task, words, tmp_path, capsys):
    status, out, err = evolve(["threshold", "--task", task, "--out", tmp_path / "x"], capsys)
    assert status == 2 and out == "" and err.count("\n") == 1 and words in err
    assert not (tmp_path / "x").exists()


def test_a_program_decodes_as_the_exact_decoder(tmp_path, capsys, sandbox):
    argv = ["threshold", "--task", "T21", "--sizes", "3,5", "--p", "0.05,0.1,0.2", "--samples", "20", "--batch", "20",
            "--no-ray", "--quiet"]
    exact = run_json([*argv, "--out", tmp_path / "exact"], capsys)
    program = run_json([*argv, "--out", tmp_path / "program", "--program", FIXTURE], capsys)
    assert program["decoder"].startswith("program:")
    for a, b in zip(exact["points"], program["points"]):
        assert abs(a["nishimori"] - b["nishimori"]) < 1e-9 and a["indicator"] == b["indicator"]


def test_records_round_trip_and_settings_compare():
    r = BatchResult(BatchKey(5, 0.1, 3), np.array([0, 1, 1], dtype=np.int8), np.log([[0.2, 0.1], [0.3, 0.4], [0.1, 0.1]]),
                    0.01, 0.02)
    back = BatchResult.from_record(r.to_record())
    assert back.key == r.key and np.array_equal(back.true_class, r.true_class) and np.array_equal(back.log_p, r.log_p)
    s = Settings("T21", (4, 8), (0.1, 0.2, 0.3), 100, 10, 0)
    assert Settings.from_dict(s.to_dict()) == s
    assert s.differences(s) == [] and Settings("T21", (4, 8), (0.1, 0.2, 0.3), 200, 10, 0).differences(s) == []
    assert any("seed" in d for d in Settings("T21", (4, 8), (0.1, 0.2, 0.3), 100, 10, 1).differences(s))
    assert any("shrink" in d for d in Settings("T21", (4, 8), (0.1, 0.2, 0.3), 50, 10, 0).differences(s))


def _synthetic(p_c=0.11, nu=1.5, sizes=(8, 16, 32), se=0.002, seed=0):
    """Points on P = 0.8 - 3 x + 4 x^2, x = (p - p_c) L^(1/nu), each drawn within its standard error."""
    rng = np.random.default_rng(seed)
    out = []
    for L in sizes:
        for p in np.linspace(0.09, 0.13, 9):
            x = (p - p_c) * L ** (1 / nu)
            y = 0.8 - 3 * x + 4 * x * x + se * rng.standard_normal()
            out.append(stats.Point(L, float(p), 10_000, y, se, y, 2 * se))
    return out


def test_crossings_and_the_scaling_fit_find_a_known_threshold():
    pts = _synthetic()
    for c in stats.crossings(pts):
        assert abs(c.p - 0.11) < 4 * c.err and c.err < 0.003
    fixed = stats.fss_fit(pts, 1.5)
    assert abs(fixed.p_c - 0.11) < 4 * fixed.p_c_err and fixed.p_c_err < 0.001 and fixed.nu_err == 0.0
    free = stats.fss_fit(pts, None)
    assert abs(free.nu - 1.5) < 4 * free.nu_err and free.nu_err > 0
    far = stats.crossing(_synthetic(p_c=0.2), 8, 16)              # no crossing inside the sampled range
    assert math.isnan(far.p)


def test_batches_spread_over_ray_give_what_this_process_gives(ray_session, tmp_path, capsys):
    here = run_json(["threshold", *SMALL, "--out", tmp_path / "here"], capsys)
    on_ray = run_json(["threshold", *[a for a in SMALL if a != "--no-ray"], "--workers", "2", "--out",
                       tmp_path / "ray"], capsys)
    assert on_ray["points"] == here["points"]


@pytest.mark.slow
def test_the_default_run_finds_the_threshold(ray_session, tmp_path, capsys):
    """The benchmark of docs/threshold.md: the defaults, on this machine, within 0.002 of the
    reference and in under 30 minutes."""
    s = run_json(["threshold", "--task", "T21", "--out", tmp_path / "default"], capsys)
    assert abs(s["p_c"] - P_C_REFERENCE) < 0.002, s["p_c"]
    assert s["wall_s"] < 1800 and max(s["sizes"]) >= 32


DEPOL = ["--task", "T21", "--noise", "depolarizing", "--sizes", "3,4", "--p", "0.12,0.19,0.26", "--samples", "40",
         "--batch", "20", "--no-ray", "--quiet"]


def test_depolarizing_noise_with_the_boundary_mps(tmp_path, capsys):
    """--noise depolarizing: four classes, the boundary MPS at --chi, recorded in the journal and the
    summary; at chi = 2^(L-1) nothing is cut, so the samples' log probabilities are the exact ones."""
    from evaluators.decoding import depolarizing_planar as dp

    out = tmp_path / "dep"
    s = run_json(["threshold", *DEPOL, "--chi", "8", "--out", out], capsys)
    assert s["noise"] == "depolarizing" and s["chi"] == 8 and s["decoder"] == "mps:chi=8"
    assert s["reference_p_c"] == 0.189 and "Bombin" in s["reference_source"]
    assert s["samples_total"] == 6 * 40 and len(s["points"]) == 6
    assert any("approximate" in n for n in s["notes"])
    journal = read_journal(out / "journal.msgpack")
    assert journal.header["settings"]["noise"] == "depolarizing" and journal.header["settings"]["chi"] == 8
    batch = next(BatchResult.from_record(r) for r in journal.records if r["kind"] == "batch" and r["L"] == 3)
    assert batch.log_p.shape == (20, 4)
    # the batch's errors again, from its seed, and their exact class probabilities by coset enumeration
    rng = np.random.default_rng(batch.key.seed_words(0))
    x, z = dp.draw(rng, 3, batch.key.p, 20)
    assert np.array_equal(dp.classes(3, x, z), batch.true_class)
    syn = dp.syndromes(3, x, z)
    exact = np.array([[dp.exact_class_log_probability(3, batch.key.p, q, c) for c in range(4)] for q in syn[:5]])
    assert np.abs(batch.log_p[:5] - exact).max() < 1e-10
    assert "depolarizing rate" in (out / "report.html").read_text()
    # another chi is another run: refused in this directory
    status, _, err = evolve(["threshold", *DEPOL, "--chi", "4", "--out", out], capsys)
    assert status == 2 and "chi" in err and err.count("\n") == 1


@pytest.mark.parametrize("argv,words", [
    (["--task", "T21", "--chi", "8"], "--noise depolarizing"),
    (["--task", "T18", "--noise", "depolarizing"], "--task T21"),
    (["--task", "T21", "--noise", "depolarizing", "--chi", "0"], "--chi"),
    (["--task", "T21", "--noise", "depolarizing", "--program", FIXTURE], "boundary MPS")])
def test_depolarizing_usage_errors(argv, words, tmp_path, capsys):
    status, out, err = evolve(["threshold", *argv, "--out", tmp_path / "x"], capsys)
    assert status == 2 and out == "" and err.count("\n") == 1 and words in err, err
    assert not (tmp_path / "x").exists()


def test_settings_of_a_journal_from_before_the_noise_option_read_as_bit_flip():
    old = {"task": "T21", "sizes": [4, 8], "ps": [0.1, 0.2, 0.3], "samples": 100, "batch": 10, "seed": 0,
           "decoder": "exact"}
    s = Settings.from_dict(old)
    assert s.noise == "bitflip" and s.chi == 0 and s == Settings("T21", (4, 8), (0.1, 0.2, 0.3), 100, 10, 0)
