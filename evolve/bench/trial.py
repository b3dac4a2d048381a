"""One trial of StatMechBench-v0's propose-verify-revise loop, run by the engine, and its record.

A trial is the engine with the ``refine`` strategy (one slot, ``rounds`` rounds at most, one trial,
stopping at the first accepted program) and in-process workers; nothing is journaled to disk: a
:class:`MemoryStore` keeps the run's events, and :func:`trace_of` turns them into the trial's
:class:`RefineTrace` (per round: the prompt messages sent (system and user), prompt id and kind,
raw response, candidate, Verdict, feedback, tokens, cost, seconds). ``prompts`` chooses the
paper's prompts (the default) or this project's (``evolve``). ``stopped`` is "accepted", "rounds exhausted", "api error: ...",
"budget exhausted: ..." or "verifier error: ..."; only the first two finish a trial.
"""

from __future__ import annotations

import io
import time
from dataclasses import asdict, dataclass, field

from evaluators.verdict import Verdict
from evolve.config import Budgets
from evolve.engine.engine import Engine, EngineSettings
from evolve.engine.pools import LocalPool
from evolve.engine.progress import Progress
from evolve.engine.protocols import Store
from evolve.store.events import EvaluationEvent, ProposalEvent, SystemPromptEvent
from search.records import JudgedProgram
from search.strategies import StrategyContext
from search.strategies.refine import RefineOptions, RefineStrategy

SCHEMA = 1
FINISHED = ("accepted", "rounds exhausted")


@dataclass
class RefineRound:
    index: int
    prompt_id: str | None
    prompt_kind: str  # "paper_initial" | "paper_feedback" ("" for proposers without prompts)
    model: str | None
    response: str | None
    candidate: dict  # Candidate.to_dict()
    parse_error: str | None
    verdict: Verdict | None  # None when there was no code to judge
    feedback: str
    accepted: bool
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0  # the whole round
    propose_seconds: float = 0.0
    verify_seconds: float = 0.0
    prompt: list = field(default_factory=list)   # the messages sent: [{"role": "system", ...}, {"role": "user", ...}]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["verdict"] = None if self.verdict is None else self.verdict.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RefineRound":
        d = dict(d)
        d["verdict"] = None if d.get("verdict") is None else Verdict.from_dict(d["verdict"])
        return cls(**d)


@dataclass
class RefineTrace:
    task: str
    variant: str
    max_rounds: int
    rounds: list = field(default_factory=list)
    stopped: str = ""
    schema: int = SCHEMA

    @property
    def accepted(self) -> bool:
        return any(r.accepted for r in self.rounds)

    @property
    def accepted_round(self) -> int | None:
        """Index of the first accepted round (the paper's k*), None if none was."""
        return next((r.index for r in self.rounds if r.accepted), None)

    @property
    def finished(self) -> bool:
        return self.stopped in FINISHED

    def to_dict(self) -> dict:
        return {"task": self.task, "variant": self.variant, "max_rounds": self.max_rounds,
                "rounds": [r.to_dict() for r in self.rounds], "stopped": self.stopped, "schema": self.schema,
                "accepted": self.accepted, "accepted_round": self.accepted_round,
                "tokens": sum(r.tokens_in + r.tokens_out for r in self.rounds),
                "cost_usd": sum(r.cost_usd for r in self.rounds), "seconds": sum(r.seconds for r in self.rounds)}

    @classmethod
    def from_dict(cls, d: dict) -> "RefineTrace":
        if d.get("schema") != SCHEMA:
            raise ValueError(f"RefineTrace schema {d.get('schema')!r} is not supported (expected {SCHEMA})")
        return cls(d["task"], d["variant"], d["max_rounds"], [RefineRound.from_dict(r) for r in d["rounds"]],
                   d["stopped"])


