"""LLMs speak derivations (``prompts.output_format: chain``), through litellm against the scripted
OpenAI-compatible server: the prompt lists only what the structure analysis admits (and never reads the
gold answer), a right chain for T12 becomes an accepted program with class gauge carrying its checked
chain, a refused step is named with its precondition or its check, malformed chain JSON is a parse
failure with a clear reason, a mutation shows the parent's chain, and `evolve replay` reads the chain
answers again."""

import copy
import re
from types import SimpleNamespace

import pytest

from doubles.bad_gauge import install_bad_gauge
from doubles.local_run import local_run
from doubles.scripted_server import Reply, Rule, ScriptedServer
from evolve.analysis.rejudge import rejudge_run
from evolve.cli import main
from evolve.store.journal import read_journal
from search.derivation.actions import ACTIONS
from search.derivation.admission import admission
from search.derivation.context import root_view
from search.derivation.engine import derive_plan
from search.derivation.record import Plan
from search.llm.config import LLMConfig, ModelSpec
from search.prompt_builder import PromptBuilder, PromptConfig
from search.proposers import ProposerContext
from search.proposers.llm import LLM, LLMOptions
from search.records import ProposalRequest
from tasks.registry import get_task

KEY_ENV = "STATMECH_CHAIN_TEST_KEY"
T12_CHAIN = '```json\n{"derivation": [{"action": "gauge"}], "solver": "kaufman", ' \
            '"justification": "Mattis couplings: the gauge s_i -> xi_i s_i leaves the ferromagnetic torus."}\n```'


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-chain-test-0001")


