"""The candidate record: one proposal, its claims, its code, and where it came from.

A Candidate is what every proposer returns and what the run journal stores (msgpack), so it
holds plain types only and carries a versioned ``schema``. A proposal that could not be turned
into code (unparseable answer, diff that does not apply, provider error) is still a Candidate,
with ``code=None`` and ``parse_error`` saying why: failures are part of the record.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass, field, fields

from evaluators.submission import Submission

SCHEMA = 1

#: ``error_kind`` values of a failed proposal ("proposer": the proposer itself raised; the run goes on)
ERROR_KINDS = ("parse", "diff", "api", "proposer")


def new_candidate_id() -> str:
    """A fresh random id (12 hex digits). Runs that need reproducible ids pass their own."""
    return uuid.uuid4().hex[:12]


@dataclass
class Candidate:
    """One proposal.

    Claims: ``tractable_class``, ``complexity_O``, ``confidence``, ``justification``.
    Provenance: ``proposer`` ("llm", "structural", ...), ``model``, ``prompt_id``,
    ``parent_ids`` (the parent first, then inspirations), token counts, ``cost_usd``,
    ``created`` (Unix seconds). ``response`` is the raw model text and ``prompt`` the user
    message it answered (None for non-LLM proposers); ``prompt_meta`` records how the prompt was built (format, whether the negative
    block and structural hints were included, how many items) as plain values.
    ``parse_error``/``error_kind`` are set when the proposal yielded no code. ``latency_s`` is the
    wall time of the model request (retries included). ``system_prompt`` carries the system
    message from the proposer to the engine, which journals each distinct text once (a
    ``system_prompt`` event, named by ``prompt_meta["system"]``) and stores the candidate without it.
    ``derivation`` is the chain of checked steps a derivation proposal was built from (plain dicts:
    action, params, check), empty for other proposals.
    """

    id: str
    task: str
    code: str | None = None
    tractable_class: str | None = None
    complexity_O: str | None = None
    confidence: float | None = None
    justification: str | None = None
    proposer: str = "llm"
    model: str | None = None
    prompt_id: str | None = None
    parent_ids: list[str] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    created: float = field(default_factory=time.time)
    parse_error: str | None = None
    error_kind: str | None = None
    response: str | None = None
    # "json" | "json_fenced" | "json_prose" | "python_prose" | "diff" | "derivation_json" (a chain: llm_format.py)
    response_format: str | None = None
    prompt: str | None = None           # the user message the model answered (the system prompt is named by prompt_id)
    prompt_meta: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    latency_s: float = 0.0
    system_prompt: str | None = None
    derivation: list[dict] = field(default_factory=list)
    schema: int = SCHEMA

    def __post_init__(self):
        if self.error_kind is not None and self.error_kind not in ERROR_KINDS:
            raise ValueError(f"unknown error_kind {self.error_kind!r}; expected one of {ERROR_KINDS}")
        if self.confidence is not None:
            self.confidence = float(self.confidence)

    @property
    def ok(self) -> bool:
        """True when the proposal produced code to evaluate."""
        return self.code is not None and self.parse_error is None

    def to_submission(self) -> Submission:
        """The evaluators' view. ValueError for a failed proposal (there is no code to judge)."""
        if not self.ok:
            raise ValueError(f"candidate {self.id} has no code: {self.parse_error}")
        return Submission(self.code, self.tractable_class, self.complexity_O, self.confidence, self.justification)

    def chat_messages(self, system: str | None) -> list:
        """The chat messages this proposal answered, given the text of its system prompt (journaled
        apart, named by ``prompt_meta["system"]``); [] for proposers without a prompt."""
        if self.prompt is None:
            return []
        head = [{"role": "system", "content": system}] if system is not None else []
        return head + [{"role": "user", "content": self.prompt}]

    def claims(self) -> dict:
        """The paper's response schema (without code)."""
        return {"tractable_class": self.tractable_class, "complexity_O": self.complexity_O,
                "confidence": self.confidence, "justification": self.justification}

    def to_dict(self) -> dict:
        """Plain types only (str, int, float, None, list, dict), ready for msgpack or JSON."""
        d = asdict(self)
        d["parent_ids"] = list(self.parent_ids)
        d["prompt_meta"] = dict(self.prompt_meta)
        d["notes"] = list(self.notes)
        d["derivation"] = [dict(step) for step in self.derivation]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Candidate":
        if d.get("schema") != SCHEMA:
            raise ValueError(f"Candidate schema {d.get('schema')!r} is not supported (expected {SCHEMA})")
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    @classmethod
    def failed(cls, id: str, task: str, reason: str, kind: str = "parse", **provenance) -> "Candidate":
        """A proposal that produced no code, with the reason."""
        return cls(id=id, task=task, parse_error=reason, error_kind=kind, **provenance)
