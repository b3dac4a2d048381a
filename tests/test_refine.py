"""The paper's propose-verify-revise loop (the engine with the refine strategy, one trial), driven
through litellm by the scripted server and judged by the real verifier."""

import json

import msgpack
import pytest

from conftest import FIXTURES
from doubles.scripted_server import Reply, Rule, ScriptedServer
from evaluators.verify import VerifyOptions
from evolve.bench.trial import RefineTrace, run_refine_trial
from evolve.config import Budgets
from evolve.engine.evaluator_worker import EvaluatorWorker
from evolve.engine.proposer_worker import ProposerWorker
from search.llm.config import LLMConfig, ModelSpec
from search.prompt_builder import PromptBuilder
from search.prompts import fill, load_templates
from search.proposers import ProposerContext
from search.proposers.llm import LLMOptions
from tasks.base import CLASS_LABELS
from tasks.registry import all_tasks, get_task

KEY_ENV = "STATMECH_TEST_LLM_KEY"
FAST = VerifyOptions(ladder=False, samples=2)
CLAIMS = {"tractable_class": "transfer_matrix", "complexity_O": "O(n)", "confidence": 0.9,
          "justification": "Bond variables b_i = s_i s_{i+1} are independent."}
CORRECT = json.dumps({**CLAIMS, "code": (FIXTURES / "p01_correct.py").read_text()})
WRONG = json.dumps({**CLAIMS, "confidence": 0.6, "code": (
    "import math\n\ndef Z_efficient(params, n):\n    return (2 * math.cosh(params['beta'] * params['J'])) ** n\n")})
INITIAL = "Here is the problem"
FEEDBACK = "The verifier reports"


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test")


def refine(task_id, server, rounds=5, variant="canonical", sandbox=None, evaluator=None, budgets=None,
           prompts="paper") -> RefineTrace:
    """One trial of the paper's loop with the LLM proposer on ``server`` and the real verifier."""
    spec = ModelSpec("openai/scripted", api_base=server.base_url, api_key_env=KEY_ENV,
                     input_cost_per_token=1e-6, output_cost_per_token=1e-6)
    llm = LLMConfig(models=(spec,), retries=1, backoff_base_s=0.0, request_timeout_s=10)
    proposer = ProposerWorker(task_id, {"llm": LLMOptions(weight=1.0)}, ProposerContext(variant=variant, llm=llm))
    evaluator = evaluator or EvaluatorWorker(task_id, FAST, sandbox=sandbox)
    return run_refine_trial(task_id, variant, rounds, proposer, evaluator, budgets=budgets, prompts=prompts)


class Evaluator:
    """A stand-in verifier."""

    def __init__(self, fn):
        self.evaluate = fn


def user_messages(server):
    return [r["body"]["messages"][-1]["content"] for r in server.requests]


def test_refine_solves_p01_after_a_wrong_first_attempt(sandbox):
    task = get_task("P01")
    with ScriptedServer([Rule(INITIAL, [WRONG]), Rule(FEEDBACK, [CORRECT])]) as srv:
        trace = refine("P01", srv, rounds=5, sandbox=sandbox)
    assert trace.stopped == "accepted" and trace.accepted and trace.accepted_round == 1
    r0, r1 = trace.rounds
    assert r0.prompt_kind == "paper_initial" and r1.prompt_kind == "paper_feedback"
    assert r0.verdict.verdict == "reject" and "samples failed" in r0.feedback
    assert r1.verdict.verdict == "accept" and r1.accepted
    assert r0.response == WRONG and r1.candidate["code"] == json.loads(CORRECT)["code"]
    assert r1.candidate["parent_ids"] == [r0.candidate["id"]]
    assert r0.tokens_in > 0 and r1.cost_usd > 0 and r0.seconds >= r0.verify_seconds > 0
    # the feedback prompt carries the raw previous response and the verifier's text verbatim
    expected = fill(load_templates()["feedback"], task_description=task.description("canonical"),
                    prev_json=WRONG, feedback=r0.feedback)
    assert user_messages(srv)[1] == expected
    system = [r["body"]["messages"][0] for r in srv.requests]
    assert system[0] == system[1] == {"role": "system", "content": PromptBuilder().system()}


def test_the_refine_loop_on_our_prompts_shows_the_interface_and_the_previous_round_as_parent(sandbox):
    """`evolve bench --prompts evolve`: round 0 a fresh draft, round 1 a mutation of round 0."""
    with ScriptedServer([Rule("--- parent program", [CORRECT]), Rule("Here is the problem", [WRONG])]) as srv:
        trace = refine("P01", srv, sandbox=sandbox, prompts="evolve")
    assert trace.stopped == "accepted" and trace.accepted_round == 1
    r0, r1 = trace.rounds
    assert (r0.prompt_kind, r1.prompt_kind) == ("evolve", "evolve")
    first, second = user_messages(srv)
    assert "the interface your program must meet" in first and "parent" not in first.lower()
    assert f"--- parent program ({r0.candidate['id']}) ---" in second
    assert "samples failed" in second and load_templates()["goal_mutation"] in second
    assert r1.prompt[0]["content"] == PromptBuilder().system_evolve() and r1.prompt[1]["content"] == second


