"""The paper's propose-verify-revise loop (StatMechBench-v0, Section 3): the baseline strategy.

Round 0 sends the paper's system prompt and initial user prompt; every later round sends the
feedback prompt with ``{prev_json}`` = the raw previous response and ``{feedback}`` = that
round's verifier text. The loop stops at the first accepted Verdict or after ``rounds`` rounds
in all ("we limit the number of rounds to k", k = 5 in the paper; round indices 0..k-1, so the
paper's k* is :attr:`RefineTrace.accepted_round`). One model answers every round of a trial.

A response that yields no code is a round like any other: its feedback is the paper's branch
(a), ``Your code did not run. Error: <parse reason>``. A provider failure (after retries) or an
exhausted budget ends the trial with the reason in ``stopped``; nothing here raises for them.
Every round records its prompt id, raw response, candidate (or parse failure), Verdict dict,
tokens, cost and seconds.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from evaluators.feedback import did_not_run
from evaluators.verify import VerifyOptions, verify
from search.budget import BudgetExhausted
from search.candidate import Candidate
from search.prompt_builder import PromptBuilder
from tasks.base import Task

SCHEMA = 1


@dataclass
class RefineRound:
    index: int
    prompt_id: str
    prompt_kind: str  # "paper_initial" | "paper_feedback"
    model: str | None
    response: str | None
    candidate: dict  # Candidate.to_dict()
    parse_error: str | None
    verdict: dict | None  # Verdict.to_dict(); None when there was no code to judge
    feedback: str
    accepted: bool
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0  # the whole round
    propose_seconds: float = 0.0
    verify_seconds: float = 0.0


@dataclass
class RefineTrace:
    task: str
    variant: str
    max_rounds: int
    rounds: list = field(default_factory=list)
    stopped: str = ""  # "accepted" | "rounds exhausted" | "budget exhausted: ..." | "api error: ..." | "verifier error: ..."
    schema: int = SCHEMA

    @property
    def accepted(self) -> bool:
        return any(r.accepted for r in self.rounds)

    @property
    def accepted_round(self) -> int | None:
        """Index of the first accepted round (the paper's k*), None if none was."""
        return next((r.index for r in self.rounds if r.accepted), None)

    @property
    def tokens(self) -> int:
        return sum(r.tokens_in + r.tokens_out for r in self.rounds)

    @property
    def cost_usd(self) -> float:
        return sum(r.cost_usd for r in self.rounds)

    @property
    def seconds(self) -> float:
        return sum(r.seconds for r in self.rounds)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.update(accepted=self.accepted, accepted_round=self.accepted_round, tokens=self.tokens,
                 cost_usd=self.cost_usd, seconds=self.seconds)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RefineTrace":
        if d.get("schema") != SCHEMA:
            raise ValueError(f"RefineTrace schema {d.get('schema')!r} is not supported (expected {SCHEMA})")
        return cls(d["task"], d["variant"], d["max_rounds"], [RefineRound(**r) for r in d["rounds"]], d["stopped"])


def refine(task: Task, proposer, variant: str = "canonical", rounds: int = 5,
           verify_options: VerifyOptions = VerifyOptions(), sandbox=None, builder: PromptBuilder | None = None,
           model=None, verify_fn=verify) -> RefineTrace:
    """Run one trial of the paper's loop on ``task`` with ``proposer`` (an LLMProposer or alike).

    ``model`` fixes the model (default: the proposer chooses once for the whole trial).
    ``sandbox`` is shared by all rounds (one is started and closed here when None).
    """
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    builder = builder or PromptBuilder()
    description = task.description(variant)
    if model is None and hasattr(proposer, "choose_model"):
        model = proposer.choose_model()
    trace = RefineTrace(task.id, variant, rounds)
    own_sandbox = sandbox is None
    if own_sandbox:
        from evaluators.sandbox import Sandbox

        sandbox = Sandbox()
    previous: Candidate | None = None
    feedback = ""
    try:
        for k in range(rounds):
            prompt = (builder.paper_initial(description) if k == 0
                      else builder.paper_feedback(description, previous.response or "", feedback))
            t0 = time.perf_counter()
            try:
                cand = proposer.propose(task.id, prompt, parent=previous, model=model)
            except BudgetExhausted as exc:
                trace.stopped = f"budget exhausted: {exc}"
                return trace
            t1 = time.perf_counter()
            verdict = None
            if cand.error_kind == "api":
                feedback = ""
                trace.stopped = f"api error: {cand.parse_error}"
            elif not cand.ok:
                feedback = did_not_run(cand.parse_error)
            else:
                try:
                    v = verify_fn(task, cand.to_submission(), verify_options, sandbox)
                except Exception as exc:  # the verifier promises not to raise; keep the trial's record if it does
                    trace.stopped = f"verifier error: {type(exc).__name__}: {exc}"
                    v = None
                if v is not None:
                    verdict, feedback = v.to_dict(), v.feedback
            t2 = time.perf_counter()
            accepted = bool(verdict and verdict.get("verdict") == "accept")
            trace.rounds.append(RefineRound(
                index=k, prompt_id=prompt.prompt_id, prompt_kind=prompt.meta.get("kind", ""), model=cand.model,
                response=cand.response, candidate=cand.to_dict(), parse_error=cand.parse_error, verdict=verdict,
                feedback=feedback, accepted=accepted, tokens_in=cand.tokens_in, tokens_out=cand.tokens_out,
                cost_usd=cand.cost_usd, seconds=t2 - t0, propose_seconds=t1 - t0, verify_seconds=t2 - t1))
            if trace.stopped:
                return trace
            if accepted:
                trace.stopped = "accepted"
                return trace
            previous = cand
        trace.stopped = "rounds exhausted"
        return trace
    finally:
        if own_sandbox:
            sandbox.close()
