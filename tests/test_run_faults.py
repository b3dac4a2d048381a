"""Faults during a run.

- Actors die mid-run (``ray.kill``; the OOM killer or a lost node look the same to the driver): the
  pool replaces an evaluator killed while it judges and a proposer killed between generations,
  sends their requests again, and the run ends with the same journal an undisturbed run writes -
  nothing lost, nothing proposed or judged twice.
- The driver raises: status.json says failed, with the exception.
- The driver alone is SIGKILLed (not its process group): its local Ray cluster - GCS, raylet,
  dashboard and runtime agents, workers - ends with it, and status.json says failed.
- SIGTERM reaches the driver: the run is interrupted (exit 143), as the README says, not failed with
  a SystemError out of Ray's ``wait``; it resumes to the end of its budget.
- The strategy's database actor is killed: the run fails, and says why where a user looks (status,
  ``evolve show``, ``show --json``, the report), in whole words, naming ``evolve resume``, which
  then finishes it.
- No evaluator can ever be placed (it reserves more CPUs than any node has): the wall-time budget
  still ends the run.
"""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from evolve.config import config_from_dict
from evolve.engine.engine import Engine
from evolve.engine.progress import Progress
from evolve.engine.runtime import drive
from evolve.engine.sentinel import descendants
from evolve.store.journal import read_journal
from evolve.store.run_store import RunStore
from run_population import population

ray = pytest.importorskip("ray")

CONFIG = {
    "task": "P01", "seed": 3,
    "budgets": {"proposals": 8, "evaluations": 8, "wall_time_s": 600},
    # the ladder stops at its first rung (n = 100), whose calls take milliseconds: budgets far above
    # them, so the ladder's reach does not depend on the load (see ``population``). These tests are
    # about faults, not the climb (test_runtime's runs climb to n = 1000): a rung of four sandbox
    # calls per evaluation, not eight, over the eight runs here
    "evaluator": {"samples": 1, "ladder_total_s": 40, "rung_timeout_s": 15, "ladder_max_n": 100, "judge": False},
    "strategies": {"islands": {"islands": 2, "migration_interval": 4}},
    "ray": {"num_evaluators": 2, "num_proposers": 1, "batch_size": 4, "evaluator_cpus": 0.5},
}


def records(path, kind):
    return [r for r in read_journal(path / "journal.msgpack").records if r["kind"] == kind]


def run(root, during=None) -> RunStore:
    cfg = config_from_dict(CONFIG)
    store = RunStore.create(root, cfg.to_dict(), cfg.task)
    helper = threading.Thread(target=during, args=(store,), daemon=True) if during else None
    if helper:
        helper.start()
    drive(cfg, store, progress=Progress(cfg.budgets, stream=open(os.devnull, "w")))
    if helper:
        helper.join(timeout=60)
    store.close()
    return store


