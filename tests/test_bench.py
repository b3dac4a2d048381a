"""`evolve bench`: the StatMechBench-v0 protocol over a scripted model (litellm against the
scripted server) and the structural proposer; metrics on controlled data, resume, bad input."""

import argparse
import csv
import json
import re
import sys

import pytest

from conftest import FIXTURES, fixture_candidates
from evaluators.verdict import Verdict
from evolve.commands import bench as cmd_bench
from evolve.commands.common import UsageError
from evolve.bench.metrics import bench_table, group_metrics, trial_summary
from evolve.bench.trial import RefineRound, RefineTrace, run_refine_trial
from evolve.engine.proposer_worker import ProposerWorker
from search.database import score_of
from search.proposers import ProposerContext
from search.proposers.structural import StructuralOptions
from search.records import Evaluation
from doubles.scripted_server import PREFLIGHT_RULE, Reply, Rule, ScriptedServer
from tasks.registry import get_task

KEY_ENV = "STATMECH_TEST_LLM_KEY"
MODEL = "openai/scripted"
SLUG = "openai_scripted"
TASKS = ["P01", "P02", "P03", "P04", "P05", "P06"]
VARIANTS = ["canonical", "paraphrased"]
PRICE_IN, PRICE_OUT = 1e-6, 2e-6
FAST = ["--samples", "1", "--no-ladder", "--no-judge"]


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test")


def bench(*argv) -> int:
    """`evolve bench ...` as the CLI runs it (UsageError -> one line on stderr, status 2)."""
    parser = argparse.ArgumentParser(prog="evolve")
    cmd_bench.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["bench", *argv])
    try:
        return args.run(args)
    except UsageError as exc:
        print(f"evolve bench: error: {exc}", file=sys.stderr)
        return 2


def correct_answers() -> dict:
    """task id -> a correct answer in the paper's schema, from the reference fixtures."""
    out = {}
    for name, claims in fixture_candidates().items():
        claims = dict(claims)
        out[claims.pop("task")] = json.dumps({**claims, "code": (FIXTURES / name).read_text()})
    return out


WRONG_MARK = "return (2 * math.cosh(params['beta'] * params['J'])) ** n"


def wrong_p01(claimed_class: str) -> str:
    code = "import math\n\ndef Z_efficient(params, n):\n    return (2 * math.cosh(params['beta'] * params['J'])) ** n\n"
    return json.dumps({"tractable_class": claimed_class, "complexity_O": "O(n)", "confidence": 0.6,
                       "justification": "Periodic chain formula.", "code": code})


def script() -> list:
    """One rule per task and variant, keyed on the description; P01 answers wrong first."""
    good = correct_answers()
    rules = []
    for tid in TASKS:
        for variant, wrong_class in zip(VARIANTS, ["transfer_matrix", "free_fermion"]):
            pattern = re.escape(get_task(tid).description(variant))
            replies = [wrong_p01(wrong_class), good[tid]] if tid == "P01" else [good[tid]]
            rules.append(Rule(pattern, replies, repeat_last=tid != "P01"))
    return rules


def llm_config(tmp_path, server) -> str:
    path = tmp_path / "llm.yaml"
    path.write_text(f"retries: 0\nbackoff_base_s: 0.0\nrequest_timeout_s: 20\nmodels:\n"
                    f"  - name: {MODEL}\n    api_base: {server.base_url}\n    api_key_env: {KEY_ENV}\n"
                    f"    input_cost_per_token: {PRICE_IN!r}\n    output_cost_per_token: {PRICE_OUT!r}\n")
    return str(path)


def rows_of(out) -> dict:
    with open(out / "results.csv", newline="") as fh:
        return {r["variant"]: r for r in csv.DictReader(fh) if r["model"] == MODEL}


