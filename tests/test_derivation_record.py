"""The derivation is part of the record: a real run of the derivation proposer (the engine, run store and
verifier in this process) journals each candidate's chain; `evolve lineage` (text and --json) prints every
ancestor's steps (action, parameters, check) as journaled, `evolve show` one line per best program, and the
Verdict's feedback of a derivation candidate names its chain, so the next prompt shows it."""

import json
from dataclasses import replace

import pytest

from doubles.local_run import local_run
from evaluators.verify import VerifyOptions
from evolve.cli import main
from evolve.engine.evaluator_worker import EvaluatorWorker
from evolve.store.journal import read_journal
from search.derivation.record import Check
from search.llm.config import LLMConfig, ModelSpec
from search.prompt_builder import PromptConfig
from search.proposers import ProposerContext
from search.proposers.llm import LLM, LLMOptions
from search.records import JudgedProgram, ProposalRequest
from tasks.registry import get_task

RUN = {"task": "T12", "seed": 1, "strategy": "tree",
       "budgets": {"proposals": 4, "evaluations": 4, "wall_time_s": 600},
       "evaluator": {"samples": 1, "ladder": False, "judge": False},
       "proposers": {"structural": 0.0, "derivation": {"weight": 1.0}},
       "strategies": {"tree": {"fresh_drafts": False}},
       "ray": {"batch_size": 1}}


@pytest.fixture(scope="module")
def run(tmp_path_factory, sandbox):
    return local_run(RUN, tmp_path_factory.mktemp("derivation-run"), sandbox).path


def journal(path) -> tuple[dict, dict]:
    """(proposal candidates, evaluations) by program id, straight from the journal's records."""
    records = read_journal(path / "journal.msgpack").records
    proposals = {r["candidate"]["id"]: r["candidate"] for r in records if r["kind"] == "proposal"}
    evaluations = {r["id"]: r for r in records if r["kind"] == "evaluation"}
    return proposals, evaluations


def chain_of(record: list[dict]) -> str:
    return " -> ".join([s["action"] for s in record if s["action"] != "solve"]
                       + [s["summary"] for s in record if s["action"] == "solve"])


def test_the_journal_holds_each_candidates_checked_chain(run):
    proposals, evaluations = journal(run)
    assert len(proposals) == 4 and all(c["proposer"] == "derivation" for c in proposals.values())
    first = proposals["g0000s00"]
    assert chain_of(first["derivation"]) == "read_formula -> gauge -> kaufman"
    assert all(s["check"]["passed"] is True for s in first["derivation"] if s["action"] != "solve")
    assert first["derivation"][-1]["claims"] == {"tractable_class": "gauge", "complexity_O": "O(n)"}
    # the mutations took other chains (the proposer's next chain in cost order), every one recorded
    assert len({chain_of(c["derivation"]) for c in proposals.values()}) > 1
    assert evaluations["g0000s00"]["verdict"]["verdict"] == "accept"


def test_lineage_json_carries_every_ancestors_chain_as_journaled(run, capsys):
    proposals, _ = journal(run)
    last = max(proposals)                 # the last generation's program: its ancestry is the whole run
    assert main(["lineage", str(run), "--program", last, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    ancestors = out["ancestors"]
    assert [a["id"] for a in ancestors][-1] == last and len(ancestors) >= 2
    for a in ancestors:
        record = proposals[a["id"]]["derivation"]
        assert a["derivation"] == record
        assert a["chain"].startswith(chain_of(record) + " (")
        assert all({"action", "params", "check"} <= set(s) for s in a["derivation"] if s["action"] != "solve")


def test_lineage_text_prints_each_step_with_its_parameters_and_check(run, capsys):
    proposals, _ = journal(run)
    last = max(proposals)
    assert main(["lineage", str(run), "--program", last]) == 0
    out = capsys.readouterr().out
    blocks = out.split("\n[")[1:]                       # one block per ancestor
    assert len(blocks) >= 2
    for block in blocks:
        pid = block.split("]", 1)[1].split()[0]
        record = proposals[pid]["derivation"]
        assert f"derivation: {chain_of(record)} (" in block
        for k, step in enumerate(record):
            if step["action"] == "solve":
                claims = step["claims"]
                assert f"solver {step['summary']}" in block
                assert f"claims {claims['tractable_class']}, {claims['complexity_O']}" in block
                continue
            check = Check(**step["check"]).text()            # the journaled check, as its record prints it
            line = next(ln for ln in block.splitlines() if ln.strip().startswith(f"step {k} {step['action']}"))
            assert line.endswith(f"check {check}") and "passed on 6 instances" in check
            for key, value in step["params"].items():
                if value not in ([], {}, None, ""):
                    assert f"{key}={str(value)[:40]}" in line


def test_show_prints_the_chain_of_each_best_program_on_one_line(run, capsys):
    proposals, evaluations = journal(run)
    assert main(["show", str(run), "--top", "4"]) == 0
    out = capsys.readouterr().out
    section = out.split("derivations of the best programs")[1]
    lines = [ln for ln in section.splitlines()[1:] if ln.strip() and not ln.startswith("`")]
    assert len(lines) == len(evaluations)
    for line in lines:
        _, pid, rest = line.split(maxsplit=2)
        assert rest.startswith(chain_of(proposals[pid]["derivation"]) + " (")
    assert main(["show", str(run), "--json"]) == 0
    top = json.loads(capsys.readouterr().out)["top"]
    assert all(p["derivation"] == proposals[p["id"]]["derivation"] for p in top)


def test_the_feedback_of_a_derivation_candidate_names_its_chain(run):
    _, evaluations = journal(run)
    feedback = evaluations["g0000s00"]["verdict"]["feedback"]
    assert ("Derivation the program was rendered from: step 0 read_formula: checked; step 1 gauge: checked; "
            "solver kaufman: claims gauge, O(n).") in feedback


def test_a_rejected_derivation_program_reaches_the_next_prompt_with_its_chain(run, sandbox):
    """The chain in the feedback travels with the Verdict: the prompt built on the rejected program lists it
    among the parent's failed checks (code format) and shows the chain itself (chain format)."""
    from evolve.store.lineage import RunIndex

    cand = RunIndex(run).proposals["g0000s00"]
    broken = replace(cand, id="broken", code=cand.code.replace('+ float(state["log_shift"])',
                                                               '+ float(state["log_shift"]) + 0.5'))
    assert broken.code != cand.code
    worker = EvaluatorWorker("T12", VerifyOptions(samples=1, ladder=False, judge=False), sandbox=sandbox)
    evaluation = worker.evaluate(broken)
    assert evaluation.verdict.verdict == "reject"
    assert "Derivation the program was rendered from: step 0 read_formula: checked; step 1 gauge" in \
        evaluation.verdict.feedback
    parent = JudgedProgram(broken, evaluation)
    llm = LLMConfig(models=(ModelSpec("openai/x"),))
    for fmt, expected in (("full", "The verifier's full report on the parent program"),
                          ("chain", "--- parent derivation (broken) ---")):
        proposer = LLM(get_task("T12"), LLMOptions(weight=1.0),
                       ProposerContext(llm=llm, prompts=PromptConfig(output_format=fmt)))
        user = proposer.prompt(ProposalRequest(id="a", generation=1, slot=0, proposer="llm", parent=parent)) \
            .messages[1]["content"]
        assert expected in user and "Derivation the program was rendered from: step 0 read_formula" in user
    assert '{"derivation": [{"action": "gauge"}], "solver": "kaufman"' in user
    assert "- step 1 gauge" in user and "check passed on 6 instances" in user
