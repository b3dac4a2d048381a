"""`evolve launch` with a model that cannot work, on Ray, through litellm: a missing key variable
is a usage error before anything is created; a closed port or a wrong key fails the preflight
(exit 1, nothing retried for the key); a run whose every proposal failed for one reason exits 1
and says why, and so does `evolve show`; an auth failure in the middle of a run ends it after
that generation."""

import json
import os
import socket
import time

import pytest
import yaml

from doubles.scripted_server import PREFLIGHT_RULE, Reply, Rule, ScriptedServer
from evolve import cli
from evolve.store.journal import read_journal

ray = pytest.importorskip("ray")

KEY_ENV = "STATMECH_LAUNCH_TEST_KEY"
# Ray workers inherit the environment at ray.init: the key must be set before
os.environ.setdefault(KEY_ENV, "sk-launch-test-0001")


@pytest.fixture(scope="module")
def ray_cluster(ray_session):
    """The session's Ray (tests/conftest.py): one ray.init per worker, not one per file."""


def config_file(tmp_path, api_base: str, key_env: str = KEY_ENV, proposals: int = 8) -> str:
    raw = {"task": "P01", "seed": 0, "run": {"root": str(tmp_path / "runs")},
           "budgets": {"proposals": proposals, "evaluations": proposals, "wall_time_s": 300},
           "evaluator": {"samples": 1, "ladder": False, "judge": False},
           "proposers": {"structural": 0.0, "llm": 1.0},
           "ray": {"num_evaluators": 1, "num_proposers": 1, "batch_size": 4, "evaluator_cpus": 0.5},
           "llm": {"retries": 3, "backoff_base_s": 0.0, "request_timeout_s": 10,
                   "models": [{"name": "openai/scripted", "api_base": api_base, "api_key_env": key_env}]}}
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(raw))
    return str(path)


def only_run(tmp_path):
    runs = list((tmp_path / "runs").iterdir())
    assert len(runs) == 1
    return runs[0]


def records(run, kind):
    return [r for r in read_journal(run / "journal.msgpack").records if r["kind"] == kind]


def test_an_unset_key_variable_is_a_usage_error_before_any_run_directory(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("STATMECH_NEVER_SET_KEY", raising=False)
    assert cli.main(["launch", config_file(tmp_path, "http://127.0.0.1:1/v1", "STATMECH_NEVER_SET_KEY")]) == 2
    err = capsys.readouterr().err
    assert "openai/scripted: STATMECH_NEVER_SET_KEY" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_a_closed_port_fails_the_preflight_with_exit_1(ray_cluster, tmp_path, capsys):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    t0 = time.perf_counter()
    assert cli.main(["launch", config_file(tmp_path, f"http://127.0.0.1:{port}/v1")]) == 1
    assert time.perf_counter() - t0 < 60
    err = capsys.readouterr().err
    assert "run failed: model preflight failed" in err and f"cannot connect to http://127.0.0.1:{port}/v1" in err
    run = only_run(tmp_path)
    assert json.loads((run / "status.json").read_text())["state"] == "failed"
    assert records(run, "proposal") == [] and records(run, "preflight")[0]["ok"] is False
    assert cli.main(["show", str(run)]) == 0
    shown = capsys.readouterr().out
    assert "failed (failed: model preflight failed" in shown and "preflight failed (retries_exhausted)" in shown


def test_a_wrong_key_fails_the_preflight_after_one_request(ray_cluster, tmp_path, capsys):
    with ScriptedServer([Rule(".", ["{}"], repeat_last=True)], api_key="sk-the-right-one") as srv:
        assert cli.main(["launch", config_file(tmp_path, srv.base_url)]) == 1
    assert [r["rule"] for r in srv.requests] == ["auth"]
    assert "AuthenticationError" in capsys.readouterr().err


def test_a_run_whose_every_proposal_failed_for_one_reason_exits_1_and_show_says_why(ray_cluster, tmp_path, capsys):
    with ScriptedServer([Rule(".", ["I cannot write code today."], repeat_last=True)]) as srv:
        assert cli.main(["launch", config_file(tmp_path, srv.base_url)]) == 1
    err = capsys.readouterr().err
    assert "run failed: all 8 proposal(s) failed for the same reason:" in err
    run = only_run(tmp_path)
    assert len(records(run, "proposal")) == 8 and json.loads((run / "status.json").read_text())["state"] == "failed"
    assert cli.main(["show", str(run), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["failure"]["same_reason"] and summary["failure"]["kinds"] == {"parse": 8}
    assert summary["models"]["openai/scripted"]["parse_failures"] == 8
    assert cli.main(["show", str(run)]) == 0
    assert "FAILED: all 8 proposal(s) failed for the same reason" in capsys.readouterr().out


def test_an_auth_failure_in_the_middle_of_a_run_ends_it_after_that_generation(ray_cluster, tmp_path, capsys):
    with ScriptedServer([Rule(".", [Reply(status=401)], repeat_last=True)]) as srv:
        assert cli.main(["launch", config_file(tmp_path, srv.base_url, proposals=12)]) == 1
    rules = [r["rule"] for r in srv.requests]
    assert rules[0] == PREFLIGHT_RULE and len(rules) == 5     # the preflight passed; 4 proposals, none retried
    err = capsys.readouterr().err
    assert "every LLM proposal of the generation failed (4 of 4)" in err
    assert len(records(only_run(tmp_path), "proposal")) == 4
