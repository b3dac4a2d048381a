"""Feature descriptors (the MAP-Elites grid) and behaviour signatures (the FunSearch clusters).

Descriptors of a program, computed once when it is stored:

- ``method``: the method family guessed from its code (:func:`search.negative.classify_method`:
  tensor network, pfaffian/kac-ward, row transfer, enumeration, ...). Different algorithmic
  ideas are what the search must keep apart: a slower row-transfer program is a stepping stone
  a Pfaffian program must not erase.
- ``class``: the claimed tractable-class label (one of the library's labels, ``unlisted`` or
  ``none``): the mapping the proposer believes it uses, which is what the benchmark asks for.
- ``complexity``: the kind of the *measured* cost growth (``poly`` / ``exp_sqrt`` / ``exp`` /
  ``unknown``), ``Verdict.complexity.measured_kind``: the scaling regime keeps an honest
  exponential program alive next to polynomial ones, so partial routes are not lost early.
- ``length``: floor(log2(non-blank lines)), capped at ``length_bins - 1``: short and elaborate
  programs of the same family compete in separate cells, as in AlphaEvolve's default grid.

The objective (verified size, cost, checks) is deliberately not a feature: it is the score.
A cell key is the plain string ``"method=row transfer|class=transfer_matrix|..."`` over the
configured features, so it goes into msgpack as a dict key.

The behaviour signature is the vector of per-rung outcomes ``(n, passed, round(log10
rel_err))`` plus the verdict and the measured growth kind; programs with equal signatures
behave identically on everything the evaluators looked at and form one cluster.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass

from evaluators.checks.growth import KINDS
from evaluators.verdict import Verdict
from search.negative import classify_method
from tasks.base import CLASS_LABELS

FEATURES = ("method", "class", "complexity", "length")
DEFAULT_FEATURES = FEATURES
GROWTH_KINDS = KINDS + ("unknown",)  # cheapest first
UNBOUNDED_RATE = 99.0  # "polynomial of unstated degree", "faster than 2^(c n) for every c"



def measured_growth(verdict: Verdict | None) -> tuple[str, float]:
    """``(kind, rate)`` of the growth the complexity audit measured (its typed fields);
    ``("unknown", UNBOUNDED_RATE)`` when nothing was measured, UNBOUNDED_RATE for an unbounded rate."""
    c = verdict.complexity if verdict is not None else None
    if c is None or c.measured_kind is None:
        return "unknown", UNBOUNDED_RATE
    return c.measured_kind, UNBOUNDED_RATE if c.measured_rate is None else min(UNBOUNDED_RATE, c.measured_rate)


def code_lines(code: str | None) -> int:
    return sum(1 for ln in (code or "").splitlines() if ln.strip())


def class_label(claimed: str | None) -> str:
    if not claimed or not str(claimed).strip():
        return "none"
    label = str(claimed).strip().lower().replace("-", "_").replace(" ", "_")
    return label if label in CLASS_LABELS else "unlisted"


def descriptors(code: str | None, tractable_class: str | None, verdict: Verdict | None) -> dict:
    """Raw descriptors of one program (plain values), from which any configured grid is cut."""
    return {"method": classify_method(code), "class": class_label(tractable_class),
            "complexity": measured_growth(verdict)[0], "lines": code_lines(code)}


@dataclass(frozen=True)
class FeatureSpace:
    """The configured MAP-Elites dimensions: which descriptors, and how many length bins."""

    names: tuple[str, ...] = DEFAULT_FEATURES
    length_bins: int = 10  # floor(log2 lines) in 0..length_bins-1: up to 512+ lines

    def __post_init__(self):
        unknown = [f for f in self.names if f not in FEATURES]
        if unknown:
            raise ValueError(f"unknown features {unknown}; choose from {FEATURES}")
        if self.length_bins < 1:
            raise ValueError("length_bins must be at least 1")

    def value(self, name: str, desc: dict) -> str:
        if name == "length":
            lines = max(1, int(desc.get("lines", 1)))
            return str(min(self.length_bins - 1, int(math.log2(lines))))
        return str(desc.get(name, "unknown"))

    def cell_of(self, desc: dict) -> str:
        """The cell key of a program with descriptors ``desc`` ("all" with no features)."""
        return "|".join(f"{name}={self.value(name, desc)}" for name in self.names) or "all"


def rung_outcomes(verdict: Verdict | None) -> list:
    """``[[n, passed, round(log10 rel_err) or None], ...]`` in the order the rungs ran."""
    out = []
    for r in (verdict.numerical.rungs if verdict is not None else []):
        err = r.rel_err
        decade = None
        if err is not None and math.isfinite(err):
            decade = int(round(math.log10(err))) if err > 0 else -17
            decade = max(-17, decade)  # below double precision every error is "exact"
        elif err is not None:
            decade = 99  # inf / nan: a broken value
        out.append([int(r.n), bool(r.passed), decade])
    return out


def behaviour_signature(verdict: Verdict | None) -> str:
    """A short digest of the rung outcomes, the verdict and the measured growth kind;
    ``"failed"`` for a program that has no verdict."""
    if verdict is None:
        return "failed"
    key = [verdict.verdict, measured_growth(verdict)[0], rung_outcomes(verdict)]
    return hashlib.sha256(json.dumps(key, separators=(",", ":")).encode()).hexdigest()[:16]