def kill_when(store, name: str, ready, killed: list, timeout_s: float = 240) -> None:
    """Kill the actor named ``name`` of this run as soon as ``ready(journal records)`` holds."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ready(read_journal(store.path / "journal.msgpack").records):
            (full,) = [a for a in ray.util.list_named_actors()
                       if a.startswith(f"evolve:{store.run_id}:") and a.endswith(f":{name}")]
            actor = ray.get_actor(full)
            ray.kill(actor)
            killed.append((name, time.monotonic()))
            return
        time.sleep(0.02)


def test_killed_actors_are_replaced_and_the_journal_is_the_undisturbed_one(ray_session, sandbox, tmp_path):
    from doubles.local_run import local_run

    killed = []

    def saboteur(store):
        # the evaluator while generation 0 is being judged (its proposals are in, no verdict yet)...
        kill_when(store, "evaluator:0.0", lambda recs: any(r["kind"] == "proposal" for r in recs)
                  and not any(r["kind"] == "evaluation" for r in recs), killed)
        # ...and the only proposer once a verdict is in: generation 1 asks a dead actor
        kill_when(store, "proposer:0.0", lambda recs: any(r["kind"] == "evaluation" for r in recs), killed)

    hit = run(tmp_path / "hit", saboteur)
    assert [k for k, _ in killed] == ["evaluator:0.0", "proposer:0.0"]
    log = (hit.path / "run.log").read_text()
    assert "evaluator actor 0 died" in log and "proposer actor 0 died" in log
    assert "finished: proposal budget reached (8)" in log

    proposals, evaluations = records(hit.path, "proposal"), records(hit.path, "evaluation")
    ids = [p["candidate"]["id"] for p in proposals]
    assert len(ids) == 8 == len(set(ids)), "every slot proposed once"
    judged = [e["id"] for e in evaluations]
    assert len(judged) == len(set(judged)), "nothing judged twice"
    duplicates = {r["id"] for r in records(hit.path, "duplicate")}
    assert set(judged) | duplicates == set(ids), "every proposal judged or recognised as a duplicate"

    # the undisturbed run: the same engine, config and seed with in-process workers (the pool does not
    # choose what is proposed or judged), without a second start of three actors and their imports
    calm = local_run(CONFIG, tmp_path / "calm", sandbox=sandbox)
    assert population(hit.path, calm.path) == population(calm.path, hit.path), "the same programs judged the same way"
    assert sorted(ids) == sorted(p["candidate"]["id"] for p in records(calm.path, "proposal"))
    assert "evaluation of g0000s00 sent again" in log, "the verdict the killed evaluator owed came from its replacement"


def test_a_driver_that_raises_marks_its_run_failed_with_the_reason(ray_session, tmp_path, monkeypatch):
    def boom(self):
        raise RuntimeError("the engine broke")

    monkeypatch.setattr(Engine, "run", boom)
    cfg = config_from_dict(CONFIG)
    store = RunStore.create(tmp_path, cfg.to_dict(), cfg.task)
    with pytest.raises(RuntimeError, match="the engine broke"):
        drive(cfg, store, progress=Progress(cfg.budgets, stream=open(os.devnull, "w")))
    status = json.loads((store.path / "status.json").read_text())
    assert status["state"] == "failed" and status["counts"]["reason"] == "RuntimeError: the engine broke"
    assert "failed: RuntimeError: the engine broke" in (store.path / "run.log").read_text()
    assert not [a for a in ray.util.list_named_actors() if store.run_id in a], "its actors are gone"


def _alive(pids) -> list[int]:
    out = []
    for pid in pids:
        try:
            state = open(f"/proc/{pid}/stat", "rb").read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state != b"Z":
            out.append(pid)
    return out


def _cmdline(pid: int) -> str:
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigkill_of_the_driver_alone_ends_its_ray_and_marks_the_run_failed(tmp_path):
    cfg_path = tmp_path / "cfg.yaml"
    cfg_path.write_text(yaml.safe_dump(CONFIG))
    evolve = str(Path(sys.executable).with_name("evolve"))
    driver = subprocess.Popen([evolve, "launch", str(cfg_path), "--run-root", str(tmp_path / "runs")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    family = []
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and driver.poll() is None:
            journals = list((tmp_path / "runs").glob("*/journal.msgpack"))
            if journals and any(r["kind"] == "proposal" for r in read_journal(journals[0]).records):
                break
            time.sleep(0.2)
        assert driver.poll() is None, "the run ended before it could be killed"
        parts = ("evolve.engine.sentinel", "gcs_server", "raylet", "ray::DashboardAgent", "ray::RuntimeEnvAgent",
                 "ray::EvaluatorWorker")
        deadline = time.monotonic() + 60     # on a loaded machine an actor's process takes its name late
        while True:
            family = descendants(driver.pid)
            names = " ".join(_cmdline(p) for p in family)
            if all(part in names for part in parts) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        for part in parts:
            assert part in names, f"{part} was not running under the driver"
        driver.send_signal(signal.SIGKILL)     # the driver alone, not its group
        driver.wait()
        deadline = time.monotonic() + 60
        while _alive(family) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = _alive(family)
        assert not left, f"left running: {[_cmdline(p)[:80] for p in left]}"
    finally:
        if driver.poll() is None:
            driver.kill()
        for pid in _alive(family):
            os.kill(pid, signal.SIGKILL)
    (run,) = (tmp_path / "runs").iterdir()
    status = json.loads((run / "status.json").read_text())
    assert status["state"] == "failed" and f"driver (pid {driver.pid}) died" in status["counts"]["reason"]
    assert "failed: the driver" in (run / "run.log").read_text()


def test_a_run_directory_that_refuses_writes_mid_run_is_one_line_and_the_run_failed(ray_session, tmp_path,
                                                                                    monkeypatch, capsys):
    from evolve import cli

    def refuse(self, candidate, verdict):
        raise PermissionError(13, "Permission denied", str(self.path / "best" / "program.py"))

    monkeypatch.setattr(RunStore, "write_best", refuse)
    cfg_path = tmp_path / "cfg.yaml"
    cfg_path.write_text(yaml.safe_dump(CONFIG))
    assert cli.main(["launch", str(cfg_path), "--run-root", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Permission denied" in err and "best/program.py" in err
    (run,) = (tmp_path / "runs").iterdir()
    status = json.loads((run / "status.json").read_text())
    assert status["state"] == "failed" and status["counts"]["reason"].startswith("PermissionError")


def _launch_process(tmp_path, config=CONFIG) -> subprocess.Popen:
    cfg_path = tmp_path / "cfg.yaml"
    cfg_path.write_text(yaml.safe_dump(config))
    evolve = str(Path(sys.executable).with_name("evolve"))
    return subprocess.Popen([evolve, "launch", str(cfg_path), "--run-root", str(tmp_path / "runs")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(tmp_path, driver, kind: str, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and driver.poll() is None:
        journals = list((tmp_path / "runs").glob("*/journal.msgpack"))
        if journals and any(r["kind"] == kind for r in read_journal(journals[0]).records):
            return
        time.sleep(0.2)
    pytest.fail(f"no {kind} record before the run ended or {timeout_s:.0f} s passed")


def test_sigterm_interrupts_the_run_and_it_resumes_to_the_end(ray_session, tmp_path, capsys):
    from evolve import cli

    driver = _launch_process(tmp_path)
    try:
        _wait_for(tmp_path, driver, "proposal")
        driver.send_signal(signal.SIGTERM)
        out, err = driver.communicate(timeout=120)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode in (130, 143), err[-2000:]
    assert err.strip().splitlines()[-1] == "terminated (SIGTERM)", err[-2000:]
    (run_dir,) = (tmp_path / "runs").iterdir()
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == "interrupted" and status["counts"]["reason"] == "SIGTERM", status
    assert f"SIGTERM; `evolve resume {run_dir}` continues" in (run_dir / "run.log").read_text()

    assert cli.main(["resume", str(run_dir)]) == 0, capsys.readouterr().err
    assert json.loads((run_dir / "status.json").read_text())["state"] == "finished"
    ids = [p["candidate"]["id"] for p in records(run_dir, "proposal")]
    assert len(ids) == len(set(ids)) == CONFIG["budgets"]["proposals"], "the budget completed, nothing twice"
    judged = [e["id"] for e in records(run_dir, "evaluation")]
    assert len(judged) == len(set(judged))


def test_a_killed_database_actor_fails_the_run_saying_why_and_resume_finishes_it(ray_session, tmp_path, capsys):
    from ray.exceptions import RayActorError

    from evolve import cli
    from evolve.report.run_report import write_run_report

    killed = []
    cfg = config_from_dict(CONFIG)
    store = RunStore.create(tmp_path, cfg.to_dict(), cfg.task)
    helper = threading.Thread(target=kill_when, daemon=True, args=(
        store, "database", lambda recs: any(r["kind"] == "evaluation" for r in recs), killed))
    helper.start()
    try:
        with pytest.raises(RayActorError):
            drive(cfg, store, progress=Progress(cfg.budgets, stream=open(os.devnull, "w")))
    finally:
        store.close()
        helper.join(timeout=60)
    assert [k for k, _ in killed] == ["database"]
    reason = json.loads((store.path / "status.json").read_text())["counts"]["reason"]
    assert reason.startswith("the IslandDatabase actor died (") and "killed by `ray.kill`" in reason, reason
    assert reason.endswith(f"`evolve resume {store.path}` continues the run from its last snapshot"), reason

    capsys.readouterr()
    assert cli.main(["show", str(store.path)]) == 0
    assert f"FAILED: {reason}" in capsys.readouterr().out
    assert cli.main(["show", str(store.path), "--json"]) == 0
    failure = json.loads(capsys.readouterr().out)["failure"]
    assert failure["kind"] == "error" and failure["reason"] == reason
    page = write_run_report(store.path).path.read_text()
    data = json.loads(re.search(r"id='report-data'>(.*?)</script>", page, re.S).group(1))
    assert data["failure"]["reason"] == reason and "why it failed" in page

    assert cli.main(["resume", str(store.path)]) == 0, capsys.readouterr().err
    assert json.loads((store.path / "status.json").read_text())["state"] == "finished"
    ids = [p["candidate"]["id"] for p in records(store.path, "proposal")]
    assert len(ids) == len(set(ids)) == CONFIG["budgets"]["proposals"]


def test_the_wall_budget_holds_when_no_evaluator_can_be_placed(ray_session, tmp_path):
    # 4 CPUs per evaluator on a 2-CPU cluster: Ray keeps the actors pending forever, and before the
    # wall clock was a deadline the run waited with them
    raw = {**CONFIG, "budgets": {**CONFIG["budgets"], "wall_time_s": 20},
           "ray": {**CONFIG["ray"], "evaluator_cpus": 4.0}}
    cfg = config_from_dict(raw)
    store = RunStore.create(tmp_path, cfg.to_dict(), cfg.task)
    outcome = {}

    def go():
        try:
            outcome["reason"] = drive(cfg, store, progress=Progress(cfg.budgets, stream=open(os.devnull, "w")))
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            outcome["error"] = exc

    started = time.monotonic()
    worker = threading.Thread(target=go, daemon=True)
    worker.start()
    worker.join(timeout=150)
    assert not worker.is_alive(), "the run went on past its wall budget (20 s) for more than two minutes"
    store.close()
    assert "error" not in outcome, outcome.get("error")
    assert outcome["reason"].startswith("wall-time budget reached (20 s) with"), outcome["reason"]
    assert time.monotonic() - started < 90
    status = json.loads((store.path / "status.json").read_text())
    assert status["state"] == "finished" and status["counts"]["reason"] == outcome["reason"]
    assert records(store.path, "finish")[-1]["reason"] == outcome["reason"]
    assert not [a for a in ray.util.list_named_actors() if store.run_id in a], "its actors are gone"