def llm_config(server) -> dict:
    return {"retries": 0, "request_timeout_s": 60, "preflight": False,
            "models": [{"name": "openai/chain-model", "api_base": server.base_url, "api_key_env": KEY_ENV,
                        "input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}]}


@pytest.fixture
def ask():
    """ask(task, server) -> the LLM proposer with the chain format on ``server``, closed afterwards."""
    made = []

    def make(task, server):
        cfg = llm_config(server)
        llm = LLMConfig(models=tuple(ModelSpec(**m) for m in cfg["models"]), retries=0, request_timeout_s=60)
        proposer = LLM(task, LLMOptions(weight=1.0),
                       ProposerContext(seed=0, llm=llm, prompts=PromptConfig(output_format="chain")))
        made.append(proposer)
        return proposer

    yield make
    for proposer in made:
        proposer.close()


def request(cid="c1") -> ProposalRequest:
    return ProposalRequest(id=cid, generation=0, slot=0, proposer="llm")


def listed(section: str, prompt: str) -> dict:
    """name -> 'applies ...' of the actions (or solvers) a prompt lists."""
    block = prompt.split(section, 1)[1].split("\n\n", 1)[0]
    block = block.split("Solvers that apply")[0] if section.startswith("Actions") else block
    return {m.group(1): m.group(2) for m in re.finditer(r"^- (\w+): .*; (applies [^\n]*)$", block, re.M)}


# -- a run: a right chain is accepted with class gauge; a mutation shows the parent's chain ---------------------

@pytest.fixture(scope="module")
def t12_run(tmp_path_factory, sandbox):
    """T12, two generations of one slot (the tree without fresh drafts: the second rewrites the first):
    the model answers the right chain, then a chain whose first step does not apply."""
    rules = [Rule("--- parent derivation", ['{"derivation": [{"action": "nishimori"}], "solver": "kaufman"}']),
             Rule("Here is the problem", [Reply(T12_CHAIN, prompt_tokens=900, completion_tokens=60)])]
    with ScriptedServer(rules) as srv, pytest.MonkeyPatch.context() as mp:
        mp.setenv(KEY_ENV, "sk-chain-test-0001")
        raw = {"task": "T12", "seed": 0, "strategy": "tree",
               "budgets": {"proposals": 2, "evaluations": 2, "wall_time_s": 900},
               "evaluator": {"samples": 1},                       # the full cascade: ladder, complexity, class, physics
               "proposers": {"structural": 0.0, "llm": 1.0}, "strategies": {"tree": {"fresh_drafts": False}},
               "ray": {"batch_size": 1}, "prompts": {"output_format": "chain"}, "llm": llm_config(srv)}
        run = local_run(raw, tmp_path_factory.mktemp("chain-run"), sandbox)
        prompts = [r["body"]["messages"][-1]["content"] for r in srv.requests]
    records = read_journal(run.path / "journal.msgpack").records
    return SimpleNamespace(path=run.path, prompts=prompts, records=records,
                           proposals=[r["candidate"] for r in records if r["kind"] == "proposal"],
                           evaluations={r["id"]: r for r in records if r["kind"] == "evaluation"})


def test_a_right_chain_for_t12_is_checked_rendered_and_accepted_with_class_gauge(t12_run):
    first = t12_run.proposals[0]
    assert first["proposer"] == "llm" and first["model"] == "openai/chain-model" and first["parse_error"] is None
    assert first["response_format"] == "derivation_json" and first["response"] == T12_CHAIN
    assert (first["tractable_class"], first["complexity_O"]) == ("gauge", "O(n)")
    assert [s["action"] for s in first["derivation"]] == ["read_formula", "gauge", "solve"]
    assert all(s["check"]["passed"] is True for s in first["derivation"][:2])
    assert first["prompt_meta"]["chain"] == "read_formula -> gauge -> kaufman"
    assert first["prompt_meta"]["format"] == "chain"
    assert (first["tokens_in"], first["tokens_out"]) == (900, 60)
    assert first["cost_usd"] == pytest.approx(900e-6 + 120e-6)
    assert "def log_Z(params, n):" in first["code"] and "_act_gauge(state" in first["code"]
    verdict = t12_run.evaluations[first["id"]]["verdict"]
    assert verdict["verdict"] == "accept", verdict["feedback"]
    assert verdict["class"]["consistent"] is True and verdict["numerical"]["largest_n_verified"] == max(get_task("T12").ladder_sizes)
    assert "Derivation the program was rendered from: step 0 read_formula: checked; step 1 gauge: checked" in \
        verdict["feedback"]


def test_the_mutation_prompt_shows_the_parents_chain_and_a_refused_step_is_named(t12_run):
    fresh, mutation = t12_run.prompts
    assert "--- parent" not in fresh
    first = t12_run.proposals[0]
    assert f"--- parent derivation ({first['id']}) ---" in mutation
    assert '{"derivation": [{"action": "gauge"}], "solver": "kaufman", "solver_options": {}}' in mutation
    assert "- step 1 gauge" in mutation and "check passed on 6 instances" in mutation
    assert "```python" not in mutation                      # the chain, not the rendered program
    second = t12_run.proposals[1]
    assert second["parent_ids"] == [first["id"]] and second["code"] is None and second["error_kind"] == "parse"
    assert second["parse_error"].startswith("the derivation was refused: step 1 (nishimori) does not apply:")
    assert [s["action"] for s in second["derivation"]] == ["read_formula"]     # what was checked before it
    assert second["id"] not in t12_run.evaluations


def test_lineage_and_show_print_the_chain_a_model_proposed(t12_run, capsys):
    assert main(["lineage", str(t12_run.path)]) == 0
    out = capsys.readouterr().out
    assert "llm / openai/chain-model" in out
    assert "derivation: read_formula -> gauge -> kaufman (2 of 2 steps checked" in out
    assert re.search(r"step 1 gauge \(tau=.*\): check passed on 6 instances", out)
    assert main(["show", str(t12_run.path)]) == 0
    assert "read_formula -> gauge -> kaufman (2 of 2 steps checked; claims gauge, O(n))" in capsys.readouterr().out


def test_replay_reads_the_chain_answers_again(t12_run, sandbox):
    report = rejudge_run(t12_run.path)
    outcomes = [(p.before, p.after) for p in report.proposals]
    assert outcomes == [("accept", "accept"), ("no code", "no code")] and not report.changed
    assert "step 1 (nishimori) does not apply" in report.proposals[1].failure_after


# -- refusals and parse failures, one proposal each ----------------------------------------------------------

def test_a_step_whose_precondition_fails_is_refused_naming_the_step(ask):
    """P06's +-J couplings are frustrated: no gauge makes them ferromagnetic, and the refusal says so."""
    answers = ['{"derivation": [{"action": "gauge"}], "solver": "kaufman"}']
    with ScriptedServer([Rule("Here is the problem", answers)]) as srv:
        cand = ask(get_task("P06"), srv).propose(request())
        prompt = srv.requests[0]["body"]["messages"][-1]["content"]
    assert not cand.ok and cand.error_kind == "parse" and cand.response_format == "derivation_json"
    assert re.match(r"the derivation was refused: step 1 \(gauge\) does not apply: the signs are frustrated: "
                    r"at n = \d+ the cycle \[[\d, ]+\] carries an odd number of negative couplings", cand.parse_error)
    assert [s["action"] for s in cand.derivation] == ["read_formula"] and cand.derivation[0]["check"]["passed"]
    assert any(n.startswith("failed step gauge: not checked (not applied: the signs are frustrated")
               for n in cand.notes)
    assert "gauge" not in listed("Actions the structure analysis admits", prompt)     # it was never offered


def test_a_later_step_that_does_not_apply_is_named_by_its_number(ask):
    answers = ['{"derivation": [{"action": "gauge"}, {"action": "gauge"}], "solver": "kaufman"}',
               '{"derivation": [{"action": "gauge"}], "solver": "magnetisation"}']
    with ScriptedServer([Rule("Here is the problem", answers)]) as srv:
        proposer = ask(get_task("T12"), srv)
        twice, wrong_solver = proposer.propose(request("a")), proposer.propose(request("b"))
    assert twice.parse_error.startswith("the derivation was refused: step 2 (gauge) does not apply: "
                                        "every coupling is already ferromagnetic")
    assert [s["action"] for s in twice.derivation] == ["read_formula", "gauge"]
    assert wrong_solver.parse_error.startswith("the derivation was refused: the solver 'magnetisation' does not "
                                               "apply after step 1:")


def test_a_step_that_fails_its_check_is_refused_with_the_check(ask, monkeypatch):
    """A gauge whose runtime flips one coupling changes Z: the engine's check catches it before any solver."""
    install_bad_gauge(monkeypatch)
    with ScriptedServer([Rule("Here is the problem", [T12_CHAIN])]) as srv:
        cand = ask(get_task("T12"), srv).propose(request())
    assert not cand.ok
    assert re.match(r"the derivation was refused: step 1 \(gauge\) failed its check: FAILED on 6 instances "
                    r"\(in-process [\d.e+-]+\): before and after differ by [\d.e+-]+ \(relative\)", cand.parse_error)


@pytest.mark.parametrize("answer, reason", [
    ('{"derivation": [{"action": "gauge"}', "the answer holds no JSON object (Expecting"),
    ("I would gauge the model and use Kaufman's formula.", "the answer holds no JSON object"),
    ('{"tractable_class": "gauge", "code": "def Z_efficient(params, n):\\n    return 1.0"}',
     '"derivation" must be a list of {"action": ..., "options": {...}} objects'),
    ('{"derivation": [{"action": "gauge"}, {"action": "fourier"}], "solver": "kaufman"}',
     "step 2: unknown action 'fourier'; the actions are nishimori, dual_rbim, dual_layers, face_dual, cycle_dual, "
     "gauge"),
    ('{"derivation": [{"action": "decoration", "options": {"repeat": 3}}], "solver": "chain"}',
     "step 1 (decoration): option repeat must be one of"),
    ('{"derivation": [{"action": "gauge"}], "solver": "bethe_ansatz"}', "unknown solver 'bethe_ansatz'"),
])
def test_malformed_chain_json_is_a_parse_failure_with_a_clear_reason(ask, answer, reason):
    with ScriptedServer([Rule("Here is the problem", [Reply(answer, prompt_tokens=10, completion_tokens=5)])]) as srv:
        cand = ask(get_task("T12"), srv).propose(request())
    assert not cand.ok and cand.error_kind == "parse" and cand.derivation == []
    assert cand.parse_error.startswith("the derivation answer is malformed: ") and reason in cand.parse_error
    assert "\n" not in cand.parse_error and cand.response == answer and cand.tokens_out == 5


# -- the prompt ------------------------------------------------------------------------------------------------

class Trap:
    def __getattr__(self, name):
        raise AssertionError("the gold answer was read")


@pytest.mark.parametrize("task_id", ["T12", "T19", "P06"])
def test_the_prompt_lists_only_what_the_structure_analysis_admits_and_never_reads_gold(ask, task_id):
    task = copy.copy(get_task(task_id))
    task.gold = Trap()
    with ScriptedServer([]) as srv:
        user = ask(task, srv).prompt(request()).messages[1]["content"]
    assert '{"derivation": [{"action": NAME, "options": {...}}, ...], "solver": NAME' in user
    actions = listed("Actions the structure analysis admits", user)
    found = admission(task)
    assert set(actions) == set(found.actions)
    view = root_view(task)
    for name, where in actions.items():          # "as read" exactly when the root analysis admits it
        assert (where == "applies to the formula as read") == (ACTIONS[name].admits(view) is None)
    for name in set(ACTIONS) - set(actions):      # what is left out is not admitted on the formula as read
        assert ACTIONS[name].admits(view) is not None
    solvers = listed("Solvers that apply", user)
    assert "enumeration" in solvers and set(solvers) == set(found.solvers)
    expected = {"T12": ({"gauge": "applies to the formula as read"}, ("kaufman", "applies after gauge")),
                "T19": ({"nishimori": "applies to the formula as read", "free_terms": "applies after nishimori"},
                        ("product", "applies after nishimori -> free_terms")),
                "P06": (None, None)}[task_id]
    if expected[0] is not None:
        assert actions == expected[0] and solvers[expected[1][0]] == expected[1][1]
    else:
        assert "gauge" not in actions and "kaufman" not in solvers


def test_a_chain_the_prompt_offers_after_an_earlier_step_does_apply_there(sandbox):
    """T19: free_terms is not admitted on the formula as read, but after nishimori, as the prompt says;
    the chain the prompt spells out checks and renders."""
    task = get_task("T19")
    assert ACTIONS["free_terms"].admits(root_view(task)) is not None
    d = derive_plan(task, Plan((("nishimori", {}), ("free_terms", {})), "product", {}, (), "", "", ()), sandbox=sandbox)
    assert d.program is not None and d.chain == "read_formula -> nishimori -> free_terms -> product"
    assert d.tractable_class == "rbim_nishimori"


def test_the_chain_format_needs_its_block():
    with pytest.raises(ValueError, match="chain output format needs the derivation block"):
        PromptBuilder(PromptConfig(output_format="chain")).evolve("a task")
    with pytest.raises(ValueError, match="output_format must be one of"):
        PromptConfig(output_format="chains")
