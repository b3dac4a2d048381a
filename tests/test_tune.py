"""`evolve tune`: the search-space parser, the objectives computed from a journal, and a real
2-trial Optuna study on P01 that writes a loadable best config and resumes on a rerun."""

from pathlib import Path

import pytest
import yaml

from evolve.config import Config, ConfigError, config_from_dict, load_config
from evolve.tune import apply, objective_value, parse_space, tuning_dir

ray = pytest.importorskip("ray")
optuna = pytest.importorskip("optuna")

SPACE = {"database.temperature": {"low": 0.01, "high": 1.0, "log": True},
         "ray.batch_size": {"choices": [1, 2]},
         "tree.exploration_c": {"low": 0.5, "high": 2.0}}


@pytest.fixture(scope="module")
def ray_cluster():
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    yield
    ray.shutdown()


def test_parse_space_accepts_ranges_and_choices_and_names_bad_keys():
    base = Config().to_dict()
    space = parse_space({**SPACE, "budgets.evaluations": {"low": 2, "high": 8}}, base)
    assert space["database.temperature"] == {"low": 0.01, "high": 1.0, "log": True, "int": False}
    assert space["ray.batch_size"] == {"choices": [1, 2]}
    assert space["budgets.evaluations"]["int"] is True
    bad = [({"database.colour": {"choices": [1]}}, "not a config key"),
           ({"database": {"choices": [1]}}, "section"),
           ({"seed": {"choices": [1, 2]}}, "cannot be tuned"),
           ({"run.root": {"choices": ["a"]}}, "cannot be tuned"),
           ({"database.temperature": {"low": 1.0, "high": 0.5}}, "low < high"),
           ({"database.temperature": {"low": 0.0, "high": 1.0, "log": True}}, "low > 0"),
           ({"database.temperature": {"low": 0.1, "high": 1.0, "step": 2}}, "unknown keys"),
           ({"ray.batch_size": {"low": 1.5, "high": 4}}, "integer"),
           ({"ray.batch_size": {"choices": []}}, "non-empty")]
    for params, words in bad:
        with pytest.raises(ValueError, match=words):
            parse_space(params, base)
    with pytest.raises(ConfigError, match="tune.params"):
        config_from_dict({"task": "P01", "tune": {"params": {"database.nope": {"choices": [1]}}}})
    with pytest.raises(ConfigError, match="tune.objective"):
        config_from_dict({"task": "P01", "tune": {"objective": "fastest"}})


def test_apply_sets_dotted_keys_on_a_copy():
    base = Config().to_dict()
    out = apply(base, {"database.temperature": 0.5, "ray.batch_size": 2})
    assert out["database"]["temperature"] == 0.5 and out["ray"]["batch_size"] == 2
    assert base["database"]["temperature"] == 0.1 and base["ray"]["batch_size"] == 4


def test_objectives_from_journal_records():
    def ev(pid, verdict, score):
        return {"kind": "evaluation", "id": pid, "verdict": {"verdict": verdict}, "score": score}

    low = [1.0, 0.0, 1.0, -3.0, -99.0, 0.5, 0.5, 0.5, -300.0]
    high = [2.0, 1.0, 4.0, 0.0, -1.0, 1.0, 1.0, 1.0, -200.0]
    # journal order is arrival order; the objective orders by program id
    recs = [{"kind": "proposal"}, ev("g0001s00", "accept", high), ev("g0000s01", "reject", low),
            ev("g0000s00", "reject", low), ev("g0001s01", "accept", high)]
    assert objective_value(recs, "evaluations_to_first_accept", 10) == 3.0
    assert objective_value(recs[:4], "evaluations_to_first_accept", 10) == 3.0
    assert objective_value(recs[2:4], "evaluations_to_first_accept", 10) == 11.0
    from search.database import fitness

    assert objective_value(recs, "best_score", 10) == fitness(high) > objective_value(recs[2:4], "best_score", 10)
    assert objective_value([], "best_score", 10) == 0.0
    assert tuning_dir("sqlite:///runs/x/tune.db", "runs") == Path("runs/x")


def test_two_trial_study_writes_the_best_config_and_a_rerun_resumes_it(ray_cluster, tmp_path):
    from evolve.tune import tune

    raw = {"task": "P01", "seed": 1, "strategy": "tree",
           "budgets": {"proposals": 2, "evaluations": 2, "wall_time_s": 300},
           "evaluator": {"samples": 1, "ladder_total_s": 10, "rung_timeout_s": 5, "judge": False},
           "ray": {"num_evaluators": 1, "num_proposers": 1, "batch_size": 2, "evaluator_cpus": 0.5},
           "run": {"root": str(tmp_path / "runs")},
           "tune": {"params": SPACE, "objective": "evaluations_to_first_accept"}}
    cfg_path = tmp_path / "p01-tune.yaml"
    cfg_path.write_text(yaml.safe_dump(raw))
    storage = f"sqlite:///{tmp_path / 'tuning' / 'tune.db'}"
    lines = []
    first = tune(cfg_path, 2, storage=storage, study_name="p01", log=lines.append)
    assert (first.trials, first.completed) == (2, 2) and len(lines) == 2
    assert first.best_config == tmp_path / "tuning" / "p01-best.yaml"
    best = load_config(first.best_config)
    assert best.task == "P01" and best.strategy == "tree"
    assert best.database.temperature == pytest.approx(first.best_params["database.temperature"])
    assert best.ray.batch_size == first.best_params["ray.batch_size"]
    assert 0.5 <= best.tree.exploration_c <= 2.0
    study = optuna.load_study(study_name="p01", storage=storage)
    values = [t.value for t in study.trials]
    assert first.best_value == min(values) and all(1 <= v <= 3 for v in values)
    assert all(Path(t.user_attrs["run_dir"]).is_dir() for t in study.trials)
    second = tune(cfg_path, 1, storage=storage, study_name="p01", log=lines.append)
    assert second.trials == 3 and len(optuna.load_study(study_name="p01", storage=storage).trials) == 3


def test_cli_refuses_a_config_without_tune_params(tmp_path, capsys):
    from evolve.cli import main

    cfg = tmp_path / "plain.yaml"
    cfg.write_text("task: P01\n")
    assert main(["tune", str(cfg), "--trials", "1", "--storage", f"sqlite:///{tmp_path / 't.db'}"]) == 2
    assert "nothing to tune" in capsys.readouterr().err
    assert main(["tune", str(cfg), "--trials", "0"]) == 2
