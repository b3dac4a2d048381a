"""Soak: 500 proposals from a noisy scripted model (right, wrong, dishonest, overflowing, hostile
and malformed answers, diffs that apply or not, and transport faults: 429, 500, 503, timeouts,
dropped connections, bodies that are not JSON) through `evolve launch` on Ray. The run finishes,
and every proposal is accounted for in the journal: judged, a duplicate of a judged program, or
a failed proposal with its reason. docs/llm.md gives the figures this prints."""

import json
import os
import time
from collections import Counter

import pytest
import yaml

from doubles.chain_routes import NoisyModel
from doubles.scripted_server import Rule, ScriptedServer
from evolve import cli
from evolve.store.journal import read_journal
from evolve.store.lineage import run_summary

ray = pytest.importorskip("ray")

KEY_ENV = "STATMECH_SOAK_TEST_KEY"
os.environ.setdefault(KEY_ENV, "sk-soak-test-0001")   # before ray.init: workers inherit it
PROPOSALS = 500


@pytest.mark.slow
def test_500_noisy_proposals_are_all_accounted_for(ray_session, tmp_path, capsys):
    model = NoisyModel(seed=14)
    raw = {"task": "P01", "seed": 14, "run": {"root": str(tmp_path / "runs")},
           "budgets": {"proposals": PROPOSALS, "evaluations": PROPOSALS, "wall_time_s": 3600},
           "evaluator": {"samples": 1, "timeout_s": 3, "ladder": True, "rung_timeout_s": 3, "ladder_total_s": 8,
                         "judge": True},
           "proposers": {"structural": 0.0, "llm": 1.0},
           "prompts": {"output_format": "diff", "negative": {"enabled": True, "start_after_accepted": 1}},
           "ray": {"num_evaluators": 2, "num_proposers": 2, "batch_size": 8, "evaluator_cpus": 0.5},
           "llm": {"retries": 2, "backoff_base_s": 0.0, "request_timeout_s": 1.0,
                   "models": [{"name": "openai/noisy", "api_key_env": KEY_ENV, "input_cost_per_token": 1e-6,
                               "output_cost_per_token": 2e-6}]}}
    with ScriptedServer([Rule(".", [], respond=model)]) as srv:
        raw["llm"]["models"][0]["api_base"] = srv.base_url
        cfg = tmp_path / "soak.yaml"
        cfg.write_text(yaml.safe_dump(raw))
        t0 = time.perf_counter()
        status = cli.main(["launch", str(cfg)])
        wall = time.perf_counter() - t0
        requests = len(srv.requests)
    capsys.readouterr()
    assert status == 0
    run = next((tmp_path / "runs").iterdir())
    records = read_journal(run / "journal.msgpack").records
    proposals = [r["candidate"] for r in records if r["kind"] == "proposal"]
    judged = {r["id"] for r in records if r["kind"] == "evaluation"}
    duplicates = {r["id"] for r in records if r["kind"] == "duplicate"}
    failed = {p["id"] for p in proposals if p["code"] is None}
    ids = [p["id"] for p in proposals]
    assert len(ids) == len(set(ids)) == PROPOSALS
    assert set(ids) == judged | duplicates | failed, "a proposal is unaccounted for"
    assert not (judged & duplicates) and not (failed & (judged | duplicates))
    assert all(p["parse_error"] and p["error_kind"] in ("parse", "diff", "api") for p in proposals if p["id"] in failed)
    verdicts = [r["verdict"] for r in records if r["kind"] == "evaluation"]
    kinds = Counter(p["error_kind"] for p in proposals if p["id"] in failed)
    retried = sum(any(n.startswith("attempt ") for n in p["notes"]) for p in proposals)
    assert kinds["parse"] and kinds["diff"] and retried, kinds
    assert any(v["verdict"] == "accept" for v in verdicts)
    assert any(v["sandbox"]["violations"] for v in verdicts), "the hostile imports were refused"
    assert any(v["complexity"]["honest"] is False for v in verdicts), "the dishonest claim was caught"
    summary = run_summary(run)
    assert summary["proposals"] == PROPOSALS and summary["models"]["openai/noisy"]["proposals"] == PROPOSALS
    print(json.dumps({"wall_s": round(wall, 1), "requests": requests, "proposals": PROPOSALS,
                      "judged": len(judged), "duplicates": len(duplicates), "failed": dict(kinds),
                      "retried_proposals": retried, "accepted": sum(v["verdict"] == "accept" for v in verdicts),
                      "drawn": dict(Counter(model.drawn))}))
