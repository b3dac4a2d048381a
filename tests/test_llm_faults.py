"""Provider faults through litellm against the scripted server (and a closed port): what is
retried, what is not, what the failed proposal says, and the preflight call that finds a model
that cannot answer before a run spends anything. (429 with Retry-After, timeouts, malformed JSON
answers and diffs that do not apply: tests/test_llm_proposer.py.)"""

import json
import socket
import time

import pytest

from conftest import FIXTURES
from doubles.scripted_server import PREFLIGHT_RULE, Reply, Rule, ScriptedServer
from search.llm.client import LLMClient, api_error_kind
from search.llm.config import LLMConfig, ModelSpec
from search.llm.preflight import PING, preflight
from search.prompt_builder import PromptBuilder
from tasks.registry import get_task

KEY_ENV = "STATMECH_FAULTS_TEST_KEY"
GOOD = json.dumps({"tractable_class": "transfer_matrix", "complexity_O": "O(n)", "confidence": 0.9,
                   "justification": "Independent bonds.", "code": (FIXTURES / "p01_correct.py").read_text()})
PROMPT = PromptBuilder().paper_initial(get_task("P01").description())


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-right-key-0001")


def config(api_base, retries=2, timeout=5.0, **spec) -> LLMConfig:
    spec = {"name": "openai/scripted", "api_base": api_base, "api_key_env": KEY_ENV, **spec}
    return LLMConfig(models=(ModelSpec(**spec),), retries=retries, backoff_base_s=0.0, request_timeout_s=timeout)


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_a_wrong_key_is_an_auth_failure_that_is_not_retried(key):
    with ScriptedServer([Rule(".", [GOOD], repeat_last=True)], api_key="sk-another-key") as srv:
        c = LLMClient(config(srv.base_url, retries=3)).propose("P01", PROMPT)
        checks = preflight(config(srv.base_url, retries=3))
    assert not c.ok and api_error_kind(c) == "auth" and "AuthenticationError" in c.parse_error
    assert [r["rule"] for r in srv.requests] == ["auth", "auth"]   # one request each: nothing retried
    assert not checks[0].ok and checks[0].error_kind == "auth"
    assert "sk-right-key-0001" not in c.parse_error + str(checks[0].error)


def test_a_missing_key_variable_fails_at_once_without_a_request(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with ScriptedServer([Rule(".", [GOOD], repeat_last=True)]) as srv:
        t0 = time.perf_counter()
        c = LLMClient(config(srv.base_url, retries=3)).propose("P01", PROMPT)
        checks = preflight(config(srv.base_url))
        elapsed = time.perf_counter() - t0
    assert srv.requests == [] and elapsed < 1.0
    assert api_error_kind(c) == "auth" and f"{KEY_ENV} (api_key_env) is not set" in c.parse_error
    assert not checks[0].ok and KEY_ENV in checks[0].error
    assert config("http://127.0.0.1:1/v1").unset_key_envs({}) == [f"openai/scripted: {KEY_ENV}"]


def test_a_closed_port_is_retried_then_reported_and_preflight_fails_fast(key):
    base = f"http://127.0.0.1:{closed_port()}/v1"
    c = LLMClient(config(base, retries=2)).propose("P01", PROMPT)
    assert api_error_kind(c) == "retries_exhausted" and f"cannot connect to {base}" in c.parse_error
    assert "gave up after 3 attempt(s)" in c.parse_error
    t0 = time.perf_counter()
    checks = preflight(config(base, retries=3))
    assert not checks[0].ok and checks[0].error_kind == "retries_exhausted" and time.perf_counter() - t0 < 10
    assert "gave up after 2 attempt(s)" in checks[0].error     # the preflight retries at most once


def test_an_unknown_model_is_not_found_and_not_retried(key):
    with ScriptedServer([Rule(".", [Reply(status=404)], repeat_last=True)]) as srv:
        c = LLMClient(config(srv.base_url, retries=3)).propose("P01", PROMPT)
    assert api_error_kind(c) == "not_found" and len(srv.requests) == 1


def test_a_body_that_is_not_json_and_a_dropped_connection_are_survived(key):
    rules = [Rule(".", [Reply(raw_body=b"{this is not json"), Reply(drop=True), GOOD])]
    with ScriptedServer(rules) as srv:
        c = LLMClient(config(srv.base_url, retries=3)).propose("P01", PROMPT)
    assert c.ok, c.parse_error
    assert len(srv.requests) == 3 and "attempts: 3" in c.notes


def test_preflight_answers_are_the_servers_and_cost_nothing_extra_in_rules(key):
    with ScriptedServer([Rule(".", [GOOD])]) as srv:
        checks = preflight(config(srv.base_url))
        c = LLMClient(config(srv.base_url)).propose("P01", PROMPT)
    assert checks[0].ok and checks[0].tokens_in > 0 and c.ok
    assert srv.requests[0]["rule"] == PREFLIGHT_RULE and srv.requests[0]["body"]["messages"][-1]["content"] == PING
    assert srv.requests[0]["body"]["max_tokens"] == 8


def test_preflight_skips_models_that_are_never_chosen(key):
    cfg = LLMConfig(models=(ModelSpec("openai/a", api_base=f"http://127.0.0.1:{closed_port()}/v1", weight=0.0),
                            ModelSpec("openai/b", api_base="http://127.0.0.1:1/v1", api_key_env=KEY_ENV)),
                    retries=0, backoff_base_s=0.0, request_timeout_s=2)
    assert [r.model for r in preflight(cfg)] == ["openai/b"]
