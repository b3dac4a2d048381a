"""A hard budget in tokens and US dollars for LLM proposals.

The budget is checked before every request: once the spent tokens or dollars reach a limit,
:meth:`Budget.check` raises :class:`BudgetExhausted` and no new proposal starts. A request in
flight when the limit is crossed is completed and charged (its cost is only known afterwards),
so the overshoot is at most one request per concurrent caller. Thread-safe; ``to_dict`` /
``from_dict`` carry the spent amounts across checkpoints.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


class BudgetExhausted(RuntimeError):
    """No new proposals: a token or dollar limit has been reached."""


@dataclass
class Spend:
    tokens_in: int = 0
    tokens_out: int = 0
    usd: float = 0.0
    requests: int = 0

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out


class Budget:
    """``Budget(max_tokens=None, max_usd=None)``: None means no limit on that quantity."""

    def __init__(self, max_tokens: int | None = None, max_usd: float | None = None, spent: Spend | None = None):
        if max_tokens is not None and max_tokens < 0:
            raise ValueError("max_tokens must be >= 0")
        if max_usd is not None and max_usd < 0:
            raise ValueError("max_usd must be >= 0")
        self.max_tokens = max_tokens
        self.max_usd = max_usd
        self.spent = spent or Spend()
        self._lock = threading.Lock()

    def reason(self) -> str | None:
        """Why the budget is exhausted, or None while it is not."""
        with self._lock:
            s = self.spent
            if self.max_tokens is not None and s.tokens >= self.max_tokens:
                return f"token budget exhausted: {s.tokens} of {self.max_tokens} tokens spent"
            if self.max_usd is not None and s.usd >= self.max_usd:
                return f"dollar budget exhausted: ${s.usd:.4f} of ${self.max_usd:.4f} spent"
            return None

    @property
    def exhausted(self) -> bool:
        return self.reason() is not None

    def check(self) -> None:
        """Raise BudgetExhausted when no new request may start."""
        why = self.reason()
        if why is not None:
            raise BudgetExhausted(why)

    def charge(self, tokens_in: int, tokens_out: int, usd: float) -> None:
        with self._lock:
            self.spent.tokens_in += int(tokens_in)
            self.spent.tokens_out += int(tokens_out)
            self.spent.usd += float(usd)
            self.spent.requests += 1

    def remaining(self) -> dict:
        with self._lock:
            s = self.spent
            return {"tokens": None if self.max_tokens is None else max(0, self.max_tokens - s.tokens),
                    "usd": None if self.max_usd is None else max(0.0, self.max_usd - s.usd)}

    def to_dict(self) -> dict:
        with self._lock:
            s = self.spent
            return {"max_tokens": self.max_tokens, "max_usd": self.max_usd,
                    "spent": {"tokens_in": s.tokens_in, "tokens_out": s.tokens_out, "usd": s.usd,
                              "requests": s.requests}}

    @classmethod
    def from_dict(cls, d: dict) -> "Budget":
        return cls(d.get("max_tokens"), d.get("max_usd"), Spend(**d.get("spent", {})))

    def __repr__(self) -> str:
        s = self.spent
        return f"Budget(tokens {s.tokens}/{self.max_tokens}, usd {s.usd:.4f}/{self.max_usd})"