def test_scripted_model_over_all_tasks_and_variants_then_resume(tmp_path, capsys):
    out = tmp_path / "bench"
    with ScriptedServer(script()) as srv:
        cfg = llm_config(tmp_path, srv)
        args = ["--models", MODEL, "--rounds", "5", "--out", str(out), "--llm-config", cfg, *FAST]
        assert bench(*args) == 0
        first = capsys.readouterr()
        assert len(srv.requests) == 15  # one preflight, 12 trials, plus P01's second round in both variants
        assert srv.requests[0]["rule"] == PREFLIGHT_RULE
        assert all(r["reply"] is not None for r in srv.requests[1:])
        assert len(re.findall(r"^\[\d+/12\] openai/scripted P0\d \w+: accepted at round \d", first.err, re.M)) == 12

        records = {p.name: json.loads(p.read_text()) for p in (out / "trials").glob("*.json")}
        assert sorted(records) == sorted(f"{SLUG}__{t}__{v}.json" for t in TASKS for v in VARIANTS)
        p01 = records[f"{SLUG}__P01__canonical.json"]
        r0, r1 = p01["trace"]["rounds"]
        assert r0["response"] == wrong_p01("transfer_matrix") and r0["verdict"]["numerical"]["passed"] is False
        assert r1["verdict"]["verdict"] == "accept" and r1["prompt_kind"] == "paper_feedback"
        sent = [r["body"]["messages"] for r in srv.requests]
        for rnd in (r0, r1):
            assert rnd["prompt"] in sent   # the exact messages sent, system prompt included
            assert rnd["prompt"][0]["role"] == "system" and rnd["prompt"][1]["content"] == rnd["candidate"]["prompt"]
            assert rnd["prompt_id"] and rnd["candidate"]["code"] and rnd["tokens_in"] > 0 and rnd["seconds"] > 0
            assert rnd["cost_usd"] == pytest.approx(rnd["tokens_in"] * PRICE_IN + rnd["tokens_out"] * PRICE_OUT)
        assert r0["prompt"][1]["content"].startswith("Here is the problem") and WRONG_MARK in r1["prompt"][1]["content"]
        assert p01["settings"] == {"rounds": 5, "samples": 1, "seed": 0, "ladder": False, "judge": False,
                                   "timeout_s": 30.0, "prompts": "paper"}

        rows = rows_of(out)
        can, par = rows["canonical"], rows["paraphrased"]
        # TC0: P04's row-transfer answer claims transfer_matrix (gold: pfaffian); in the paraphrased
        # variant P01's first answer also claims the wrong class.
        assert float(can["TC0_pct"]) == pytest.approx(500 / 6) and float(par["TC0_pct"]) == pytest.approx(400 / 6)
        for row in (can, par):
            assert float(row["NM0_pct"]) == pytest.approx(500 / 6)  # P01's first answer is numerically wrong
            assert row["k_star"] == "1" and row["k_star_acc"] == "1" and row["nm_by_round_pct"] == "83.3333;100;100;100;100"
            assert float(row["NM_pct"]) == 100 and float(row["Acc_pct"]) == 100 and row["trials"] == "6"
            assert row["O_pct"] == row["Cls_pct"] == row["Phys_pct"] == ""  # no judge, no audit
            assert float(row["n_verified_median"]) == 13.0  # probe maxima 14, 12, 16, 16, 12, 10
            cost = sum(r["tokens_in"] * PRICE_IN + r["tokens_out"] * PRICE_OUT for rec in records.values()
                       if rec["variant"] == row["variant"] for r in rec["trace"]["rounds"])
            assert float(row["cost_usd"]) == pytest.approx(cost, rel=1e-9) and cost > 0
            assert float(row["time_s"]) == pytest.approx(sum(rec["wall_seconds"] for rec in records.values()
                                                             if rec["variant"] == row["variant"]))
        table = (out / "table.md").read_text()
        assert "| openai/scripted | canonical | 83 | 83 | n/a | 1 |" in table
        assert "|  | paraphrased | 67 | 83 | n/a | 1 |" in table and "6/6 |" in table
        assert table.splitlines()[4] in first.out

        # a rerun resumes: nothing reaches the server, the same table comes out
        assert bench(*args) == 0
        again = capsys.readouterr()
        assert len(srv.requests) == 15 and again.err.count("finished earlier, skipped") == 12
        assert (out / "table.md").read_text() == table
        # a trial whose record is gone is the only one run again
        (out / "trials" / f"{SLUG}__P03__canonical.json").unlink()
        assert bench(*args) == 0
        assert len(srv.requests) == 17 and srv.requests[-2]["rule"] == PREFLIGHT_RULE   # the model is checked first
        assert get_task("P03").description("canonical") in srv.requests[-1]["body"]["messages"][-1]["content"]
        # other settings in the same directory are refused before anything runs
        assert bench(*args[:-4], "--samples", "2", "--no-ladder", "--no-judge") == 2
        assert "other settings (samples=1)" in capsys.readouterr().err and len(srv.requests) == 17


