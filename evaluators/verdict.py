"""The Verdict: everything the evaluators found about one candidate, as a versioned record.

``to_dict()`` is the JSON printed by ``evolve verify --json`` and stored in run journals.
Bump ``SCHEMA`` whenever a key changes meaning or disappears (adding keys is compatible).
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field, fields

SCHEMA = 1


@dataclass
class Rung:
    """One size the candidate was run at: wall seconds of its call and log-domain relative error of Z."""

    n: int
    seconds: float
    rel_err: float | None
    passed: bool
    stage: str = "probe"  # "probe" (paper's sizes, brute force) or "ladder" (exact oracle)
    draw: str = "typical"  # ladder parameters: "typical" (the task's sampler), "cold" or "critical"
    note: str = ""         # what the draw was, e.g. "cold: beta = 7.3, beta*|J| = 7.3"


@dataclass
class Frontier:
    """Where and why the ladder stopped short of its last size without a wrong value.

    kind: "time" or "memory" (the candidate's cost: evidence held against a polynomial claim),
    "overflow" (Z does not fit a float: define log_Z), "no_oracle", "ladder_budget" or "ladder_cap"
    (the verifier's own limits, no evidence about the candidate), "claimed_cost" (not run: the
    candidate's own exponential claim prices the call far over its budget)."""

    n: int
    kind: str
    detail: str
    budget_s: float | None = None
    memory_mb: int | None = None


@dataclass
class Numerical:
    passed: bool = False
    max_rel_err: float | None = None
    probes: int = 0
    failed: int = 0
    largest_n_verified: int = 0
    rungs: list[Rung] = field(default_factory=list)
    frontier: Frontier | None = None


@dataclass
class Complexity:
    claimed: str | None = None
    measured: str | None = None
    honest: bool | None = None
    evidence: str | None = None     # the sentence the honesty judgement rests on (None when there is none)


@dataclass
class ClassCheck:
    claimed: str | None = None
    consistent: bool | None = None
    reasons: list[str] = field(default_factory=list)


@dataclass
class PhysicsCheck:
    name: str
    passed: bool
    detail: str


@dataclass
class Physics:
    passed: bool | None = None
    checks: list[PhysicsCheck] = field(default_factory=list)


@dataclass
class SandboxFindings:
    violations: list[str] = field(default_factory=list)


@dataclass
class Verdict:
    task: str
    verdict: str = "reject"  # "accept" | "reject"
    numerical: Numerical = field(default_factory=Numerical)
    complexity: Complexity = field(default_factory=Complexity)
    class_: ClassCheck = field(default_factory=ClassCheck)
    physics: Physics = field(default_factory=Physics)
    sandbox: SandboxFindings = field(default_factory=SandboxFindings)
    feedback: str = ""
    confidence: float | None = None
    schema: int = SCHEMA

    @property
    def accepted(self) -> bool:
        return self.verdict == "accept"

    def to_dict(self) -> dict:
        d = asdict(self)
        out = {"schema": d.pop("schema"), "task": d.pop("task"), "verdict": d.pop("verdict")}
        out["numerical"] = d.pop("numerical")
        out["complexity"] = d.pop("complexity")
        out["class"] = d.pop("class_")
        out["physics"] = d.pop("physics")
        out["sandbox"] = d.pop("sandbox")
        out["feedback"] = d.pop("feedback")
        out.update(d)  # confidence and anything added later
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "Verdict":
        """The Verdict of ``to_dict()`` output; keys this version does not know are ignored
        (adding keys is compatible), a different ``schema`` is refused."""
        if d.get("schema") != SCHEMA:
            raise ValueError(f"Verdict schema {d.get('schema')!r} is not supported (expected {SCHEMA})")
        num = _known(Numerical, d["numerical"])
        num["rungs"] = [Rung(**_known(Rung, r)) for r in num.get("rungs", [])]
        num["frontier"] = Frontier(**_known(Frontier, num["frontier"])) if num.get("frontier") else None
        phys = _known(Physics, d["physics"])
        phys["checks"] = [PhysicsCheck(**_known(PhysicsCheck, c)) for c in phys.get("checks", [])]
        return cls(
            task=d["task"],
            verdict=d["verdict"],
            numerical=Numerical(**num),
            complexity=Complexity(**_known(Complexity, d["complexity"])),
            class_=ClassCheck(**_known(ClassCheck, d["class"])),
            physics=Physics(**phys),
            sandbox=SandboxFindings(**_known(SandboxFindings, d["sandbox"])),
            feedback=d["feedback"],
            confidence=d.get("confidence"),
        )


@functools.cache
def _field_names(cls) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


def _known(cls, d: dict) -> dict:
    names = _field_names(cls)   # cached: a long run's journal decodes ~15 records per Verdict, 100,000s in all
    return {k: v for k, v in d.items() if k in names}
