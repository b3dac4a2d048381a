"""API keys come from the environment and go nowhere else: not into candidates, traces,
checkpoint state, error texts, logs or console output, even when a provider echoes the key."""

import json
import logging
import traceback

import msgpack
import pytest

from conftest import FIXTURES
from evaluators.verify import VerifyOptions
from search.candidate import Candidate
from search.llm.config import LLMConfig, ModelSpec
from doubles.scripted_server import Reply, Rule, ScriptedServer
from evolve.bench.trial import run_refine_trial
from evolve.engine.evaluator_worker import EvaluatorWorker
from evolve.engine.proposer_worker import ProposerWorker
from search.llm.client import LLMClient, ProposerError
from search.prompt_builder import PromptBuilder
from search.proposers import ProposerContext
from search.proposers.llm import LLMOptions
from tasks.registry import get_task

KEY_ENV = "STATMECH_LEAK_TEST_KEY"
KEY = "sk-leaktest-7f3a9c1e5b2d4a6f8e0c"
GOOD = json.dumps({"tractable_class": "transfer_matrix", "complexity_O": "O(n)", "confidence": 0.9,
                   "justification": "j", "code": (FIXTURES / "p01_correct.py").read_text()})
DIFF_MISS = "<<<<<<< SEARCH\nnot in the parent\n=======\nx = 1\n>>>>>>> REPLACE"


def scan(texts, where):
    for i, t in enumerate(texts):
        blob = t if isinstance(t, (bytes, str)) else json.dumps(t, default=str)
        needle = KEY.encode() if isinstance(blob, bytes) else KEY
        assert needle not in blob, f"the key leaked into {where} #{i}"
        assert (KEY[8:].encode() if isinstance(blob, bytes) else KEY[8:]) not in blob, f"part of the key leaked into {where} #{i}"


def test_the_key_never_leaks(monkeypatch, caplog, capsys, sandbox):
    monkeypatch.setenv(KEY_ENV, KEY)
    caplog.set_level(logging.DEBUG)  # everything every logger emits, litellm's debug output included
    script = [Rule("Here is the problem", [
        GOOD,
        "this is not json",
        DIFF_MISS,
        Reply(status=429, echo_authorization=True), GOOD,
        Reply(status=500, echo_authorization=True), GOOD,
        Reply(GOOD, delay_s=0.8), GOOD,
        Reply(status=401, echo_authorization=True),
        Reply(status=400, echo_authorization=True),
        Reply(status=503, echo_authorization=True), Reply(status=503, echo_authorization=True),
        "not json either",
    ]), Rule("The verifier reports", [GOOD])]
    builder = PromptBuilder()
    prompt = builder.paper_initial(get_task("P01").description())
    parent = Candidate(id="par", task="P01", code="import math\n")
    records, errors = [], []
    with ScriptedServer(script) as srv:
        spec = ModelSpec("openai/leaky", api_base=srv.base_url, api_key_env=KEY_ENV, input_cost_per_token=1e-6,
                         output_cost_per_token=1e-6)
        llm = LLMConfig(models=(spec,), retries=1, backoff_base_s=0.0, request_timeout_s=0.4)
        p = LLMClient(llm, sleep=lambda s: None)
        for _ in range(8):
            records.append(p.propose("P01", prompt, parent=parent))
        try:
            p.complete(prompt.messages)
        except ProposerError as exc:
            errors.append(exc)
        proposer = ProposerWorker("P01", {"llm": LLMOptions(weight=1.0)}, ProposerContext(llm=llm))
        evaluator = EvaluatorWorker("P01", VerifyOptions(ladder=False, samples=1), sandbox=sandbox)
        trace = run_refine_trial("P01", "canonical", 2, proposer, evaluator)
    # the script ran as intended: the key was sent, and echoed back in error messages
    assert all(r["authorization"] == f"Bearer {KEY}" for r in srv.requests)
    kinds = [(c.ok, c.error_kind) for c in records]
    assert kinds == [(True, None), (False, "parse"), (False, "diff"), (True, None), (True, None), (True, None),
                     (False, "api"), (False, "api")]
    assert all("[REDACTED]" in c.parse_error for c in records[-2:])
    assert errors and errors[0].kind == "retries_exhausted" and "[REDACTED]" in str(errors[0])
    assert trace.rounds and trace.rounds[0].candidate["error_kind"] == "parse"

    dicts = [c.to_dict() for c in records] + [trace.to_dict(), p.state_dict(), p.config.to_dict()]
    scan(dicts, "records")
    scan([msgpack.packb(d) for d in dicts], "msgpack records")
    scan([str(e) for e in errors] + ["".join(traceback.format_exception(e)) for e in errors], "exceptions")
    scan([repr(c) for c in records] + [repr(p.__dict__)], "reprs")
    scan([caplog.text] + [r.getMessage() for r in caplog.records], "logs")
    out = capsys.readouterr()
    scan([out.out, out.err], "console output")
    assert len(caplog.records) > 0  # litellm did log something, and it was scanned


def test_config_cannot_hold_a_key(monkeypatch):
    with pytest.raises(ValueError):
        LLMConfig.from_dict({"models": [{"name": "openai/a", "api_key": KEY}]})
    monkeypatch.setenv(KEY_ENV, KEY)
    cfg = LLMConfig(models=(ModelSpec("openai/a", api_key_env=KEY_ENV),))
    scan([cfg.to_dict(), repr(cfg), repr(LLMClient(cfg).__dict__)], "config")
