"""The LLM client end to end through litellm against the scripted server: answers, failures,
retries, timeouts, cost, weighted model choice and the bandit's arithmetic (the bandit in runs:
tests/test_llm_runs.py; token and dollar budgets are the engine's: tests/test_refine.py)."""

import json

import numpy as np
import pytest

from conftest import FIXTURES
from search.candidate import Candidate
from search.llm.config import LLMConfig, ModelSpec
from search.llm.client import LLMClient
from search.llm.bandit import ModelBandit, improvement_reward
from search.prompt_builder import PromptBuilder
from doubles.scripted_server import Reply, Rule, ScriptedServer
from tasks.registry import get_task

KEY_ENV = "STATMECH_TEST_LLM_KEY"
CODE = (FIXTURES / "p01_correct.py").read_text()
GOOD = json.dumps({"tractable_class": "transfer_matrix", "complexity_O": "O(n)", "confidence": 0.9,
                   "justification": "Independent bonds.", "code": CODE})
PROMPT = PromptBuilder().paper_initial(get_task("P01").description())


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test")
    return "sk-test"


def proposer(server, *, retries=2, timeout=5.0, sleeps=None, **spec):
    spec = {"name": "openai/scripted-a", "api_base": server.base_url, "api_key_env": KEY_ENV,
            "input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, **spec}
    cfg = LLMConfig(models=(ModelSpec(**spec),), retries=retries, backoff_base_s=0.5, request_timeout_s=timeout)
    return LLMClient(cfg, sleep=(sleeps.append if sleeps is not None else (lambda s: None)))


def test_a_correct_answer_becomes_a_candidate_with_usage_cost_and_provenance(key):
    with ScriptedServer([Rule("Here is the problem", [Reply(GOOD, prompt_tokens=1000, completion_tokens=200)])]) as srv:
        c = proposer(srv, temperature=0.2).propose("P01", PROMPT)
    assert c.ok and c.code == CODE and c.tractable_class == "transfer_matrix" and c.confidence == 0.9
    assert (c.tokens_in, c.tokens_out) == (1000, 200)
    assert c.cost_usd == pytest.approx(1000 * 1e-6 + 200 * 2e-6)
    assert c.model == "openai/scripted-a" and c.proposer == "llm" and c.response == GOOD
    assert c.prompt_id == PROMPT.prompt_id and c.prompt_meta["kind"] == "paper_initial"
    req = srv.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["authorization"] == f"Bearer {key}"
    assert req["body"]["model"] == "scripted-a" and req["body"]["messages"] == PROMPT.messages
    assert req["body"]["temperature"] == 0.2 and "reasoning_effort" not in req["body"]


def test_reasoning_effort_is_sent_only_when_set(key):
    with ScriptedServer([Rule(".", [GOOD], repeat_last=True)]) as srv:
        proposer(srv, reasoning_effort="high").propose("P01", PROMPT)
        proposer(srv).propose("P01", PROMPT)
    assert srv.requests[0]["body"]["reasoning_effort"] == "high"
    assert "reasoning_effort" not in srv.requests[1]["body"] and "temperature" not in srv.requests[1]["body"]


def test_malformed_json_is_a_failed_candidate_that_still_costs(key):
    with ScriptedServer([Rule(".", ['{"tractable_class": "gauge", "code": "def Z_efficient(p, n): return 1",'])]) as srv:
        c = proposer(srv).propose("P01", PROMPT)
    assert not c.ok and c.error_kind == "parse" and "not valid JSON" in c.parse_error
    assert c.tokens_in > 0 and c.tokens_out > 0 and c.cost_usd == pytest.approx(1e-6 * c.tokens_in + 2e-6 * c.tokens_out)
    assert Candidate.from_dict(c.to_dict()) == c


def test_a_diff_that_does_not_apply_is_a_diff_failure_naming_the_block(key):
    parent = Candidate(id="par", task="P01", code=CODE, tractable_class="transfer_matrix")
    bad = "<<<<<<< SEARCH\ndef Z_efficient(params, N):\n=======\ndef Z_efficient(params, n):\n>>>>>>> REPLACE"
    good = "<<<<<<< SEARCH\nimport math\n=======\nimport math\nimport numpy as np\n>>>>>>> REPLACE"
    with ScriptedServer([Rule(".", [bad, good])]) as srv:
        p = proposer(srv)
        c1 = p.propose("P01", PROMPT, parent=parent)
        c2 = p.propose("P01", PROMPT, parent=parent)
    assert c1.error_kind == "diff" and "Diff block 1" in c1.parse_error
    assert "def Z_efficient(params, n):" in c1.parse_error  # the nearest passage is quoted
    assert c1.parent_ids == ["par"]
    assert c2.ok and c2.response_format == "diff" and "import numpy as np" in c2.code
    assert c2.tractable_class == "transfer_matrix"  # inherited


def test_rate_limit_then_success_is_retried_with_backoff(key):
    sleeps = []
    with ScriptedServer([Rule(".", [Reply(status=429), Reply(status=500), Reply(status=503), GOOD])]) as srv:
        c = proposer(srv, retries=3, sleeps=sleeps).propose("P01", PROMPT)
    assert c.ok and len(srv.requests) == 4
    assert sleeps == [0.5, 1.0, 2.0]
    assert any("RateLimitError" in n for n in c.notes) and "attempts: 4" in c.notes


def test_retry_after_header_is_respected(key):
    sleeps = []
    with ScriptedServer([Rule(".", [Reply(status=429, headers={"Retry-After": "7"}), GOOD])]) as srv:
        assert proposer(srv, sleeps=sleeps).propose("P01", PROMPT).ok
    assert sleeps == [7.0]


def test_a_timeout_is_retried_and_persistent_timeouts_give_an_api_failure(key):
    slow = Reply(GOOD, delay_s=1.0)
    with ScriptedServer([Rule(".", [slow, GOOD, slow, slow])]) as srv:
        p = proposer(srv, timeout=0.3, retries=1)
        c = p.propose("P01", PROMPT)
        assert c.ok and "attempts: 2" in c.notes and any("Timeout" in n for n in c.notes)
        f = p.propose("P01", PROMPT)
    assert not f.ok and f.error_kind == "api" and "gave up after 2 attempt(s)" in f.parse_error
    assert "api error kind: retries_exhausted" in f.notes
    assert len(srv.requests) == 4


def test_auth_and_bad_request_errors_are_not_retried(key):
    with ScriptedServer([Rule(".", [Reply(status=401), Reply(status=400)])]) as srv:
        p = proposer(srv, retries=3)
        a = p.propose("P01", PROMPT)
        b = p.propose("P01", PROMPT)
    assert len(srv.requests) == 2
    assert a.error_kind == "api" and "api error kind: auth" in a.notes
    assert "api error kind: bad_request" in b.notes


def test_unknown_model_without_prices_costs_zero_with_a_note(key):
    with ScriptedServer([Rule(".", [GOOD])]) as srv:
        c = proposer(srv, input_cost_per_token=None, output_cost_per_token=None).propose("P01", PROMPT)
    assert c.ok and c.cost_usd == 0.0 and any("cost unknown" in n for n in c.notes)


def test_weighted_model_choice_is_seeded_and_respects_zero_weight():
    cfg = LLMConfig(models=(ModelSpec("openai/a", weight=3.0), ModelSpec("openai/b", weight=1.0),
                            ModelSpec("openai/c", weight=0.0)))
    p = LLMClient(cfg, seed=5)
    seq = [p.choose_model().name for _ in range(400)]
    assert seq[:20] == [LLMClient(cfg, seed=5).choose_model().name] + seq[1:20]  # same seed, same draws
    assert "openai/c" not in seq and 0.65 < seq.count("openai/a") / 400 < 0.85
    q = LLMClient(cfg, seed=5)
    state = None
    for i in range(400):
        if i == 200:
            state = json.loads(json.dumps(q.state_dict()))
        q.choose_model()
    r = LLMClient(cfg, seed=99)
    r.load_state_dict(state)
    assert [r.choose_model().name for _ in range(200)] == seq[200:]


def test_bandit_prefers_the_model_with_better_reward_per_cost():
    rng = np.random.default_rng(0)

    def run(reward, cost, steps=300):
        b = ModelBandit(["cheap", "pricey"], exploration=0.5)
        picks = []
        for _ in range(steps):
            arm = b.select(rng)
            picks.append(arm)
            b.update(arm, reward[arm], cost[arm])
        return b, picks

    b, picks = run({"cheap": 1.0, "pricey": 1.0}, {"cheap": 0.01, "pricey": 0.10})
    assert picks[-100:].count("cheap") > 80  # same reward, ten times cheaper
    _, picks = run({"cheap": 0.1, "pricey": 1.0}, {"cheap": 0.01, "pricey": 0.01})
    assert picks[-100:].count("pricey") > 80  # same cost, ten times the reward
    clone = ModelBandit.from_dict(json.loads(json.dumps(b.to_dict())))
    assert clone.scores() == b.scores()
    assert [clone.select(np.random.default_rng(1)) for _ in range(5)] == [b.select(np.random.default_rng(1)) for _ in range(5)]


def test_bandit_reward_and_batches_spread_over_untried_arms():
    assert improvement_reward(0.8, 0.5, 0.6) == pytest.approx(0.2)
    assert improvement_reward(0.4, 0.5, 0.0) == 0.0 and improvement_reward(None, 0.5) == 0.0
    assert improvement_reward(0.7, None, 0.2) == pytest.approx(0.5)
    b = ModelBandit(["openai/a", "openai/b", "openai/c"])
    b.update("openai/a", 5.0, 0.001)
    rngs = [np.random.default_rng(k) for k in range(3)]
    assert sorted(b.select_batch(rngs)[:2]) == ["openai/b", "openai/c"]  # untried arms first, one slot each
    assert b.arms["openai/b"].pulls == 0  # a batch choice does not change the bandit
    for _ in range(30):
        b.update("openai/a", 0.0, 0.01)
        b.update("openai/b", 1.0, 0.01)
        b.update("openai/c", 0.0, 0.01)
    picks = b.select_batch([np.random.default_rng(k) for k in range(10)])
    assert picks.count("openai/b") >= 6 and set(picks) <= {"openai/a", "openai/b", "openai/c"}


def test_config_from_dict_refuses_keys_and_unknown_fields():
    cfg = LLMConfig.from_dict({"models": [{"name": "openai/a", "api_key_env": "X"}, "openai/b"], "retries": 1})
    assert cfg.models[1].name == "openai/b" and cfg.key_env_names() == ["X"]
    assert LLMConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="environment variable"):
        LLMConfig.from_dict({"models": [{"name": "openai/a", "api_key": "sk-123"}]})
    with pytest.raises(ValueError, match="unknown field"):
        LLMConfig.from_dict({"models": ["openai/a"], "temprature": 1})
    with pytest.raises(ValueError, match="selection"):
        LLMConfig(models=(ModelSpec("openai/a"),), selection="random")
