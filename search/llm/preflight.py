"""A preflight call per model before a run spends its first generation.

A model that cannot answer (a closed port, a wrong key, an unknown model name, an unset
``api_key_env`` variable) makes every proposal of a run fail; found out here, with one short
request per model, the run stops at once with the reason instead of retrying every proposal.
The check sends one user message (:data:`PING`) and asks for at most a few tokens; it retries
transient failures at most ``retries`` times (authentication and not-found never). Models with
weight 0 under ``selection: weights`` are never called and are not checked.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from search.llm.client import LLMClient, ProposerError
from search.llm.config import LLMConfig

PING = "statmech-evolve preflight check: reply with the single word ready."
PING_MAX_TOKENS = 8


@dataclass(frozen=True)
class PreflightResult:
    model: str
    ok: bool
    seconds: float = 0.0
    error: str | None = None        # the client's one-line reason (keys redacted)
    error_kind: str | None = None   # ProposerError kind: auth, not_found, bad_request, retries_exhausted, other
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0


def models_to_check(config: LLMConfig) -> list[str]:
    return [m.name for m in config.models if m.weight > 0 or config.selection == "bandit"]


def preflight(config: LLMConfig, retries: int = 1, sleep=time.sleep) -> list[PreflightResult]:
    """One check call per model that can be chosen, in config order."""
    client = LLMClient(dataclasses.replace(config, retries=min(config.retries, retries)), sleep=sleep)
    out = []
    for name in models_to_check(config):
        spec = config.model(name)
        spec = dataclasses.replace(spec, max_output_tokens=PING_MAX_TOKENS)
        start = time.perf_counter()
        try:
            r = client.complete([{"role": "user", "content": PING}], spec)
        except ProposerError as exc:
            out.append(PreflightResult(name, False, time.perf_counter() - start, str(exc), exc.kind))
            continue
        out.append(PreflightResult(name, True, r.seconds, tokens_in=r.tokens_in, tokens_out=r.tokens_out,
                                   cost_usd=r.cost_usd))
    return out
