"""The smaller reliability cases of issue 32 (item 5, and `verify`'s progress of item 6), each as a
user meets it on the command line (``evolve.cli.main`` in this process, except where a terminal is
needed): a candidate that never returns, unusable Optuna storages, an unwritable ``replay --out``, a
journal damaged in the middle, a best program verified from its own file, a closed form's
complexity judged on the whole ladder (item 7), ``--seed`` named as the
flag, the physics line, ``evolve runs`` for people and for live runs, the progress counter after a
resume, ``--version``. The Ray cases are in tests/test_launch_local.py, tests/test_run_faults.py and
tests/test_cluster.py."""

import contextlib
import io
import json
import os
import pty
import select
import shutil
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
import yaml

from evolve import cli
from evolve.store.journal import decode_frame, read_journal

ROOT = Path(__file__).parent.parent
LEGACY_RUN = ROOT / "tests" / "fixtures" / "legacy_runs" / "islands"
FIXTURES = ROOT / "tests" / "fixtures" / "candidates"


def call(argv):
    """(exit status, stdout, stderr) of ``evolve argv`` run here."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main([str(a) for a in argv])
        except SystemExit as exc:
            status = exc.code
    return status, out.getvalue(), err.getvalue()


def test_a_candidate_that_never_returns_fails_every_probe(tmp_path):
    loop = tmp_path / "loop.py"
    loop.write_text("def Z_efficient(params, n):\n    while True:\n        pass\n")
    status, out, _ = call(["verify", "--task", "P01", loop, "--timeout", "2", "--samples", "1", "--json"])
    numerical = json.loads(out)["numerical"]
    assert status == 1 and numerical["probes"] == 3 and numerical["failed"] == 3, numerical
    status, out, _ = call(["verify", "--task", "P01", loop, "--timeout", "2", "--samples", "1"])
    assert "(0/3 probes" in out


@pytest.mark.parametrize("storage", ["nonsense", "sqlite:////proc/x/t.db"])
def test_an_unusable_tune_storage_is_one_line_naming_it(tmp_path, storage):
    config = tmp_path / "tune.yaml"
    config.write_text(yaml.safe_dump({"task": "P01", "run": {"root": str(tmp_path / "runs")},
                                      "tune": {"params": {"ray.batch_size": {"choices": [1, 2]}}}}))
    with mock.patch("evolve.tuning.tune.start_ray", side_effect=AssertionError("Ray was started")):
        status, _, err = call(["tune", config, "--trials", "1", "--storage", storage])
    assert status == 2 and err.count("\n") == 1, err
    assert f"Optuna storage {storage!r} cannot be used" in err


def test_replay_refuses_an_unwritable_out_before_judging_anything(tmp_path):
    with mock.patch("evolve.analysis.rejudge.EvaluatorWorker", side_effect=AssertionError("re-judging began")):
        status, _, err = call(["replay", LEGACY_RUN, "--out", "/proc/x"])
    assert status == 2 and err.count("\n") == 1 and "--out '/proc/x' cannot be used" in err, err


def damaged_copy(tmp_path: Path, record: int = 6) -> Path:
    """The legacy islands run with one record in the middle of its journal overwritten."""
    run = tmp_path / "damaged"
    shutil.copytree(LEGACY_RUN, run)
    data = bytearray((run / "journal.msgpack").read_bytes())
    offsets, off = [], 0
    while off < len(data):
        offsets.append(off)
        off = decode_frame(bytes(data), off)[1]
    start, end = offsets[record], offsets[record + 1]
    data[start + 8:end - 8] = b"\xff" * (end - start - 16)
    (run / "journal.msgpack").write_bytes(bytes(data))
    return run


def test_a_journal_damaged_in_the_middle_is_read_for_what_is_intact(tmp_path):
    run = damaged_copy(tmp_path)
    whole = read_journal(LEGACY_RUN / "journal.msgpack").records
    status, out, err = call(["show", run])
    assert status == 0, err
    assert "JOURNAL DAMAGED" in out and "1 record(s) lost there" in out and "refuses the run" in out
    status, out, _ = call(["show", run, "--json"])
    shown = json.loads(out)
    assert status == 0 and "damaged in the middle" in shown["journal_damage"]
    assert shown["proposals"] + shown["evaluations"] >= sum(r["kind"] in ("proposal", "evaluation") for r in whole) - 1
    status, out, err = call(["lineage", run])
    assert status == 0 and "Ancestry of" in out and err.count("\n") == 1 and "damaged in the middle" in err
    status, out, err = call(["export", run])
    assert status == 0 and len(out.splitlines()) >= 7 and "damaged in the middle" in err
    status, out, err = call(["report", run, "--out", tmp_path / "r.html"])
    assert status == 0, err
    assert "journal damaged" in (tmp_path / "r.html").read_text()
    status, _, err = call(["resume", run])                   # a writer still refuses it
    assert status == 2 and "corrupt in the middle" in err


def test_a_runs_best_program_file_is_verified_with_its_own_claims(tmp_path):
    from evaluators.verdict import Verdict
    from evolve.store.run_store import RunStore
    from search.candidate import Candidate

    code = (FIXTURES / "p01_correct.py").read_text()
    with RunStore.create(tmp_path, {"task": "P01"}, "P01", run_id="r") as store:
        store.write_best(Candidate("g0000s00", "P01", code=code, tractable_class="transfer_matrix",
                                   complexity_O="O(n)", proposer="structural"), Verdict(task="P01"))
    status, out, _ = call(["verify", "--task", "P01", tmp_path / "r" / "best" / "program.py", "--json"])
    verdict = json.loads(out)
    assert (verdict["complexity"]["claimed"], verdict["class"]["claimed"]) == ("O(n)", "transfer_matrix")
    assert status == 0 and verdict["verdict"] == "accept", verdict["feedback"]


def test_a_closed_form_claiming_o1_is_honest_on_the_evidence_of_the_whole_ladder(tmp_path):
    # item 7: every call of it is too fast for the timer; before, complexity.honest was null
    candidate = tmp_path / "p01_o1.json"
    candidate.write_text(json.dumps({"tractable_class": "transfer_matrix", "complexity_O": "O(1)", "confidence": 0.9,
                                     "justification": "closed form", "code": (FIXTURES / "p01_correct.py").read_text()}))
    status, out, _ = call(["verify", "--task", "P01", candidate, "--json"])
    complexity = json.loads(out)["complexity"]
    assert status == 0 and complexity["honest"] is True, complexity
    assert "its timings over the whole ladder" in complexity["evidence"], complexity


def test_a_bad_seed_flag_is_named_as_the_flag(tmp_path):
    status, _, err = call(["launch", ROOT / "configs" / "p01.yaml", "--seed", "-3", "--run-root", tmp_path / "runs"])
    assert status == 2 and "--seed must be in [0, 2**63), got -3" in err, err
    assert not (tmp_path / "runs").exists()


def test_the_physics_line_says_which_checks_failed():
    from evaluators.verdict import PhysicsCheck, Verdict
    from evolve.commands.verify import render

    v = Verdict(task="P01")
    v.physics.checks = [PhysicsCheck("beta_zero", True, ""), PhysicsCheck("convexity", False, "x"),
                        PhysicsCheck("symmetry", False, "y")]
    line = next(ln for ln in render(v).splitlines() if "physics" in ln)
    assert line.endswith("1/3 passed; failed: convexity, symmetry"), line


def test_evolve_runs_shows_counts_for_people():
    status, out, _ = call(["runs", "--root", LEGACY_RUN.parent])
    assert status == 0
    islands = next(ln for ln in out.splitlines() if ln.startswith("islands"))
    assert "12.19695394900009" not in islands and "usd 0.0" not in islands, islands
    assert "8 proposals, 3 evaluations, 3 accepted, 5 duplicates, 0m 12s; proposal budget reached (8)" in islands


P01_RUN = {"task": "P01", "seed": 2, "strategy": "islands",
           "budgets": {"proposals": 8, "evaluations": 8, "wall_time_s": 600},
           "evaluator": {"samples": 1, "ladder": False, "judge": False},
           "strategies": {"islands": {"islands": 2}}, "ray": {"batch_size": 4}}


def test_evolve_runs_shows_a_live_runs_counts(tmp_path, sandbox, monkeypatch):
    from doubles.local_run import local_run
    from evolve.engine import engine
    from evolve.engine.evaluator_worker import EvaluatorWorker
    from evolve.config import config_from_dict

    monkeypatch.setattr(engine, "STATUS_INTERVAL_S", 0.0, raising=False)   # every update, not every 5 s
    seen = []
    cfg = config_from_dict(P01_RUN)
    inner = EvaluatorWorker(cfg.task, cfg.evaluator.verify_options(cfg.seed), sandbox=sandbox)

    class Watching:
        def evaluate(self, candidate):
            if len(seen) < 2:
                seen.append(call(["runs", "--root", tmp_path])[1])
            return inner.evaluate(candidate)

    local_run(P01_RUN, tmp_path, evaluator=Watching())
    line = next(ln for ln in seen[1].splitlines() if "p01" in ln)
    assert "running" in line and "4 proposals, 1 evaluations" in line, seen


def test_a_resumed_runs_progress_counts_the_proposals_taken_from_the_journal(tmp_path, sandbox):
    from doubles.local_run import local_run

    first = local_run(P01_RUN, tmp_path, sandbox=sandbox).path
    for snap in (first / "snapshots").glob("snap-*.msgpack"):
        snap.unlink()           # as if killed before its first snapshot: everything is replayed from the journal
    shown = io.StringIO()
    local_run(P01_RUN, tmp_path, sandbox=sandbox, resume=first, progress_stream=shown)
    first_line = shown.getvalue().splitlines()[0]
    assert first_line.startswith("gen 0  proposals 4/8"), shown.getvalue()


def test_evolve_version():
    status, out, _ = call(["--version"])
    assert status == 0 and out.strip().startswith("evolve ") and out.strip() != "evolve unknown (not installed)"


def test_verify_shows_its_progress_on_a_terminal(tmp_path):
    claims = dict(json.loads((FIXTURES / "claims.json").read_text())["p01_correct.py"])
    claims.pop("task")
    candidate = tmp_path / "p01.json"
    candidate.write_text(json.dumps({**claims, "code": (FIXTURES / "p01_correct.py").read_text()}))
    leader, follower = pty.openpty()
    proc = subprocess.Popen([str(Path(sys.executable).with_name("evolve")), "verify", "--task", "P01", str(candidate)],
                            stdout=subprocess.PIPE, stderr=follower, text=True)
    os.close(follower)
    said = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(leader, 4096)
            except OSError:          # the terminal closed: the process ended
                break
            if not chunk:
                break
            said += chunk
        elif proc.poll() is not None:
            break
    out = proc.communicate(timeout=300)[0]
    os.close(leader)
    text = said.decode(errors="replace")
    assert proc.returncode == 0 and out.startswith("P01: ACCEPT"), out
    for stage in ("verifying: running the probes", "verifying: ladder: the candidate at n=100000",
                  "verifying: physical assertions"):
        assert stage in text, text[-2000:]
    assert text.endswith("\r\x1b[2K"), "the progress line is wiped before the Verdict"
