"""The LLM client: one litellm call per proposal, with retries and cost accounting.

Every request goes through ``litellm.completion(model=..., messages=..., api_base=...,
api_key=<from the environment>, timeout=..., temperature/reasoning_effort only when set)``,
with litellm's and the OpenAI client's own retries switched off so this module owns them:
rate limits (429), timeouts, connection errors and 5xx are retried with exponential backoff;
authentication (401/403), not-found (404) and bad-request errors are not, and a model whose
``api_key_env`` names an unset variable fails at once without a request (kind "auth"). Which
model writes a proposal is the engine's choice (``evolve.engine.models``: weights or the
cost-aware bandit), passed in; without one, the client draws by the configured weights. Cost comes from litellm's accounting
(``litellm.completion_cost``), with the model's configured prices when given, and 0 with a
note when neither knows the model. Token and dollar budgets are the run's (the engine stops
starting proposals once they are spent). :meth:`LLMClient.propose` never raises for a provider
or parse failure: it becomes a failed Candidate with the reason.

API keys are read from the environment at request time and never stored: not on this object,
not in candidates, not in error texts (which are scrubbed of every configured key's value).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from search.candidate import Candidate, new_candidate_id
from search.llm.config import LLMConfig, ModelSpec
from search.llm.bandit import select_by_weight
from search.parsing import ParseFailure, parse_response
from search.prompt_builder import BuiltPrompt

REDACTED = "[REDACTED]"


#: kinds of failure that no retry, and no later proposal, can fix: the configuration is wrong
FATAL_KINDS = ("auth", "not_found")


API_KIND_NOTE = "api error kind: "


def api_error_kind(candidate: Candidate) -> str | None:
    """The ProposerError kind of a proposal that failed at the provider (None for any other)."""
    if candidate.error_kind != "api":
        return None
    return next((n[len(API_KIND_NOTE):] for n in candidate.notes if n.startswith(API_KIND_NOTE)), "other")


class ProposerError(RuntimeError):
    """A request failed for good. ``kind``: "auth", "not_found", "bad_request", "retries_exhausted", "other"."""

    def __init__(self, message: str, kind: str, attempts: int):
        super().__init__(message)
        self.kind = kind
        self.attempts = attempts


@dataclass
class LLMResponse:
    text: str
    model: str
    tokens_in: int
    tokens_out: int
    cost_usd: float
    seconds: float
    attempts: int
    notes: list = field(default_factory=list)  # retried errors, cost notes


def load_litellm():
    """Import litellm lazily (it takes seconds) and quietly; never fetch its price table."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm  # here, not at the top: importing it takes about ten seconds, and most runs never call a model

    litellm.suppress_debug_info = True
    return litellm


