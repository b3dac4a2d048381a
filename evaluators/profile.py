"""Where one evaluation's time goes: a small typed record the cascade fills in as it runs.

Every entry is one piece of work, in wall seconds on the evaluator's host side. Stages:

==================  =====================================================================
``static_check``    the sandbox's AST policy check of the code (remembered per code: later runs skip it)
``sandbox_start``   starting the sandbox's warm fork server when it is not up (an evaluator starts
                    it before its first candidate, so this is near zero in a search)
``probe_references`` exact log Z at the probe sizes (brute force, cached)
``probes``          the probe run (one sandbox run of every probe call)
``ladder_call``     one ladder draw run in the sandbox (``n``, ``draw``; ``note`` "timeout",
                    "memory", "wrong", ... when it did not pass)
``reference``       the exact value of one ladder draw (``note``: where it came from and the method)
``timing_fit``      fitting growth models to the timings (numpy only)
``timing_runs``     the judge's extra timing calls in the sandbox
``complexity_audit`` the claim parse, the code's static cost analysis and the frontier reading
``class_analysis``  the task family's structure (cached per process) and class consistency
``physics_run``     the physical assertions' one sandbox run (every assertion's calls)
``physics:<name>``  one assertion: the host's seconds on its references and checks (outside
                    ``physics_run``); ``candidate_s``: its own calls' seconds inside that run
==================  =====================================================================

``candidate_s`` is the part of a sandbox stage spent inside the candidate's own calls (as the
child measured it), so ``seconds - candidate_s`` is the sandbox's overhead for that stage (for
``physics:<name>`` it is a share of ``physics_run``'s). Entries never overlap in time: their
seconds add up to at most the evaluation's wall time.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Iterator


@dataclass(frozen=True)
class StageTime:
    stage: str                      # one of the stages in the module doc
    seconds: float                  # wall seconds on the evaluator
    n: int | None = None            # the size, for per-size stages
    draw: str = ""                  # "typical" | "cold" | "critical" for ladder calls and references
    note: str = ""                  # e.g. "timeout", "disk planar" (a reference read from the disk cache)
    candidate_s: float | None = None   # seconds inside the candidate's calls (sandbox stages only)

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v not in (None, "")}

    @classmethod
    def from_dict(cls, d: dict) -> "StageTime":
        n = d.get("n")
        cand = d.get("candidate_s")
        return cls(str(d["stage"]), float(d["seconds"]), None if n is None else int(n), str(d.get("draw") or ""),
                   str(d.get("note") or ""), None if cand is None else float(cand))


@dataclass
class Profile:
    """The stages of one evaluation, in the order they ran."""

    stages: list[StageTime] = field(default_factory=list)

    def add(self, stage: str, seconds: float, **fields) -> None:
        self.stages.append(StageTime(stage, float(seconds), **fields))

    @contextmanager
    def time(self, stage: str, **fields) -> Iterator[dict]:
        """Time the block as one ``stage``; the block may set ``note`` or ``candidate_s`` in the
        dict it is given."""
        extra: dict = {}
        started = time.perf_counter()
        try:
            yield extra
        finally:
            self.add(stage, time.perf_counter() - started, **{**fields, **extra})

    def total(self, prefix: str = "") -> float:
        return sum(s.seconds for s in self.stages if s.stage.startswith(prefix))

    def to_list(self) -> list[dict]:
        return [s.to_dict() for s in self.stages]

    @classmethod
    def from_list(cls, items) -> "Profile":
        return cls([StageTime.from_dict(d) for d in items or ()])


def timed(profile: Profile | None, stage: str, **fields):
    """``profile.time(...)``, or a block that records nothing when there is no profile."""
    return profile.time(stage, **fields) if profile is not None else _untimed()


@contextmanager
def _untimed() -> Iterator[dict]:
    yield {}
