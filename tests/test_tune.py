"""`evolve tune`: the search-space parser, the objectives computed from a journal, the evaluator
reservation that lets trials share the cluster, a real study on P01 whose two trials run at the
same time as Ray tasks and write a loadable best config, and a rerun after a killed tuner."""

import os
from pathlib import Path

import pytest
import yaml

from evolve.config import Config, ConfigError, config_from_dict, load_config
from evolve.tuning.objective import objective_value
from evolve.tuning.space import apply, parse_space
from evolve.tuning.tune import tuning_dir
from evolve.tuning.trial import evaluator_share

ray = pytest.importorskip("ray")
optuna = pytest.importorskip("optuna")

SPACE = {"strategies.islands.temperature": {"low": 0.01, "high": 1.0, "log": True},
         "ray.batch_size": {"choices": [1, 2]},
         "strategies.tree.exploration_c": {"low": 0.5, "high": 2.0}}


@pytest.fixture(scope="module")
def ray_cluster(ray_session):
    """The session's Ray (tests/conftest.py: one ray.init per worker, not one per file); its address."""
    return ray.get_runtime_context().gcs_address


def test_parse_space_accepts_ranges_and_choices_and_names_bad_keys():
    base = Config().to_dict()
    space = parse_space({**SPACE, "budgets.evaluations": {"low": 2, "high": 8}}, base)
    assert space["strategies.islands.temperature"] == {"low": 0.01, "high": 1.0, "log": True, "int": False}
    assert space["ray.batch_size"] == {"choices": [1, 2]}
    assert space["budgets.evaluations"]["int"] is True
    bad = [({"strategies.islands.colour": {"choices": [1]}}, "not a config key"),
           ({"strategies.islands": {"choices": [1]}}, "section"),
           ({"seed": {"choices": [1, 2]}}, "cannot be tuned"),
           ({"run.root": {"choices": ["a"]}}, "cannot be tuned"),
           ({"strategies.islands.temperature": {"low": 1.0, "high": 0.5}}, "low < high"),
           ({"strategies.islands.temperature": {"low": 0.0, "high": 1.0, "log": True}}, "low > 0"),
           ({"strategies.islands.temperature": {"low": 0.1, "high": 1.0, "step": 2}}, "unknown keys"),
           ({"ray.batch_size": {"low": 1.5, "high": 4}}, "integer"),
           ({"ray.batch_size": {"choices": []}}, "non-empty")]
    for params, words in bad:
        with pytest.raises(ValueError, match=words):
            parse_space(params, base)
    with pytest.raises(ConfigError, match="tune.params"):
        config_from_dict({"task": "P01", "tune": {"params": {"strategies.islands.nope": {"choices": [1]}}}})
    with pytest.raises(ConfigError, match="tune.objective"):
        config_from_dict({"task": "P01", "tune": {"objective": "fastest"}})


def test_apply_sets_dotted_keys_on_a_copy():
    base = Config().to_dict()
    out = apply(base, {"strategies.islands.temperature": 0.5, "ray.batch_size": 2})
    assert out["strategies"]["islands"]["temperature"] == 0.5 and out["ray"]["batch_size"] == 2
    assert base["strategies"]["islands"]["temperature"] == 0.1 and base["ray"]["batch_size"] == 4


def test_objectives_from_journal_records():
    from evaluators.verdict import Verdict
    from evolve.store.events import EvaluationEvent, ProposalEvent, encode
    from search.candidate import Candidate
    from search.records import Evaluation

    def ev(pid, verdict, score):
        return encode(EvaluationEvent(Evaluation(pid, Verdict(task="P01", verdict=verdict), tuple(score))))

    def objective_value(records, objective, budget):       # the evaluations as a run's read model lists them
        from evolve.store.events import decode
        from evolve.tuning.objective import objective_value as value

        return value([e.evaluation for e in map(decode, records) if isinstance(e, EvaluationEvent)], objective, budget)

    low = [1.0, 0.0, 1.0, -3.0, -99.0, 0.5, 0.5, 0.5, -300.0]
    high = [2.0, 1.0, 4.0, 0.0, -1.0, 1.0, 1.0, 1.0, -200.0]
    # journal order is arrival order; the objective orders by program id
    recs = [encode(ProposalEvent(Candidate("g0000s00", "P01", code="x = 1"), 0, 0)), ev("g0001s00", "accept", high), ev("g0000s01", "reject", low),
            ev("g0000s00", "reject", low), ev("g0001s01", "accept", high)]
    assert objective_value(recs, "evaluations_to_first_accept", 10) == 3.0
    assert objective_value(recs[:4], "evaluations_to_first_accept", 10) == 3.0
    assert objective_value(recs[2:4], "evaluations_to_first_accept", 10) == 11.0
    from search.database import fitness

    assert objective_value(recs, "best_score", 10) == fitness(high) > objective_value(recs[2:4], "best_score", 10)
    assert objective_value([], "best_score", 10) == 0.0
    assert tuning_dir("sqlite:///runs/x/tune.db", "runs") == Path("runs/x")


