"""Typed configuration of the LLM proposer: which models, how to pick them, retries, timeouts.

Keys are never part of a config: a model names the environment variable that holds its key
(``api_key_env``) and the key is read from the environment at request time only. A config
dictionary that contains a key-like field is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

SELECTIONS = ("weights", "bandit")
_KEY_FIELDS = ("api_key", "key", "token", "secret", "password")


@dataclass(frozen=True)
class ModelSpec:
    """One model as litellm names it (``"openai/gpt-5.4-mini"``, ``"anthropic/claude-..."``).

    ``temperature`` and ``reasoning_effort`` are sent only when set. Prices are USD per token;
    when given they are used for this model's cost, otherwise litellm's price table is.
    """

    name: str
    weight: float = 1.0
    temperature: float | None = None
    reasoning_effort: str | None = None
    api_base: str | None = None
    api_key_env: str | None = None
    input_cost_per_token: float | None = None
    output_cost_per_token: float | None = None
    max_output_tokens: int | None = None

    def __post_init__(self):
        if not self.name or not isinstance(self.name, str):
            raise ValueError("a model needs a name (the litellm model string)")
        if self.weight < 0:
            raise ValueError(f"model {self.name}: weight must be >= 0")
        for price in (self.input_cost_per_token, self.output_cost_per_token):
            if price is not None and price < 0:
                raise ValueError(f"model {self.name}: prices must be >= 0")

    @property
    def has_pricing(self) -> bool:
        return self.input_cost_per_token is not None or self.output_cost_per_token is not None

    @classmethod
    def from_dict(cls, d: dict | str) -> "ModelSpec":
        if isinstance(d, str):
            return cls(name=d)
        refuse_key_fields(d, f"model {d.get('name', '?')}")
        return cls(**_known(cls, d, "model"))


@dataclass(frozen=True)
class LLMConfig:
    """``retries`` is the number of retries after the first attempt (rate limits, timeouts,
    connection errors, 5xx); the wait before retry k (k = 0, 1, ...) is
    ``min(backoff_max_s, backoff_base_s * 2**k)`` or the server's Retry-After if longer.
    ``request_timeout_s`` bounds each request. ``preflight``: one short call per model before a
    run's first generation (search/llm/preflight.py), so a model that cannot answer stops the
    run at once with the reason."""

    models: tuple[ModelSpec, ...] = field(default_factory=tuple)
    selection: str = "weights"
    retries: int = 3
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    request_timeout_s: float = 600.0
    bandit_decay: float = 0.95
    bandit_exploration: float = 1.0
    preflight: bool = True

    def __post_init__(self):
        object.__setattr__(self, "models", tuple(self.models))
        if not self.models:
            raise ValueError("LLMConfig needs at least one model")
        names = [m.name for m in self.models]
        if len(set(names)) != len(names):
            raise ValueError(f"model names must be distinct: {names}")
        if self.selection not in SELECTIONS:
            raise ValueError(f"selection must be one of {SELECTIONS}, got {self.selection!r}")
        if self.retries < 0 or self.backoff_base_s < 0 or self.request_timeout_s <= 0:
            raise ValueError("retries and backoff must be >= 0 and the request timeout > 0")

    def model(self, name: str) -> ModelSpec:
        for m in self.models:
            if m.name == name:
                return m
        raise KeyError(f"unknown model {name!r}; configured: {', '.join(m.name for m in self.models)}")

    def key_env_names(self) -> list[str]:
        return sorted({m.api_key_env for m in self.models if m.api_key_env})

    def unset_key_envs(self, environ) -> list[str]:
        """'model: VARIABLE' for every model that can be chosen whose ``api_key_env`` is unset in ``environ``."""
        usable = [m for m in self.models if m.weight > 0 or self.selection == "bandit"]
        return [f"{m.name}: {m.api_key_env}" for m in usable if m.api_key_env and not environ.get(m.api_key_env)]

    @classmethod
    def from_dict(cls, d: dict) -> "LLMConfig":
        refuse_key_fields(d, "llm config")
        d = _known(cls, d, "llm config")
        d["models"] = tuple(ModelSpec.from_dict(m) for m in d.get("models", ()))
        return cls(**d)

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "models"}
        out["models"] = [{f.name: getattr(m, f.name) for f in fields(m)} for m in self.models]
        return out


def _known(cls, d: dict, what: str) -> dict:
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(d) - names)
    if unknown:
        raise ValueError(f"{what}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(names))}")
    return dict(d)


def refuse_key_fields(d: dict, what: str) -> None:
    """ValueError when ``d`` has a field that would hold a secret (api_key, token, ...)."""
    bad = [k for k in d if k.lower() in _KEY_FIELDS]
    if bad:
        raise ValueError(f"{what}: {', '.join(bad)} may not appear in a config; put the key in an environment "
                         "variable and name that variable in api_key_env")
