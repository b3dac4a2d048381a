"""LLM runs through litellm against the scripted server, on the real engine, config, run store and
verifier (in-process workers): the bandit learns and resumes, each system prompt is journaled once,
`evolve show` reports per model, `evolve export` writes one record per proposal, `evolve replay`
re-judges from the recorded responses without a model."""

import hashlib
import itertools
import json

import pytest

from doubles.chain_routes import (DIFF_APPLIES, DIFF_FAILS, ROUTES, answer)
from doubles.local_run import local_run
from doubles.scripted_server import PREFLIGHT_RULE, Reply, Rule, ScriptedServer
from evaluators.verdict import Numerical, Verdict
from evolve import cli
from evolve.analysis.export import export_records
from evolve.analysis.rejudge import reparse, rejudge_run
from evolve.engine.models import outcome_reward
from evolve.store.journal import read_journal
from evolve.store.lineage import RunIndex, run_summary
from search.database import score_of
from search.records import Evaluation, JudgedProgram

KEY_ENV = "STATMECH_RUNS_TEST_KEY"
RIGHT = ("closed_form_log", "transfer_matrix", "message_passing", "tensor_network")
IN_PRICE, OUT_PRICE = 1e-6, 2e-6


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-runs-test-0001")


def config(server, models, proposals=24, selection="bandit", **extra) -> dict:
    return {"task": "P01", "seed": 0, "strategy": "islands",
            "budgets": {"proposals": proposals, "evaluations": proposals, "wall_time_s": 900},
            "evaluator": {"samples": 1, "ladder": False, "judge": False, "timeout_s": 5},
            "proposers": {"structural": 0.0, "llm": 1.0},
            "strategies": {"islands": {"islands": 2}},
            "ray": {"batch_size": 4},
            "llm": {"selection": selection, "retries": 1, "backoff_base_s": 0.0, "request_timeout_s": 20,
                    "models": [{"name": f"openai/{m}", "api_base": server.base_url, "api_key_env": KEY_ENV,
                                "input_cost_per_token": IN_PRICE, "output_cost_per_token": OUT_PRICE} for m in models]},
            **extra}


def two_models(body: dict) -> Reply:
    """``good`` answers a right route (a function of the prompt, so reruns get the same answers),
    ``bad`` answers prose."""
    if body["model"] == "bad":
        return Reply("I would use a transfer matrix.", prompt_tokens=100, completion_tokens=20)
    digest = int(hashlib.sha256(body["messages"][-1]["content"].encode()).hexdigest(), 16)
    return Reply(answer(RIGHT[digest % len(RIGHT)]), prompt_tokens=100, completion_tokens=20, delay_s=0.02)


def models_of(path) -> list[tuple[str, str]]:
    return [(r["candidate"]["id"], r["candidate"]["model"]) for r in read_journal(path / "journal.msgpack").records
            if r["kind"] == "proposal"]