class LLMClient:
    def __init__(self, config: LLMConfig, seed: int = 0, sleep=time.sleep, id_factory=new_candidate_id):
        self.config = config
        self.rng = np.random.default_rng(seed)
        self._sleep = sleep
        self._new_id = id_factory

    # -- model choice ---------------------------------------------------------------------
    def choose_model(self) -> ModelSpec:
        """A model drawn by the configured weights (used when the caller names none; runs get
        their model from the engine, which also runs the bandit)."""
        names = [m.name for m in self.config.models]
        if len(names) == 1:
            return self.config.models[0]
        return self.config.model(select_by_weight(names, [m.weight for m in self.config.models], self.rng))

    # -- one request ----------------------------------------------------------------------
    def complete(self, messages: list, model: ModelSpec | str | None = None) -> LLMResponse:
        """One chat completion with retries. Raises ProposerError when it fails for good."""
        spec = self._spec(model)
        if spec.api_key_env and not os.environ.get(spec.api_key_env):
            raise ProposerError(f"{spec.name}: the environment variable {spec.api_key_env} (api_key_env) is not set "
                                "in this process; export it before starting", "auth", 0)
        litellm = load_litellm()
        kwargs = self._request_kwargs(spec, messages)
        retryable = (litellm.RateLimitError, litellm.Timeout, litellm.APIConnectionError,
                     litellm.InternalServerError, litellm.ServiceUnavailableError)
        notes: list[str] = []
        start = time.perf_counter()
        for attempt in range(self.config.retries + 1):
            try:
                resp = litellm.completion(api_key=self._key(spec), **kwargs)
            except retryable as exc:
                notes.append(f"attempt {attempt + 1}: {self._describe(exc, spec)}")
                if attempt == self.config.retries:
                    raise ProposerError(f"{spec.name}: gave up after {attempt + 1} attempt(s); last error: "
                                        f"{self._describe(exc, spec)}", "retries_exhausted", attempt + 1) from None
                self._sleep(self._wait(attempt, exc))
                continue
            except Exception as exc:  # auth, bad request, anything else: not worth retrying
                status = getattr(exc, "status_code", None)
                kind = ("auth" if status in (401, 403) else "not_found" if status == 404
                        else "bad_request" if status in (400, 422) else "other")
                if isinstance(status, int) and (status == 429 or status >= 500) and attempt < self.config.retries:
                    notes.append(f"attempt {attempt + 1}: {self._describe(exc, spec)}")
                    self._sleep(self._wait(attempt, exc))
                    continue
                raise ProposerError(f"{spec.name}: {self._describe(exc, spec)}", kind, attempt + 1) from None
            return self._finish(resp, spec, attempt + 1, time.perf_counter() - start, notes)
        raise AssertionError("unreachable")  # pragma: no cover

    def _finish(self, resp, spec: ModelSpec, attempts: int, seconds: float, notes: list) -> LLMResponse:
        usage = getattr(resp, "usage", None)
        t_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        t_out = int(getattr(usage, "completion_tokens", 0) or 0)
        if usage is None:
            notes.append("the provider reported no token usage; counted as 0")
        usd, cost_note = self._cost(resp, spec)
        if cost_note:
            notes.append(cost_note)
        try:
            text = resp.choices[0].message.content or ""
        except (AttributeError, IndexError):
            text = ""
        return LLMResponse(text, spec.name, t_in, t_out, usd, seconds, attempts, notes)

    # -- one proposal ---------------------------------------------------------------------
    def propose(self, task_id: str, prompt: BuiltPrompt, parent: Candidate | None = None,
                inspirations=(), model: ModelSpec | str | None = None,
                read: Callable[[str, str], Candidate] | None = None) -> Candidate:
        """Ask a model and parse its answer into a Candidate (failed proposals included).

        Never raises for provider or parse failures. Diffs in the answer are applied to ``parent.code``;
        claims a diff omits are inherited from the parent. ``read(text, id)``, when given, turns the
        answer into the Candidate instead of the code parser (a derivation answer, say); the client
        adds the provenance, tokens, cost and latency.
        """
        spec = self._spec(model)
        cid = self._new_id()
        parent_ids = ([parent.id] if parent is not None else []) + [c.id for c in inspirations]
        prov = dict(proposer="llm", model=spec.name, prompt_id=prompt.prompt_id, parent_ids=parent_ids,
                    prompt_meta=dict(prompt.meta))
        start = time.perf_counter()
        try:
            r = self.complete(prompt.messages, spec)
        except ProposerError as exc:
            return Candidate.failed(cid, task_id, str(exc), "api", notes=[f"{API_KIND_NOTE}{exc.kind}",
                                                                          f"attempts: {exc.attempts}"],
                                    latency_s=time.perf_counter() - start, **prov)
        cost = dict(tokens_in=r.tokens_in, tokens_out=r.tokens_out, cost_usd=r.cost_usd, response=r.text,
                    latency_s=r.seconds, notes=list(r.notes) + [f"attempts: {r.attempts}", f"seconds: {r.seconds:.3f}"])
        if read is not None:
            cand = read(r.text, cid)
            return dataclasses.replace(cand, **{**prov, "prompt_meta": {**prov["prompt_meta"], **cand.prompt_meta}},
                                       **{**cost, "notes": cost["notes"] + list(cand.notes)})
        parsed = parse_response(r.text, parent.code if parent is not None else None,
                                parent.claims() if parent is not None else None)
        if isinstance(parsed, ParseFailure):
            return Candidate.failed(cid, task_id, parsed.reason, parsed.kind, **prov, **cost)
        cost["notes"] = cost["notes"] + parsed.notes
        return Candidate(id=cid, task=task_id, code=parsed.code, tractable_class=parsed.tractable_class,
                         complexity_O=parsed.complexity_O, confidence=parsed.confidence,
                         justification=parsed.justification, response_format=parsed.format, **prov, **cost)

    # -- state for checkpoints ------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"rng": json.dumps(self.rng.bit_generator.state)}

    def load_state_dict(self, d: dict) -> None:
        self.rng.bit_generator.state = json.loads(d["rng"])

    # -- helpers --------------------------------------------------------------------------
    def _spec(self, model: ModelSpec | str | None) -> ModelSpec:
        if model is None:
            return self.choose_model()
        return model if isinstance(model, ModelSpec) else self.config.model(model)

    def _request_kwargs(self, spec: ModelSpec, messages: list) -> dict:
        kw = {"model": spec.name, "messages": messages, "timeout": self.config.request_timeout_s,
              "num_retries": 0, "max_retries": 0, "drop_params": True}
        if spec.api_base:
            kw["api_base"] = spec.api_base
        if spec.temperature is not None:
            kw["temperature"] = spec.temperature
        if spec.reasoning_effort:
            kw["reasoning_effort"] = spec.reasoning_effort
        if spec.max_output_tokens:
            kw["max_tokens"] = spec.max_output_tokens
        return kw

    @staticmethod
    def _key(spec: ModelSpec) -> str | None:
        """The key, read now from the environment variable the model names (None: provider default)."""
        return os.environ.get(spec.api_key_env) if spec.api_key_env else None

    def _cost(self, resp, spec: ModelSpec) -> tuple[float, str | None]:
        litellm = load_litellm()
        try:
            if spec.has_pricing:
                prices = {"input_cost_per_token": spec.input_cost_per_token or 0.0,
                          "output_cost_per_token": spec.output_cost_per_token or 0.0}
                return float(litellm.completion_cost(completion_response=resp, custom_cost_per_token=prices)), None
            return float(litellm.completion_cost(completion_response=resp)), None
        except Exception as exc:
            return 0.0, (f"cost unknown for {spec.name} ({type(exc).__name__}); counted as $0 "
                         "(set input_cost_per_token/output_cost_per_token in the model config)")

    def _wait(self, attempt: int, exc: Exception) -> float:
        wait = min(self.config.backoff_max_s, self.config.backoff_base_s * 2 ** attempt)
        headers = getattr(getattr(exc, "response", None), "headers", None) or {}
        try:
            wait = max(wait, min(self.config.backoff_max_s, float(headers.get("retry-after", 0))))
        except (TypeError, ValueError):
            pass
        return wait

    def _describe(self, exc: Exception, spec: ModelSpec) -> str:
        text = f"{type(exc).__name__} (status {getattr(exc, 'status_code', None)}): {exc}"
        if "connection error" in str(exc).lower() or "APIConnectionError" in type(exc).__name__:
            # litellm reports a refused connection as a 500 "Connection error."; say what it is
            text = f"cannot connect to {spec.api_base or 'the provider'} (no server answering?); {text}"
        return redact(" ".join(text.split())[:500], self.config)


def redact(text: str, config: LLMConfig) -> str:
    """``text`` with the value of every configured key variable replaced by [REDACTED]."""
    for name in config.key_env_names():
        value = os.environ.get(name)
        if value and len(value) >= 4:
            text = text.replace(value, REDACTED)
    return text