class MemoryStore(Store):
    """The engine's run store (:class:`~evolve.engine.protocols.Store`), kept in memory: events in
    order, no snapshots, no files."""

    def __init__(self):
        self.events: list = []
        self.lines: list[str] = []

    def record(self, event) -> int:
        self.events.append(event)
        return len(self.events)

    def save_snapshot(self, state: dict, journal_seq: int) -> None:
        pass

    def write_best(self, candidate, verdict) -> None:
        pass

    def log(self, message: str) -> None:
        self.lines.append(message)

    def set_status(self, state: str, **counts) -> None:
        """The engine keeps a run's status.json counts current; a trial in memory has no status file."""


class TimedProposer:
    """A proposer that remembers how long each proposal took."""

    def __init__(self, proposer):
        self.proposer = proposer
        self.seconds: dict[str, float] = {}

    def propose(self, request):
        t0 = time.perf_counter()
        cand = self.proposer.propose(request)
        self.seconds[request.id] = time.perf_counter() - t0
        return cand


def run_refine_trial(task_id: str, variant: str, rounds: int, proposer, evaluator, seed: int = 0,
                     budgets: Budgets | None = None, prompts: str = "paper") -> RefineTrace:
    """One trial: ``proposer`` (a ProposerWorker-like ``propose(request)``) and ``evaluator``
    (``evaluate(candidate) -> Evaluation``) run in this process. An evaluator that raises ends
    the trial unfinished ("verifier error: ...")."""
    budgets = budgets or Budgets(proposals=rounds, evaluations=rounds, wall_time_s=float("inf"),
                                 stop_when_accepted=True)
    settings = EngineSettings(seed=seed, batch_size=1, checkpoint_interval=10 ** 9, budgets=budgets,
                              weights={_only_proposer(proposer): 1.0})
    strategy = RefineStrategy(RefineOptions(rounds=rounds, trials=1, prompts=prompts),
                              StrategyContext(seed=seed, batch_size=1))
    store, timed = MemoryStore(), TimedProposer(proposer)
    pool = LocalPool(timed, evaluator)
    engine = Engine(settings, strategy, pool, store, Progress(budgets, stream=io.StringIO()))
    try:
        stopped = engine.run()
        if strategy.ended:
            stopped = strategy.ended[0]
        elif stopped.startswith(("token budget", "USD budget")):
            stopped = f"budget exhausted: {stopped}"
    except Exception as exc:  # the verifier promises not to raise; keep the trial's record if it does
        stopped = f"verifier error: {type(exc).__name__}: {exc}"
    return trace_of(store.events, task_id, variant, rounds, stopped, timed.seconds)


def _only_proposer(worker) -> str:
    names = list(getattr(worker, "proposers", {}) or ["structural"])
    if len(names) != 1:
        raise ValueError(f"a refine trial uses exactly one proposer, got {names}")
    return names[0]


def trace_of(events: list, task_id: str, variant: str, rounds: int, stopped: str,
             propose_seconds: dict[str, float]) -> RefineTrace:
    """The trial's rounds from the engine's events (proposals in order; their evaluations by id)."""
    evaluations = {e.evaluation.id: e.evaluation for e in events if isinstance(e, EvaluationEvent)}
    systems = {e.digest: e.text for e in events if isinstance(e, SystemPromptEvent)}
    trace = RefineTrace(task_id, variant, rounds, stopped=stopped)
    for e in events:
        if not isinstance(e, ProposalEvent):
            continue
        cand, ev = e.candidate, evaluations.get(e.candidate.id)
        program = JudgedProgram(cand, ev)
        p_s, v_s = propose_seconds.get(cand.id, 0.0), (ev.seconds if ev is not None else 0.0)
        trace.rounds.append(RefineRound(
            index=len(trace.rounds), prompt_id=cand.prompt_id, prompt_kind=str(cand.prompt_meta.get("kind", "")),
            model=cand.model, response=cand.response, candidate=cand.to_dict(), parse_error=cand.parse_error,
            verdict=program.verdict, feedback="" if cand.error_kind == "api" else program.feedback,
            accepted=program.accepted, tokens_in=cand.tokens_in, tokens_out=cand.tokens_out, cost_usd=cand.cost_usd,
            seconds=p_s + v_s, propose_seconds=p_s, verify_seconds=v_s, prompt=cand.chat_messages(systems.get(str(cand.prompt_meta.get("system"))))))
    return trace