def test_the_bandit_learns_during_a_run_and_show_reports_every_model(tmp_path, sandbox, capsys):
    with ScriptedServer([Rule(".", [], respond=two_models)]) as srv:
        bandit = local_run(config(srv, ["good", "bad"], proposals=32), tmp_path / "bandit", sandbox)
        weights = local_run(config(srv, ["good", "bad"], proposals=32, selection="weights"), tmp_path / "w", sandbox)
    picks = [m for _, m in models_of(bandit.path)]
    uniform = [m for _, m in models_of(weights.path)]
    assert len(picks) == 32 and picks[:2].count("openai/good") == 1    # each arm tried once at the start
    assert picks.count("openai/good") >= 24, picks                      # then the model that earns rewards
    assert 10 <= uniform.count("openai/good") <= 22, uniform             # equal weights, no learning
    arms = bandit.engine.state()["models"]["bandit"]["arms"]
    assert arms["openai/good"]["reward"] > 0 and arms["openai/bad"]["reward"] == 0.0
    assert arms["openai/bad"]["cost"] > 0      # what the useless model cost is counted too

    models = run_summary(bandit.path)["models"]
    idx = RunIndex(bandit.path)
    for name in ("openai/good", "openai/bad"):
        cands = [c for c in idx.proposals.values() if c.model == name]
        m = models[name]
        assert m["proposals"] == len(cands) == picks.count(name)
        assert m["tokens_in"] == 100 * len(cands) and m["tokens_out"] == 20 * len(cands)
        assert m["usd"] == pytest.approx(len(cands) * (100 * IN_PRICE + 20 * OUT_PRICE))
        assert m["evaluations"] == sum(c.id in idx.evaluations for c in cands) and m["preflight"] == "ok"
    assert models["openai/bad"]["parse_failures"] == models["openai/bad"]["proposals"]
    assert models["openai/bad"]["evaluations"] == 0 and models["openai/good"]["accepted"] >= 1
    assert models["openai/good"]["mean_latency_s"] >= 0.02
    assert cli.main(["show", str(bandit.path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert set(shown["models"]) == {"openai/good", "openai/bad"} and shown["failure"] is None
    assert cli.main(["show", str(bandit.path)]) == 0
    text = capsys.readouterr().out
    assert "openai/good" in text and "parse fail" in text and "mean latency" in text


def test_a_resumed_run_continues_the_bandit_where_it_stopped(tmp_path, sandbox):
    with ScriptedServer([Rule(".", [], respond=two_models)]) as srv:
        whole = local_run(config(srv, ["good", "bad"], proposals=24), tmp_path / "whole", sandbox)
        half = local_run(config(srv, ["good", "bad"], proposals=12), tmp_path / "half", sandbox)
        rest = local_run(config(srv, ["good", "bad"], proposals=24), tmp_path, sandbox, resume=half.path)
    assert models_of(rest.path) == models_of(whole.path)
    assert rest.engine.state()["models"] == whole.engine.state()["models"]
    preflights = [r for r in read_journal(rest.path / "journal.msgpack").records if r["kind"] == "preflight"]
    assert len(preflights) == 4      # two models, once per session


def test_each_system_prompt_is_journaled_once_and_exports_carry_the_messages_sent(tmp_path, sandbox):
    with ScriptedServer([Rule(".", [], respond=two_models)]) as srv:
        run = local_run(config(srv, ["good"], proposals=12), tmp_path, sandbox)
        sent = {r["body"]["messages"][-1]["content"]: r["body"]["messages"] for r in srv.requests
                if r["rule"] != PREFLIGHT_RULE}
    records = read_journal(run.path / "journal.msgpack").records
    systems = [r for r in records if r["kind"] == "system_prompt"]
    proposals = [r["candidate"] for r in records if r["kind"] == "proposal"]
    assert len(systems) == 1 and len(proposals) == 12
    assert all(p["prompt_meta"]["system"] == systems[0]["digest"] and p["system_prompt"] is None for p in proposals)
    exported = list(export_records(run.path))
    assert [e["id"] for e in exported] == [p["id"] for p in proposals]
    for e in exported:
        assert e["messages"] == sent[e["messages"][-1]["content"]]       # exactly what the model was sent
        assert e["messages"][0]["content"] == systems[0]["text"]
        assert "the interface your program must meet" in e["messages"][1]["content"]


def test_export_writes_one_documented_record_per_proposal(tmp_path, sandbox):
    edits = itertools.cycle([DIFF_APPLIES, DIFF_FAILS])

    def respond(body):
        user = body["messages"][-1]["content"]
        if "--- parent program" in user and "log_Z" in user and "coupling = " not in user.split("--- end parent")[0]:
            return next(edits)
        return answer("closed_form_log")

    with ScriptedServer([Rule(".", [], respond=respond)]) as srv:
        run = local_run(config(srv, ["good"], proposals=12, prompts={"output_format": "diff"}), tmp_path, sandbox)
    out = tmp_path / "export.jsonl"
    assert cli.main(["export", str(run.path), "--format", "jsonl", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    keys = {"schema", "run_id", "task", "id", "generation", "slot", "island", "proposer", "model", "parent_ids",
            "messages", "prompt_id", "prompt_meta", "response", "response_format", "program", "parse_error",
            "error_kind", "diff_from_parent", "verdict", "duplicate_of", "first_failure", "score", "fitness",
            "reward", "tokens_in", "tokens_out", "cost_usd", "latency_s", "created"}
    assert len(rows) == 12 and all(set(r) == keys for r in rows)
    idx = RunIndex(run.path)
    edited = [r for r in rows if r["response_format"] == "diff"]
    failed = [r for r in rows if r["error_kind"] == "diff"]
    assert edited and failed, "the run has diffs that applied and diffs that did not"
    for r in edited:
        assert "+    coupling = abs(" in r["diff_from_parent"] and r["program"]["code"] == idx.proposals[r["id"]].code
    for r in rows:
        parent = r["parent_ids"][0] if r["parent_ids"] else None
        expected = outcome_reward(JudgedProgram(idx.proposals[r["id"]], idx.evaluations.get(r["id"])),
                                  JudgedProgram(idx.proposals[parent], idx.evaluations.get(parent)) if parent else None)
        assert r["reward"] == expected and (r["verdict"] is None) == (r["id"] not in idx.evaluations)
    assert any(r["reward"] > 0 for r in rows)


class AcceptEverything:
    """Yesterday's verifier, with a bug: it accepts whatever it is given."""

    def evaluate(self, cand):
        v = Verdict(task=cand.task, verdict="accept", numerical=Numerical(passed=True, probes=1, largest_n_verified=14))
        return Evaluation(cand.id, v, score_of(v, cand.code))


def test_replay_rejudges_from_the_recorded_responses_without_a_model(tmp_path, sandbox, capsys):
    order = iter(["periodic", "closed_form_log", "curie_weiss", "transfer_matrix"] * 10)

    def respond(body):
        user = body["messages"][-1]["content"]
        if "--- parent program" in user and "log_Z" in user and "coupling = " not in user:
            return DIFF_APPLIES
        return answer(next(order))

    with ScriptedServer([Rule(".", [], respond=respond)]) as srv:
        run = local_run(config(srv, ["good"], proposals=12, prompts={"output_format": "diff"}), tmp_path, sandbox,
                        evaluator=AcceptEverything())
    # the server is gone: a replay that called a model would fail
    idx = RunIndex(run.path)
    for cand in idx.proposals.values():
        again = reparse(idx, cand)
        assert (again.code, again.parse_error, again.error_kind) == (cand.code, cand.parse_error, cand.error_kind)
    wrong = {c.id for c in idx.proposals.values() if c.id in idx.evaluations
             and c.code in (ROUTES["periodic"][0], ROUTES["curie_weiss"][0])}
    assert wrong, "the lenient verifier accepted wrong programs"
    report = rejudge_run(run.path, out=tmp_path / "replay")
    assert {p.id for p in report.changed} == wrong
    assert all((p.before, p.after) == ("accept", "reject") for p in report.changed)
    assert all(p.failure_after.startswith("probes:") for p in report.changed)
    lines = (tmp_path / "replay" / "replay.jsonl").read_text().splitlines()
    assert len(lines) == len(idx.proposals) and json.loads((tmp_path / "replay" / "summary.json").read_text())[
        "changed"] == len(wrong)
    assert cli.main(["replay", str(run.path), "--json"]) == 1     # something changed
    assert json.loads(capsys.readouterr().out)["transitions"] == {"accept -> reject": len(wrong)}