def test_a_provider_failure_leaves_the_trial_unfinished_and_the_rerun_retries_it(tmp_path, capsys):
    out = tmp_path / "bench"
    good = correct_answers()["P01"]
    with ScriptedServer([Rule("Here is the problem", [Reply(status=401), good])]) as srv:
        args = ["--models", MODEL, "--tasks", "P01", "--variants", "canonical", "--out", str(out),
                "--llm-config", llm_config(tmp_path, srv), *FAST]
        assert bench(*args) == 1
        err = capsys.readouterr().err
        assert "NOT FINISHED" in err and "api error" in err
        trial = out / "trials" / f"{SLUG}__P01__canonical.json"
        assert not trial.exists() and trial.with_suffix(".error.json").exists()
        assert "| 0/1 |" in (out / "table.md").read_text()
        assert bench(*args) == 0
        assert trial.exists() and not trial.with_suffix(".error.json").exists()
        assert [r["rule"] for r in srv.requests] == [PREFLIGHT_RULE, 0, PREFLIGHT_RULE, 0]


def test_a_model_that_fails_its_preflight_is_not_called_for_its_trials(tmp_path, capsys):
    out = tmp_path / "bench"
    with ScriptedServer([Rule(".", [correct_answers()["P01"]], repeat_last=True)], api_key="sk-not-this-one") as srv:
        args = ["--models", MODEL, "--tasks", "P01,P02", "--variants", "canonical,paraphrased", "--out", str(out),
                "--llm-config", llm_config(tmp_path, srv), *FAST]
        assert bench(*args) == 1
    err = capsys.readouterr().err
    assert len(srv.requests) == 1 and srv.requests[0]["rule"] == "auth"     # one preflight, nothing retried
    assert err.count("NOT RUN: preflight failed") == 4 and "AuthenticationError" in err
    assert not list((out / "trials").glob("*.json"))


def test_structural_proposer_benchmarked_as_a_model(tmp_path, capsys):
    out = tmp_path / "bench"
    assert bench("--models", "structural", "--tasks", "P01,P05", "--variants", "canonical", "--samples", "1",
                 "--no-ladder", "--rounds", "2", "--out", str(out)) == 0  # judge on
    recs = [json.loads((out / "trials" / f"structural__{t}__canonical.json").read_text()) for t in ("P01", "P05")]
    for rec in recs:
        rnd = rec["trace"]["rounds"][0]
        assert rnd["model"] == "structural" and rnd["response"] is None and rnd["cost_usd"] == 0
        assert rnd["verdict"]["class"]["consistent"] is True and rnd["verdict"]["physics"]["passed"] is True
    row = rows_of_model(out, "structural")
    assert float(row["TC0_pct"]) == 100 and float(row["NM0_pct"]) == 100 and row["k_star"] == "0"
    assert float(row["O_pct"]) == 100 and float(row["Cls_pct"]) == 100 and float(row["Phys_pct"]) == 100
    assert float(row["cost_usd"]) == 0


def rows_of_model(out, model) -> dict:
    with open(out / "results.csv", newline="") as fh:
        return next(r for r in csv.DictReader(fh) if r["model"] == model)


def test_structural_rounds_mutate_the_previous_candidate():
    """Round k > 0 re-proposes with the previous candidate as parent: a mutation of its plan."""
    task = get_task("P03")
    seen = []

    class Evaluator:
        def evaluate(self, cand):
            seen.append(cand.code)
            v = Verdict(task=task.id)
            v.numerical.passed = v.numerical.probes = 1
            v.verdict = "accept" if len(seen) == 3 else "reject"
            return Evaluation(cand.id, v, score_of(v, cand.code))

    proposer = ProposerWorker(task.id, {"structural": StructuralOptions()}, ProposerContext(seed=3))
    trace = run_refine_trial(task.id, "canonical", 5, proposer, Evaluator(), seed=3)
    assert trace.accepted_round == 2 and len(trace.rounds) == 3
    cands = [r.candidate for r in trace.rounds]
    assert cands[0]["prompt_meta"]["operation"].startswith("initial")
    for parent, child in zip(cands, cands[1:]):
        assert child["parent_ids"] == [parent["id"]]
        assert child["prompt_meta"]["operation"].split()[0] in ("mutate", "switch", "no")
        assert child["prompt_meta"]["plan"] != parent["prompt_meta"]["plan"]