def study_config(tmp_path: Path, **tune) -> tuple[Path, str]:
    """A tiny tree search on P01 to tune, and a sqlite storage under tmp_path/tuning."""
    raw = {"task": "P01", "seed": 1, "strategy": "tree",
           "budgets": {"proposals": 2, "evaluations": 2, "wall_time_s": 300},
           "evaluator": {"samples": 1, "ladder": False, "judge": False},
           # 2 CPUs per evaluator: two concurrent trials only fit once the tuner scales that down
           "ray": {"num_evaluators": 1, "num_proposers": 1, "batch_size": 2, "evaluator_cpus": 2.0},
           "run": {"root": str(tmp_path / "runs")},
           "tune": {"params": SPACE, "objective": "evaluations_to_first_accept", **tune}}
    cfg_path = tmp_path / "p01-tune.yaml"
    cfg_path.write_text(yaml.safe_dump(raw))
    return cfg_path, f"sqlite:///{tmp_path / 'tuning' / 'tune.db'}"


def test_evaluator_share_fits_all_concurrent_trials_in_the_cluster():
    assert evaluator_share(2, 2, 2, 1.0) == 0.5           # 2 trials x 2 evaluators on 2 CPUs
    assert evaluator_share(2, 2, 1, 2.0) == 1.0
    assert evaluator_share(16, 2, 2, 1.0) == 1.0          # room enough: the configured value
    assert evaluator_share(2, 3, 1, 1.0) == pytest.approx(0.6666, abs=1e-9)  # Ray's 1e-4 grain, rounded down
    assert 3 * 1 * evaluator_share(2, 3, 1, 1.0) <= 2
    with pytest.raises(ValueError):
        evaluator_share(2, 0, 1, 1.0)


def orphan_trials(storage: str, space: dict) -> None:
    """What `kill -9` of a tuner leaves in the storage: trial 0 RUNNING, its tuner gone; and
    trial 1 RUNNING under a tuner that is still alive (another tuner sharing the study)."""
    import socket
    import subprocess
    import sys

    from evolve.tuning.space import suggest

    study = optuna.create_study(storage=storage, study_name="p01", direction="minimize")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for pid in (dead.pid, os.getppid()):
        trial = study.ask()
        suggest(trial, space)
        trial.set_user_attr("tuner", {"host": socket.gethostname(), "pid": pid})


def test_a_resumed_study_reruns_the_orphaned_trial_in_parallel_and_writes_the_best_config(ray_cluster, tmp_path,
                                                                                         monkeypatch):
    from optuna.trial import TrialState

    from evolve.tuning import tune as tuning
    from evolve.tuning.tune import TrialLog, tune

    monkeypatch.setattr(tuning, "HEARTBEAT_S", 1.0)     # the running trials' progress every second, not every 20
    cfg_path, storage = study_config(tmp_path, parallel_trials=2)
    (tmp_path / "tuning").mkdir()
    orphan_trials(storage, parse_space(SPACE, load_config(cfg_path).to_dict()))
    lines = []
    result = tune(cfg_path, 2, storage=storage, study_name="p01", log=lines.append)

    # the interrupted trial is failed and re-run with its parameters; the live tuner's is left alone
    trials = optuna.load_study(study_name="p01", storage=storage).trials
    assert [t.state for t in trials] == [TrialState.FAIL, TrialState.RUNNING, TrialState.COMPLETE, TrialState.COMPLETE]
    rerun = next(t for t in trials[2:] if t.user_attrs.get("retry_of") == 0)
    assert rerun.params == trials[0].params
    assert any("trial 0 was interrupted" in line for line in lines)
    assert any("trial 1 is running under the live tuner" in line for line in lines)
    assert (result.trials, result.completed) == (4, 2)

    # the two trials ran at the same time, as Ray tasks launched together
    study_dir = tmp_path / "tuning" / "p01"
    events = TrialLog(study_dir / "trials.jsonl").read()
    assert [(e["event"], e["trial"]) for e in events[:3]] == [("interrupted", 0), ("launched", 2), ("launched", 3)]
    a, b = [e for e in events if e["event"] == "finished"]
    assert a["started"] < b["ended"] and b["started"] < a["ended"], "the two trials overlapped in time"
    assert a["evaluator_cpus"] == b["evaluator_cpus"] == 1.0, "2 CPUs per evaluator were scaled to fit 2 trials"
    assert sum("best so far" in line for line in lines) == 2
    # the tuner is not silent until its first trial ends: it says what it starts, then how the trials are doing
    first_end = next(k for k, line in enumerate(lines) if "best so far" in line)
    assert lines[2].startswith("study p01 in sqlite:///") and "2 trial(s) to run, 2 at a time" in lines[2], lines
    assert {"trial 2 launched", "trial 3 launched"} <= {line.split(":")[0] for line in lines[:first_end]}
    assert any(line.startswith("running: trial 2 ") and "proposal(s)" in line for line in lines[:first_end]), lines
    for t in trials[2:]:
        rec = a if a["trial"] == t.number else b
        assert (t.user_attrs["started"], t.user_attrs["ended"], t.value) == (rec["started"], rec["ended"], rec["value"])
        assert Path(t.user_attrs["run_dir"]) == study_dir / f"trial-{t.number:04d}"
        assert (study_dir / f"trial-{t.number:04d}" / "journal.msgpack").is_file()
        assert 1 <= t.value <= 3

    assert result.study_dir == study_dir and result.best_config == study_dir / "best.yaml"
    assert result.best_value == min(t.value for t in trials[2:])
    best = load_config(result.best_config)
    assert best.task == "P01" and best.strategy == "tree"
    assert best.strategies['islands'].temperature == pytest.approx(result.best_params["strategies.islands.temperature"])
    assert best.ray.batch_size == result.best_params["ray.batch_size"]
    assert best.ray.evaluator_cpus == 2.0, "the written config keeps the configured reservation"
    assert 0.5 <= best.strategies['tree'].exploration_c <= 2.0