def test_a_parse_failure_is_a_round_with_did_not_run_feedback(sandbox):
    with ScriptedServer([Rule(INITIAL, ["Sure! Z = 2 (2 cosh K)^(n-1). Hope that helps."]),
                         Rule(FEEDBACK, [CORRECT])]) as srv:
        trace = refine("P01", srv, sandbox=sandbox)
    r0 = trace.rounds[0]
    assert r0.verdict is None and r0.candidate["error_kind"] == "parse" and not r0.accepted
    assert r0.feedback == f"Your code did not run. Error: {r0.parse_error}"
    assert r0.feedback in user_messages(srv)[1]
    assert "Sure! Z = 2 (2 cosh K)^(n-1)." in user_messages(srv)[1]
    assert trace.accepted_round == 1


def test_rounds_are_limited_and_every_round_is_recorded(sandbox):
    with ScriptedServer([Rule(".", [WRONG], repeat_last=True)]) as srv:
        trace = refine("P01", srv, variant="paraphrased", rounds=3, sandbox=sandbox)
    assert trace.stopped == "rounds exhausted" and not trace.accepted and trace.accepted_round is None
    assert [r.index for r in trace.rounds] == [0, 1, 2] and len(srv.requests) == 3
    assert get_task("P01").description("paraphrased") in user_messages(srv)[0]
    d = msgpack.unpackb(msgpack.packb(trace.to_dict()))
    assert d["tokens"] == sum(r.tokens_in + r.tokens_out for r in trace.rounds) > 0 and d["accepted_round"] is None
    assert RefineTrace.from_dict(d).rounds == trace.rounds


def test_budget_exhaustion_ends_the_trial(sandbox):
    budgets = Budgets(proposals=5, evaluations=5, tokens=1_000, stop_when_accepted=True)
    with ScriptedServer([Rule(".", [Reply(WRONG, completion_tokens=5_000)], repeat_last=True)]) as srv:
        trace = refine("P01", srv, sandbox=sandbox, budgets=budgets)
    assert len(trace.rounds) == 1 and trace.stopped.startswith("budget exhausted: token budget")
    assert len(srv.requests) == 1


def test_dollar_budget_ends_the_trial_after_the_request_that_crossed_it(sandbox):
    budgets = Budgets(proposals=5, evaluations=5, usd=0.01, stop_when_accepted=True)
    with ScriptedServer([Rule(".", [Reply(WRONG, prompt_tokens=20_000)], repeat_last=True)]) as srv:
        trace = refine("P01", srv, sandbox=sandbox, budgets=budgets)   # $0.02 for the first request
    assert trace.stopped.startswith("budget exhausted: USD budget") and len(srv.requests) == 1
    assert trace.rounds[0].cost_usd == pytest.approx(0.02 + 1e-6 * trace.rounds[0].tokens_out)


def test_provider_failure_ends_the_trial_with_a_record():
    with ScriptedServer([Rule(".", [Reply(status=401)])]) as srv:
        trace = refine("P01", srv, evaluator=Evaluator(lambda c: pytest.fail("nothing to verify")))
    assert trace.stopped.startswith("api error: ") and len(trace.rounds) == 1
    assert trace.rounds[0].candidate["error_kind"] == "api" and trace.rounds[0].verdict is None
    assert len(srv.requests) == 1, "an authentication failure is not retried, and the trial ends"


def test_a_verifier_exception_is_recorded_not_raised():
    def boom(candidate):
        raise RuntimeError("verifier bug")

    with ScriptedServer([Rule(".", [CORRECT])]) as srv:
        trace = refine("P01", srv, evaluator=Evaluator(boom))
    assert trace.stopped == "verifier error: RuntimeError: verifier bug" and len(trace.rounds) == 1


@pytest.mark.parametrize("variant", ["canonical", "paraphrased"])
def test_paper_prompts_are_the_templates_and_never_carry_the_answer(variant):
    b = PromptBuilder()
    system = b.system()
    assert "{LIBRARY}" not in system and all(f'"{lab}"' in system for lab in CLASS_LABELS)
    for task in all_tasks():
        p = b.paper_initial(task.description(variant))
        user = p.messages[1]["content"]
        assert user == fill(load_templates()["initial"], task_description=task.description(variant))
        assert task.gold.tractable_class not in user and task.gold.complexity not in user
        assert p.prompt_id.startswith("system@") and "initial@" in p.prompt_id