def _record(task, variant, rounds, gold="transfer_matrix", judge=True, model="m"):
    """A synthetic trial record: ``rounds`` = [(class, numerical passed, honest, accepted), ...]."""
    out = []
    for i, (cls, passed, honest, accepted) in enumerate(rounds):
        verdict = None
        if passed is not None:
            verdict = Verdict(task=task, verdict="accept" if accepted else "reject")
            verdict.numerical.passed, verdict.numerical.largest_n_verified = passed, 10 * (i + 1) if passed else 0
            verdict.complexity.honest, verdict.class_.consistent, verdict.physics.passed = honest, accepted, accepted
        out.append(RefineRound(index=i, prompt_id=None, prompt_kind="", model=model, response=None,
                               candidate={"tractable_class": cls}, parse_error=None, verdict=verdict, feedback="",
                               accepted=accepted, cost_usd=0.5))
    trace = RefineTrace(task, variant, 5, out, "accepted" if any(r[3] for r in rounds) else "rounds exhausted")
    return {"model": model, "task": task, "variant": variant, "gold_class": gold, "wall_seconds": 2.0,
            "settings": {"rounds": 5, "judge": judge}, "trace": trace.to_dict()}


def test_metrics_on_controlled_records():
    recs = [
        _record("A", "c", [("transfer_matrix", True, True, True)]),
        # numerically right at round 0 but dishonest: the paper's loop stops there, so O counts it
        # dishonest even though our loop went on to an honest accepted answer at round 2
        _record("B", "c", [("pfaffian", True, False, False), ("pfaffian", True, None, False),
                           ("pfaffian", True, True, True)]),
        # never numerically right; the last answer did not parse (no verdict)
        _record("C", "c", [("gauge", False, None, False), (None, None, None, False)]),
    ]
    m = group_metrics([trial_summary(r) for r in recs])
    assert m["TC0"] == pytest.approx(100 / 3) and m["NM0"] == pytest.approx(200 / 3)
    assert m["O"] == pytest.approx(200 / 3)   # B's paper-final answer (round 0) is dishonest
    assert m["k_star"] is None and m["k_star_acc"] is None  # C never passed
    assert m["NM"] == pytest.approx(200 / 3) and m["Acc"] == pytest.approx(200 / 3)
    assert m["Cls"] == pytest.approx(200 / 3) and m["Phys"] == pytest.approx(200 / 3)
    assert m["n_verified"] == 10.0  # final answers: 10 (A), 30 (B), 0 (C)
    assert m["time_s"] == 6.0 and m["cost_usd"] == 3.0
    assert m["nm_by_round"] == pytest.approx([200 / 3] * 5)
    m2 = group_metrics([trial_summary(r) for r in recs[:2]])
    assert m2["k_star"] == 0 and m2["k_star_acc"] == 2 and m2["O"] == 50
    late = _record("D", "c", [("x", False, None, False)] * 3 + [("x", True, True, True)])
    assert group_metrics([trial_summary(late)])["k_star"] == 3
    unjudged = group_metrics([trial_summary(_record("A", "c", [("x", True, None, True)], judge=False))])
    assert unjudged["O"] is None and unjudged["Cls"] is None and unjudged["TC0"] == 0
    rows = bench_table(recs + [_record("A", "p", [("x", True, True, True)])], ["m", "z"], ["c", "p"], ["A", "B", "C"])
    assert [(r["model"], r["variant"], r["trials"]) for r in rows] == [("m", "c", 3), ("m", "p", 1), ("z", "c", 0),
                                                                      ("z", "p", 0)]


@pytest.mark.parametrize("argv, words", [
    (["--models", "notaprovider/x"], "litellm knows no provider"),
    (["--models", "gpt 4"], "not a litellm model string"),
    (["--models", ""], "--models needs"),
    (["--models", "structural,,x"], "--models needs"),
    (["--models", "structural", "--tasks", "P99"], "unknown task"),
    (["--models", "structural", "--tasks", ","], "--tasks needs"),
    (["--models", "structural", "--variants", ""], "--variants needs"),
    (["--models", "structural", "--variants", "formal"], "unknown variant"),
    (["--models", "structural", "--rounds", "0"], "at least 1"),
])
def test_bad_input_is_one_line_and_status_2(argv, words, tmp_path, capsys):
    assert bench(*argv, "--out", str(tmp_path / "o")) == 2
    out, err = capsys.readouterr()
    assert err.startswith("evolve bench: error: ") and err.count("\n") == 1 and words in err and out == ""
    assert not (tmp_path / "o").exists()


def test_bad_llm_config_and_unwritable_out_are_usage_errors(tmp_path, capsys):
    secret = tmp_path / "secret.yaml"
    secret.write_text("models:\n  - name: openai/x\n    api_key: sk-oops\n")
    assert bench("--models", "openai/x", "--llm-config", str(secret), "--out", str(tmp_path / "o")) == 2
    assert "api_key may not appear" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert bench("--models", "structural", "--tasks", "P01", "--out", str(blocker / "sub")) == 2
    err = capsys.readouterr().err
    assert "is not writable" in err and err.count("\n") == 1
