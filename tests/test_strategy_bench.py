"""The strategy comparison on the scripted model whose first answers are wrong: the model's
rules (which prompt gets which answer), the figures read back from run records, and the three
strategies end to end against the scripted server through litellm and Ray."""

import json
import os
from pathlib import Path

import pytest

from search import scripted_scenario as sc
from search.prompt_builder import ProgramView, PromptBuilder
from tasks.registry import get_task

ray = pytest.importorskip("ray")

# Ray workers inherit the environment at ray.init: the scripted provider's key must be set before.
os.environ.setdefault("SCRIPTED_TEST_KEY", "sk-scripted-test")

BUILDER = PromptBuilder()
DESCRIPTION = get_task(sc.TASK).description()
DISAGREES = {"verdict": "reject", "feedback": "1/6 samples failed.\n- relative error 4.2e-04 >> 1e-06 -- your "
             "computed Z disagrees with brute force."}
LADDER_WRONG = {"verdict": "reject", "feedback": "At n=100 (beyond the probe sizes) your Z_efficient is wrong."}


@pytest.fixture(scope="module")
def ray_cluster():
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    yield
    ray.shutdown()


def reply_to(prompt_text: str, seed: int = 0) -> str:
    """What the scripted model answers first to a user message (the first rule that matches)."""
    rule = next(r for r in sc.rules(seed) if r.matches(prompt_text, prompt_text))
    return rule.replies[0].text


def code_of(reply: str) -> str | None:
    try:
        return json.loads(reply)["code"]
    except ValueError:
        return None


def view(code: str, verdict: dict | None) -> ProgramView:
    return ProgramView("g0000s00", code, sc.CLASS, sc.COMPLEXITY, 0.8, verdict)


def evolve_prompt(parent=None, inspirations=()) -> str:
    return BUILDER.evolve(DESCRIPTION, parent, inspirations).messages[-1]["content"]


def test_the_scripted_model_fixes_only_what_it_is_shown_with_the_right_feedback():
    first = [code_of(reply_to(evolve_prompt(), seed)) for seed in range(6)]
    assert {sc.program_kind(c) for c in first} <= {"hybrid", "wrong formula", "no code"}, "no first attempt passes"
    assert [sc.program_kind(code_of(reply_to(BUILDER.paper_initial(DESCRIPTION).messages[-1]["content"], s)))
            for s in range(6)] == [sc.program_kind(c) for c in first], "refine's first prompt gets the same sample"
    assert sc.first_attempts(0) != sc.first_attempts(1)

    fixed = reply_to(evolve_prompt(view(sc.WRONG_CODE, DISAGREES)))
    assert sc.program_kind(code_of(fixed)) == "fixed formula"
    # without the verifier's words the wrong formula is not fixed (a first attempt comes instead)
    assert sc.program_kind(code_of(reply_to(evolve_prompt(view(sc.WRONG_CODE, None))))) != "fixed formula"
    assert sc.program_kind(code_of(reply_to(evolve_prompt(view(sc.FIXED_CODE, {"verdict": "accept"}))))) == "log space"
    assert code_of(reply_to(evolve_prompt(view(sc.LOG_CODE, {"verdict": "accept"})))) == sc.LOG_CODE
    # a hybrid parent gets a higher threshold, whatever the inspirations show
    nxt = code_of(reply_to(evolve_prompt(view(sc.hybrid_code(24), LADDER_WRONG), [view(sc.WRONG_CODE, DISAGREES)])))
    assert nxt == sc.hybrid_code(32)
    assert code_of(reply_to(evolve_prompt(view(sc.hybrid_code(96), LADDER_WRONG)))) == sc.hybrid_code(96)
    # the paper's feedback prompt: the previous response and the verifier's report
    prompt = BUILDER.paper_feedback(DESCRIPTION, sc.answer(sc.WRONG_CODE, "x"), DISAGREES["feedback"])
    assert sc.program_kind(code_of(reply_to(prompt.messages[-1]["content"]))) == "fixed formula"


def refine_record(tmp_path: Path, verdicts: list) -> Path:
    """A refine trace file of two trials whose rounds got ``verdicts`` (None: no code to judge)."""
    def round_(i, v):
        ok = v == "accept"
        verdict = None if v is None else {"verdict": v, "numerical": {"passed": ok, "largest_n_verified": 100 * ok}}
        return {"index": i, "accepted": ok, "candidate": {"code": sc.FIXED_CODE if ok else sc.WRONG_CODE},
                "verdict": verdict}

    rounds = [round_(i, v) for i, v in enumerate(verdicts)]
    path = tmp_path / "refine.json"
    path.write_text(json.dumps({"seed": 7, "trials": [{"rounds": rounds[:2]}, {"rounds": rounds[2:]}]}))
    return path


def test_refine_figures_are_read_from_the_trace_file(tmp_path):
    from evolve.strategy_bench import metrics_from_refine

    m = metrics_from_refine(refine_record(tmp_path, [None, "reject", "reject", "accept"]))
    assert (m.strategy, m.seed, m.calls, m.evaluations, m.accepted) == ("refine", 7, 4, 3, 1)
    assert (m.calls_to_first_accept, m.evaluations_to_first_accept, m.best_program) == (4, 3, "fixed formula")
    never = metrics_from_refine(refine_record(tmp_path, [None, "reject", "reject"]))
    assert never.calls_to_first_accept is None and never.best_program == "wrong formula"
    assert never.best_fitness < m.best_fitness


def test_islands_tree_and_refine_run_the_scenario_end_to_end(ray_cluster, tmp_path):
    from evolve.journal import read_journal
    from evolve.strategy_bench import BenchSetup, compare, format_table

    setup = BenchSetup(budget=4, batch_size=2, samples=1, evaluators=1)
    lines = []
    rows = compare([0], setup, tmp_path, log=lines.append)
    assert [r.strategy for r in rows] == ["islands", "tree", "refine"] and len(lines) == 3
    for row in rows:
        assert row.calls <= setup.budget and row.records.startswith(str(tmp_path))
        # seed 0's model first writes the wrong formula: fixed after the verifier's report, accepted
        assert row.calls_to_first_accept is not None and row.best_program in ("fixed formula", "log space")
    for row in rows[:2]:  # recount from the journal: the first accepted evaluation in program order
        records = read_journal(Path(row.records) / "journal.msgpack").records
        proposals = sorted((r["candidate"] for r in records if r["kind"] == "proposal"), key=lambda c: c["id"])
        verdicts = {r["id"]: r["verdict"]["verdict"] for r in records if r["kind"] == "evaluation"}
        first = next(i for i, c in enumerate(proposals, 1) if verdicts.get(c["id"]) == "accept")
        assert row.calls == len(proposals) == setup.budget and row.calls_to_first_accept == first
        assert sc.program_kind(proposals[first - 1]["code"]) == "fixed formula"
        assert all(p["proposer"] == "llm" and p["prompt"] for p in proposals)
    refine = json.loads(Path(rows[2].records).read_text())
    kinds = [sc.program_kind(r["candidate"].get("code")) for t in refine["trials"] for r in t["rounds"]]
    assert kinds[rows[2].calls_to_first_accept - 1] == "fixed formula"
    assert json.loads((tmp_path / "metrics.json").read_text())[2]["calls"] == rows[2].calls
    table = format_table(rows, setup.budget)
    assert "| refine | 0 |" in table and "| islands | 1/1 |" in table
