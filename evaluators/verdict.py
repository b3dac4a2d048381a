"""The Verdict: everything the evaluators found about one candidate, as a versioned record.

``to_dict()`` is the JSON printed by ``evolve verify --json`` and stored in run journals.
Bump ``SCHEMA`` whenever a key changes meaning or disappears (adding keys is compatible: ``failure``
was added within schema 1, and a record without it reads as None).

Schema 2 adds ``answer`` (null for an exact program): a candidate that answers with bounds or an
approximation (evaluators/answer_kinds.py) is judged on every instance it ran, and for it
``numerical.passed`` means valid bounds / an honest approximation and its rungs carry no ``rel_err``.
Schema-1 records still load (their ``answer`` is None).
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field, fields

SCHEMA = 2
#: schemas from_dict reads (1: before answers that are not exact programs)
READABLE_SCHEMAS = (1, 2)


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
    measured: str | None = None     # the measured growth in words, with where it came from
    honest: bool | None = None
    evidence: str | None = None     # the sentence the honesty judgement rests on (None when there is none)
    measured_kind: str | None = None    # the measured growth as data: "poly", "exp_sqrt" or "exp" (None: none)
    measured_rate: float | None = None  # its degree or rate c (None with a kind: unbounded, e.g. an unstated degree)


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


#: the cascade's checks in the order they run; the first failed one is what a rejection is remembered by
FAILURE_STAGES = ("sandbox", "did not run", "probes", "promotion ladder", "complexity audit", "class consistency",
                  "physical assertion", "internal evaluator error")


@dataclass
class Failure:
    """The first check of the cascade that failed (``stage``, one of FAILURE_STAGES), what it failed on
    (``subject``: a physical assertion's name, else empty) and why, in one line. Set by the verifier where
    the check fails, so nothing downstream reads the feedback's prose back."""

    stage: str
    reason: str
    subject: str = ""

    def text(self) -> str:
        """``"<stage>[ <subject>]: <reason>"``, the line negative prompting, export and replay show."""
        return f"{self.stage}{' ' + self.subject if self.subject else ''}: {self.reason}"

    def earlier_than(self, other: "Failure | None") -> bool:
        return other is None or FAILURE_STAGES.index(self.stage) < FAILURE_STAGES.index(other.stage)


@dataclass
class AnswerInstance:
    """One instance a bounds or approximation answer ran on. ``lo``/``hi`` (bounds) or ``controls``/``values``
    (approximation) are what it returned (natural logs of the quantity); ``checked``: an exact value was
    known there; ``valid``: the bounds hold / the approximation is honest there (None when unchecked or the
    call failed); ``gap_per_spin`` (hi - lo) / n, ``error_per_spin`` |last value - exact| / n (checked only),
    ``claimed_per_spin`` |last value - previous| / n; ``violation`` by how much a bound misses, relative to
    max(1, |exact|)."""

    n: int
    stage: str                   # "probe" | "ladder"
    draw: str                    # "typical" | "cold" | "critical"
    note: str = ""
    seconds: float = 0.0
    lo: float | None = None
    hi: float | None = None
    controls: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    checked: bool = False
    valid: bool | None = None
    gap_per_spin: float | None = None
    error_per_spin: float | None = None
    claimed_per_spin: float | None = None
    violation: float | None = None
    error: str | None = None     # the call failed or returned a malformed answer


@dataclass
class Answer:
    """A non-exact answer's judgement (schema 2): ``kind`` "bounds" | "approximation"; ``valid`` every
    checked instance held; ``quality`` in (0, 1) (evaluators/bounds_check.py: tighter or more accurate is
    higher), the score's numerical component when valid; ``by_size``: per n, the mean gap / error / claimed
    change per spin and how many draws were checked against an exact value."""

    kind: str
    valid: bool = False
    quality: float = 0.0
    checked: int = 0
    largest_n_checked: int = 0
    largest_n_run: int = 0
    gap_per_spin: float | None = None        # mean over the instances that ran (bounds)
    error_per_spin: float | None = None      # worst over the checked instances (approximation)
    claimed_per_spin: float | None = None    # worst over the instances that ran (approximation)
    by_size: list[dict] = field(default_factory=list)
    instances: list[AnswerInstance] = field(default_factory=list)


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
    failure: Failure | None = None   # the first failed check of a rejection (None: accepted, or written before it existed)
    answer: Answer | None = None      # None: an exact program (Z_efficient / log_Z)
    schema: int = SCHEMA

    @property
    def accepted(self) -> bool:
        return self.verdict == "accept"

    def fail(self, stage: str, reason: str, subject: str = "") -> None:
        """Record a failed check; the earliest stage of the cascade is kept."""
        found = Failure(stage, " ".join(reason.split()), subject)
        if found.earlier_than(self.failure):
            self.failure = found

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
        if d.get("schema") not in READABLE_SCHEMAS:
            raise ValueError(f"Verdict schema {d.get('schema')!r} is not supported (expected one of {READABLE_SCHEMAS})")
        num = _known(Numerical, d["numerical"])
        num["rungs"] = [Rung(**_known(Rung, r)) for r in num.get("rungs", [])]
        num["frontier"] = Frontier(**_known(Frontier, num["frontier"])) if num.get("frontier") else None
        phys = _known(Physics, d["physics"])
        phys["checks"] = [PhysicsCheck(**_known(PhysicsCheck, c)) for c in phys.get("checks", [])]
        return cls(
            task=d["task"],
            verdict=d["verdict"],
            numerical=Numerical(**num),
            complexity=_complexity(d["complexity"]),
            class_=ClassCheck(**_known(ClassCheck, d["class"])),
            physics=Physics(**phys),
            sandbox=SandboxFindings(**_known(SandboxFindings, d["sandbox"])),
            feedback=d["feedback"],
            confidence=d.get("confidence"),
            failure=Failure(**_known(Failure, d["failure"])) if d.get("failure") else None,
            answer=_answer_from(d.get("answer")),
        )


def _answer_from(d: dict | None) -> Answer | None:
    if not d:
        return None
    a = _known(Answer, d)
    a["instances"] = [AnswerInstance(**_known(AnswerInstance, i)) for i in a.get("instances", [])]
    return Answer(**a)


@functools.cache
def _field_names(cls) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


def _known(cls, d: dict) -> dict:
    names = _field_names(cls)   # cached: a long run's journal decodes ~15 records per Verdict, 100,000s in all
    return {k: v for k, v in d.items() if k in names}


def _complexity(d: dict) -> Complexity:
    c = Complexity(**_known(Complexity, d))
    if "measured_kind" not in d and c.measured:       # journaled before the growth was typed: upgraded once
        from evaluators.checks.growth import from_description   # noqa: PLC0415 - the writer's own inverse

        g = from_description(c.measured)
        if g is not None:
            c.measured_kind, c.measured_rate = g.kind, (None if g.rate == float("inf") else g.rate)
    return c
