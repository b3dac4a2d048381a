"""The derivation record: the steps taken (each with its check), the solver, the claims, the program,
the other chains found and the steps that failed. Plain dataclasses whose ``to_dict`` gives plain
types (str, int, float, bool, None, list, dict) for the candidate record and the journal."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field


def _plain(x):
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if hasattr(x, "item") and callable(x.item):        # numpy scalars
        return _plain(x.item())
    return x


@dataclass
class Check:
    """The check of one step: ``passed`` None when nothing could be checked."""

    passed: bool | None
    in_process: float | None = None        # worst relative disagreement, states before and after
    sandbox: float | None = None           # worst relative error of the rendered prefix in the sandbox
    instances: list[str] = field(default_factory=list)   # "n=9 beta=0.53", ...
    detail: str | None = None

    def text(self) -> str:
        if self.passed is None:
            return "not checked" + (f" ({self.detail})" if self.detail else "")
        parts = []
        if self.in_process is not None:
            parts.append(f"in-process {self.in_process:.1e}")
        if self.sandbox is not None:
            parts.append(f"sandbox {self.sandbox:.1e}")
        head = "passed" if self.passed else "FAILED"
        where = f" on {len(self.instances)} instances" if self.instances else ""
        measured = f" ({', '.join(parts)})" if parts else ""
        return f"{head}{where}{measured}" + (f": {self.detail}" if self.detail and not self.passed else "")


@dataclass
class Step:
    """One step: the action, its parameters, what it did, and its check."""

    action: str
    summary: str
    params: dict = field(default_factory=dict)
    check: Check = field(default_factory=lambda: Check(None))
    #: mean change of log_shift over the check instances (log Z before = log Z after + change)
    log_change: float | None = None
    #: what the step left, in words (on the largest instance the view ran)
    result: str = ""

    def to_dict(self) -> dict:
        return _plain({"action": self.action, "summary": self.summary, "params": self.params,
                       "log_change": self.log_change, "result": self.result, "check": asdict(self.check)})


@dataclass
class Plan:
    """A chain of actions ending in a solver, with the claims the chain implies."""

    actions: tuple[tuple[str, dict], ...]
    solver: str
    solver_options: dict
    labels: tuple[str, ...]
    complexity: str
    justification: str
    cost: tuple                      # (growth rank, poly rate, fallback, number of steps, rate, solver order)

    @property
    def key(self) -> str:
        return " -> ".join([a for a, _ in self.actions] + [self.solver])

    def to_dict(self) -> dict:
        return _plain({"actions": [[a, o] for a, o in self.actions], "solver": self.solver,
                       "solver_options": self.solver_options, "labels": list(self.labels),
                       "complexity": self.complexity, "cost": list(self.cost)})


@dataclass
class Derivation:
    """The outcome of a derivation search for one formula of one task."""

    task_id: str
    source: str                                   # "the task's formula", "paraphrase 3", ...
    steps: list[Step] = field(default_factory=list)
    plan: Plan | None = None
    tractable_class: str | None = None
    complexity_O: str | None = None
    confidence: float = 0.0
    justification: str = ""
    program: str | None = None
    plans: list[Plan] = field(default_factory=list)
    failed: list[Step] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None                      # why there is no program at all
    #: when nothing polynomial was found: the structure measured and why each step and solver did not apply
    diagnosis: list[str] = field(default_factory=list)
    #: when nothing polynomial is exact: programs answering with bounds or an approximation
    #: (search/derivation/answers.py AnswerPlan records)
    answers: list = field(default_factory=list)

    @property
    def chain(self) -> str:
        names = [s.action for s in self.steps]
        return " -> ".join(names + ([self.plan.solver] if self.plan else []))

    def record(self) -> list[dict]:
        """The steps as plain dicts (the Candidate's ``derivation`` field), the solver last."""
        out = [s.to_dict() for s in self.steps]
        if self.plan is not None:
            out.append(_plain({"action": "solve", "summary": self.plan.solver, "params": self.plan.solver_options,
                               "claims": {"tractable_class": self.tractable_class, "complexity_O": self.complexity_O},
                               **({"diagnosis": list(self.diagnosis)} if self.diagnosis else {})}))
        return out
