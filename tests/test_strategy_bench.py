"""The strategy comparison on the scripted model whose first answers are wrong: the model's
rules (which prompt gets which answer), the figures read back from run records, and the three
strategies end to end against the scripted server through litellm and Ray."""

import json
import os
from pathlib import Path

import pytest

from doubles import scripted_scenario as sc
from evaluators.verdict import Verdict
from search.prompt_builder import ProgramView, PromptBuilder
from tasks.registry import get_task

ray = pytest.importorskip("ray")

# Ray workers inherit the environment at ray.init: the scripted provider's key must be set before.
os.environ.setdefault("SCRIPTED_TEST_KEY", "sk-scripted-test")

BUILDER = PromptBuilder()
DESCRIPTION = get_task(sc.TASK).description()
DISAGREES = Verdict(task=sc.TASK, verdict="reject", feedback="1/6 samples failed.\n- relative error 4.2e-04 >> 1e-06 "
                    "-- your computed Z disagrees with brute force.")
LADDER_WRONG = Verdict(task=sc.TASK, verdict="reject",
                       feedback="At n=100 (beyond the probe sizes) your Z_efficient is wrong.")
ACCEPTED = Verdict(task=sc.TASK, verdict="accept")


@pytest.fixture(scope="module")
def ray_cluster(ray_session):
    """The session's Ray (tests/conftest.py): one ray.init per worker, not one per file."""


def reply_to(prompt_text: str, seed: int = 0) -> str:
    """What the scripted model answers first to a user message (the first rule that matches)."""
    rule = next(r for r in sc.rules(seed) if r.matches(prompt_text, prompt_text))
    return rule.replies[0].text


def code_of(reply: str) -> str | None:
    try:
        return json.loads(reply)["code"]
    except ValueError:
        return None


def view(code: str, verdict: Verdict | None) -> ProgramView:
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
    assert sc.program_kind(code_of(reply_to(evolve_prompt(view(sc.FIXED_CODE, ACCEPTED))))) == "log space"
    assert code_of(reply_to(evolve_prompt(view(sc.LOG_CODE, ACCEPTED)))) == sc.LOG_CODE
    # a hybrid parent gets a higher threshold, whatever the inspirations show
    nxt = code_of(reply_to(evolve_prompt(view(sc.hybrid_code(24), LADDER_WRONG), [view(sc.WRONG_CODE, DISAGREES)])))
    assert nxt == sc.hybrid_code(32)
    assert code_of(reply_to(evolve_prompt(view(sc.hybrid_code(96), LADDER_WRONG)))) == sc.hybrid_code(96)
    # the paper's feedback prompt: the previous response and the verifier's report
    prompt = BUILDER.paper_feedback(DESCRIPTION, sc.answer(sc.WRONG_CODE, "x"), DISAGREES.feedback)
    assert sc.program_kind(code_of(reply_to(prompt.messages[-1]["content"]))) == "fixed formula"


def test_islands_tree_and_refine_run_the_scenario_end_to_end(ray_cluster, tmp_path):
    from benchmarks.strategies import BenchSetup, compare, format_table
    from evolve.store.events import EvaluationEvent, ProposalEvent, decode
    from evolve.store.journal import read_journal

    setup = BenchSetup(budget=4, batch_size=2, samples=1, evaluators=1)
    lines = []
    rows = compare([0], setup, tmp_path, log=lines.append)
    assert [r.strategy for r in rows] == ["islands", "tree", "refine"] and len(lines) == 3
    for row in rows:
        assert row.calls <= setup.budget and row.records.startswith(str(tmp_path))
        # seed 0's model first writes the wrong formula: fixed after the verifier's report, accepted
        assert row.calls_to_first_accept is not None and row.best_program in ("fixed formula", "log space")
        # recount from the journal: the first accepted evaluation in program order
        events = [decode(r) for r in read_journal(Path(row.records) / "journal.msgpack").records]
        proposals = sorted((e.candidate for e in events if isinstance(e, ProposalEvent)), key=lambda c: c.id)
        verdicts = {e.evaluation.id: e.evaluation.verdict.verdict for e in events if isinstance(e, EvaluationEvent)}
        first = next(i for i, c in enumerate(proposals, 1) if verdicts.get(c.id) == "accept")
        assert row.calls == len(proposals) and row.calls_to_first_accept == first
        assert sc.program_kind(proposals[first - 1].code) == "fixed formula"
        assert all(p.proposer == "llm" and p.prompt for p in proposals)
    assert rows[0].calls == rows[1].calls == setup.budget
    # refine stops at its first accepted program: wrong formula, then fixed after the paper's feedback prompt
    assert rows[2].calls == rows[2].calls_to_first_accept == 2
    assert json.loads((tmp_path / "metrics.json").read_text())[2]["calls"] == rows[2].calls
    table = format_table(rows, setup.budget)
    assert "| refine | 0 |" in table and "| islands | 1/1 |" in table