@pytest.mark.slow
def test_sigkill_of_the_tuner_then_a_rerun_reruns_its_trials(ray_cluster, tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from optuna.trial import TrialState

    from evolve.tuning.tune import TrialLog, tune

    cfg_path, storage = study_config(tmp_path, parallel_trials=2)
    log = TrialLog(tmp_path / "tuning" / "p01" / "trials.jsonl")
    proc = subprocess.Popen([sys.executable, "-m", "evolve.cli", "tune", str(cfg_path), "--trials", "2", "--storage",
                             storage, "--study", "p01", "--address", ray_cluster],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and sum(e["event"] == "launched" for e in log.read()) < 2:
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert [e["event"] for e in log.read()] == ["launched", "launched"], "killed while both trials ran"
    result = tune(cfg_path, 2, storage=storage, study_name="p01")
    trials = optuna.load_study(study_name="p01", storage=storage).trials
    assert [t.state for t in trials] == [TrialState.FAIL] * 2 + [TrialState.COMPLETE] * 2
    assert sorted(t.user_attrs["retry_of"] for t in trials[2:]) == [0, 1]
    assert {t.user_attrs["retry_of"]: t.params for t in trials[2:]} == {0: trials[0].params, 1: trials[1].params}
    assert result.completed == 2 and result.best_config.is_file()


def test_a_study_directory_of_a_lost_storage_is_refused(tmp_path):
    from evolve.tuning.tune import tune

    cfg_path, storage = study_config(tmp_path)
    (tmp_path / "tuning" / "p01" / "trial-0000").mkdir(parents=True)
    with pytest.raises(ConfigError, match="earlier study"):
        tune(cfg_path, 1, storage=storage, study_name="p01")


def test_cli_refuses_a_config_without_tune_params(tmp_path, capsys):
    from evolve.cli import main

    cfg = tmp_path / "plain.yaml"
    cfg.write_text("task: P01\n")
    assert main(["tune", str(cfg), "--trials", "1", "--storage", f"sqlite:///{tmp_path / 't.db'}"]) == 2
    assert "nothing to tune" in capsys.readouterr().err
    assert main(["tune", str(cfg), "--trials", "0"]) == 2


def test_a_trial_of_a_user_task_runs_from_the_shipped_text_alone(ray_cluster, tmp_path, monkeypatch):
    """A trial receives the user task as text: it runs where the file does not exist, and its run
    directory keeps the copy."""
    from pathlib import Path

    from evolve.config import load_config
    from evolve.tuning.trial import run_trial
    from tasks import registry

    example = Path(__file__).resolve().parents[1] / "examples" / "tasks" / "diamond_chain.yaml"
    monkeypatch.setattr(registry, "_user", {})            # the tuner's registry, dropped after the test
    cfg = load_config(example)
    payloads = [registry.user_task_file("DIAMOND").payload()]
    monkeypatch.setattr(registry, "_user", {})            # the worker's registry: empty, no file
    # one sample and the ladder's first rung (n = 301): the worker still judges the program it wrote for
    # the shipped task (probes, a rung, complexity, class, physics) without the example's whole climb
    raw = {**cfg.to_dict(), "task_files": [],
           "budgets": {**cfg.to_dict()["budgets"], "proposals": 1, "evaluations": 1},
           "evaluator": {**cfg.to_dict()["evaluator"], "samples": 1, "ladder_max_n": 301},
           "ray": {**cfg.to_dict()["ray"], "num_evaluators": 1, "num_proposers": 1, "batch_size": 1, "evaluator_cpus": 0.5}}
    out = run_trial(7, raw, "evaluations_to_first_accept", str(tmp_path), payloads)
    assert out["value"] == 1.0                              # the structural proposer's first program is accepted
    run = Path(out["run_dir"])
    assert (run / "task_files" / "diamond_chain.py").read_text() == payloads[0]["source"]
