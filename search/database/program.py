"""The stored program and its score.

Score: a tuple of plain floats compared lexicographically (bigger is better), index by index:

0. status: 2 accepted, 1 judged but rejected, 0 failed (no verdict, unparsable verdict, no
   code, or sandbox violations: such a program is recorded but never enters a cell).
1. numerical pass (1/0): a program that gave a wrong value anywhere is wrong, however far it got. An answer
   that is not an exact program (evaluators/answer_kinds.py) puts its quality here when it holds: valid
   bounds in [0.5, 1), tighter higher, an honest approximation in (0, 0.5), more accurate higher
   (evaluators/bounds_check.py); so exact > bounds > approximation > wrong, each ordered within.
2. log2(1 + largest verified n): how far past brute force the values were checked.
3. minus the growth kind: poly 0 > exp_sqrt -1 > exp -2 > unknown -3. The measured kind, except
   where the complexity audit found the claim honest and the claim is the costlier (an exponential
   row transfer timed at small sizes looks polynomial; its honest claim says what it is) or nothing
   could be measured (a program too fast for the timer): then the claim's.
4. minus the rate of that growth (polynomial degree, or c of 2^(c sqrt n) / 2^(c n)), quantised
   (degrees to 0.5, exponential rates to 0.25) so that timing noise does not decide the order
   over the checks below; unstated / unbounded rates count as 99.
5. physics passed, 6. class consistent, 7. complexity honest: 1 yes, 0.5 not judged, 0 no.
8. minus the length of the canonical code (:func:`search.database.dedup.canonical_code`, so
   comments and docstrings cost nothing): at equal merit the shorter program wins.

Accepted programs have passed everything, so among them the order is: farther verified, then
cheaper growth, then shorter. :class:`NamedScore` (:func:`named_score`) reads a score back with
names (status, largest n verified, growth, checks, code length) for people and JSON;
the tuple stays what the database and the tree compare. :func:`fitness` squeezes a score into one number in [0, 1] for
softmax selection: a weighted sum of the components normalised to [0, 1] with weights halving
from one index group to the next (status, numerical, size, growth, checks, length), so status
and numerical pass dominate exactly and the rest nearly lexicographically. Accepted programs
have fitness of at least 80/95 = 0.84, judged-but-rejected ones 32/95 to 63/95, failed ones less.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from evaluators.checks.complexity_claim import ClaimParseError, parse_claim
from evaluators.verdict import Verdict
from search.database.dedup import canonical_code, digest
from search.database.features import GROWTH_KINDS, UNBOUNDED_RATE, behaviour_signature, descriptors, measured_growth
from tasks.registry import get_task

SCORE_FIELDS = ("status", "numerical", "log2_n", "growth_kind", "growth_rate", "physics", "class", "honest",
                "length")
FAILED_SCORE = (0.0, 0.0, 0.0, -3.0, -UNBOUNDED_RATE, 0.0, 0.0, 0.0, 0.0)


def score_judged(score) -> bool:
    """True when the score is of a judged program (accepted or rejected), not a failed one."""
    return bool(score) and float(score[SCORE_FIELDS.index("status")]) > 0.0


def score_accepted(score) -> bool:
    return bool(score) and float(score[SCORE_FIELDS.index("status")]) == 2.0


def score_code_length(score) -> float:
    """Characters of canonical code (the score stores its negative, so shorter ranks higher)."""
    return -float(score[SCORE_FIELDS.index("length")])


def _tri(value) -> float:
    return 0.5 if value is None else (1.0 if value else 0.0)


def _quantise_rate(kind: str, rate: float) -> float:
    if not math.isfinite(rate) or rate >= UNBOUNDED_RATE:
        return UNBOUNDED_RATE
    step = 0.5 if kind == "poly" else 0.25
    return min(UNBOUNDED_RATE, round(max(0.0, rate) / step) * step)


def score_of(verdict: Verdict | None, code: str | None, canonical: str | None = None) -> tuple[float, ...]:
    """The lexicographic score of a judged program (see the module docstring); pass
    ``canonical`` when ``canonical_code(code)`` is already at hand."""
    canon = canonical if canonical is not None else (canonical_code(code) if code else None)
    length = -float(len(canon if canon is not None else (code or "")))
    if not code or verdict is None or verdict.sandbox.violations:
        return FAILED_SCORE[:-1] + (length,)
    kind, rate = _growth(verdict)
    n = max(0, int(verdict.numerical.largest_n_verified or 0))
    numerical = 1.0 if verdict.numerical.passed else 0.0
    if verdict.answer is not None:
        numerical = float(verdict.answer.quality) if verdict.numerical.passed else 0.0
    return (2.0 if verdict.accepted else 1.0,
            numerical,
            round(math.log2(1 + n), 9),
            -float(GROWTH_KINDS.index(kind)),
            -_quantise_rate(kind, rate),
            _tri(verdict.physics.passed),
            _tri(verdict.class_.consistent),
            _tri(verdict.complexity.honest),
            length)


def _growth(verdict: Verdict) -> tuple[str, float]:
    """(kind, rate) of the score's growth components (see the module docstring)."""
    kind, rate = measured_growth(verdict)
    if verdict.complexity.honest is not True:
        return kind, rate
    claim = _claimed(verdict.complexity.claimed, verdict.task)
    if claim is not None and (kind == "unknown" or GROWTH_KINDS.index(claim[0]) > GROWTH_KINDS.index(kind)):
        return claim
    return kind, rate


def _claimed(text: str | None, task_id: str) -> tuple[str, float] | None:
    """(kind, rate) of a claimed complexity, None when it does not parse (L is the side of the task's
    lattice when it has one)."""
    try:
        lattice = bool(get_task(task_id).square_lattice)
    except KeyError:
        lattice = False
    try:
        g = parse_claim(text, lattice)
    except ClaimParseError:
        return None
    return g.kind, min(UNBOUNDED_RATE, g.rate)


STATUS_NAMES = {2.0: "accepted", 1.0: "rejected", 0.0: "failed"}


def _tri_back(x: float) -> bool | None:
    return None if x == 0.5 else x == 1.0


@dataclass(frozen=True)
class NamedScore:
    """A score read back with names (see the module docstring for each component).

    ``status``: "accepted", "rejected" (judged) or "failed" (no verdict, no code, sandbox
    violations); ``largest_n_verified``: spins, recovered exactly from log2(1 + n);
    ``growth``: the growth kind of the score (measured, or the honest claim; see the module docstring) and ``growth_rate`` its
    quantised rate (polynomial degree, or c of 2^(c sqrt n) / 2^(c n)), None when unstated or
    unbounded; the three checks are True / False / None (not judged); ``code_length`` in
    characters of canonical code; ``fitness`` the one-number squeeze in [0, 1].
    """

    status: str
    numerical_pass: bool
    largest_n_verified: int
    growth: str
    growth_rate: float | None
    physics: bool | None
    class_consistent: bool | None
    complexity_honest: bool | None
    code_length: int
    fitness: float
    #: "exact", "bounds" or "approximation" for a program whose answer holds (numerical component 1,
    #: [0.5, 1), (0, 0.5)); None when it does not
    answer: str | None = None
    quality: float = 0.0                     # the numerical component itself

    def to_dict(self) -> dict:
        return asdict(self)

    def growth_text(self) -> str:
        if self.growth == "unknown":
            return "growth not measured"
        if self.growth_rate is None:
            return {"poly": "polynomial growth (degree unstated)", "exp_sqrt": "growth 2^(c sqrt n)",
                    "exp": "growth 2^(c n)"}[self.growth]
        rate = f"{self.growth_rate:g}"
        return {"poly": f"growth n^{rate}", "exp_sqrt": f"growth 2^({rate} sqrt n)",
                "exp": f"growth 2^({rate} n)"}[self.growth]

    def text(self) -> str:
        """One line, e.g. "accepted; values right; largest n verified 4096; growth n^1.5; physics
        yes, class consistent yes, complexity honest yes; 412 chars; fitness 0.9641"."""
        def yn(x):
            return "not judged" if x is None else ("yes" if x else "no")
        if self.status == "failed":   # nothing was judged: the zeros of the tuple are not verdicts
            return f"failed (no code, no verdict or a sandbox violation); {self.code_length} chars; fitness {self.fitness:.4f}"
        values = {"bounds": f"valid bounds (quality {self.quality:.4f})",
                  "approximation": f"honest approximation (quality {self.quality:.4f})"}.get(
            self.answer or "", f"values {'right' if self.numerical_pass else 'wrong'}")
        return (f"{self.status}; {values}; largest n verified "
                f"{self.largest_n_verified}; {self.growth_text()}; physics {yn(self.physics)}, class consistent "
                f"{yn(self.class_consistent)}, complexity honest {yn(self.complexity_honest)}; "
                f"{self.code_length} chars; fitness {self.fitness:.4f}")


def named_score(score) -> NamedScore | None:
    """The named view of a score tuple (:data:`SCORE_FIELDS` order); None when ``score`` is not
    one (wrong length, not numbers)."""
    try:
        s = [float(x) for x in score]
    except (TypeError, ValueError):
        return None
    if len(s) != len(SCORE_FIELDS) or s[0] not in STATUS_NAMES or not all(math.isfinite(x) for x in s):
        return None
    kind = GROWTH_KINDS[min(len(GROWTH_KINDS) - 1, max(0, int(round(-s[3]))))]
    rate = -s[4]
    answer = None if s[1] <= 0.0 else "exact" if s[1] == 1.0 else "bounds" if s[1] >= 0.5 else "approximation"
    return NamedScore(status=STATUS_NAMES[s[0]], numerical_pass=s[1] == 1.0, answer=answer, quality=s[1],
                      largest_n_verified=int(round(2.0 ** s[2] - 1)), growth=kind,
                      growth_rate=None if rate >= UNBOUNDED_RATE else rate, physics=_tri_back(s[5]),
                      class_consistent=_tri_back(s[6]), complexity_honest=_tri_back(s[7]),
                      code_length=int(round(-s[8])), fitness=fitness(s))


# per unit of: status (0, 1, 2), numerical, size, growth, checks, length (each but status in [0, 1]);
# every weight exceeds the sum of those after it, so status and numerical pass dominate exactly
_WEIGHTS = (32.0, 16.0, 8.0, 4.0, 2.0, 1.0)
_TOTAL = 2 * _WEIGHTS[0] + sum(_WEIGHTS[1:])


def fitness(score) -> float:
    """One number in [0, 1], increasing in every score component (for softmax selection)."""
    s = [float(x) for x in score]
    kind_rank = -s[3]
    growth = ((3.0 - kind_rank) + 1.0 / (1.0 + max(0.0, -s[4]))) / 4.0
    parts = (s[0], s[1], min(1.0, s[2] / 16.0), growth, (s[5] + s[6] + s[7]) / 3.0,
             1.0 / (1.0 + max(0.0, -s[8]) / 1000.0))
    return sum(w * p for w, p in zip(_WEIGHTS, parts)) / _TOTAL


@dataclass
class Program:
    """One judged program as the database keeps it (plain values; ``to_dict`` is msgpack-ready).

    Built with :meth:`new`, which computes ``score``, ``signature`` (behaviour cluster),
    ``code_hash`` (normalised, :mod:`search.database.dedup`) and ``descriptors`` (features).
    The database sets ``island``, ``seq`` (global order of arrival) and counts ``children``
    (evaluated programs whose first parent is this one). A migrated or reset copy gets a new
    id and ``copy_of`` = the id of the original program.
    """

    id: str
    code: str
    verdict: Verdict | None = None
    tractable_class: str | None = None
    complexity_O: str | None = None
    confidence: float | None = None
    parent_ids: list = field(default_factory=list)
    score: tuple = FAILED_SCORE
    signature: str = "failed"
    code_hash: str = ""
    descriptors: dict = field(default_factory=dict)
    island: int = -1
    seq: int = -1
    children: int = 0
    copy_of: str | None = None

    @classmethod
    def new(cls, id: str, code: str | None, verdict: Verdict | None = None, tractable_class: str | None = None,
            complexity_O: str | None = None, confidence: float | None = None, parent_ids=()) -> "Program":
        code = code or ""
        canon = canonical_code(code)
        return cls(id=str(id), code=code, verdict=verdict, tractable_class=tractable_class,
                   complexity_O=complexity_O, confidence=None if confidence is None else float(confidence),
                   parent_ids=[str(p) for p in parent_ids], score=score_of(verdict, code, canon),
                   signature=behaviour_signature(verdict), code_hash=digest(canon, code),
                   descriptors=descriptors(code, tractable_class, verdict))

    @classmethod
    def from_candidate(cls, candidate, verdict: Verdict | None) -> "Program":
        """From a :class:`search.candidate.Candidate` (or anything with its attributes) and its Verdict."""
        return cls.new(candidate.id, candidate.code, verdict, candidate.tractable_class, candidate.complexity_O,
                       candidate.confidence, candidate.parent_ids)

    @property
    def failed(self) -> bool:
        return not score_judged(self.score)

    @property
    def accepted(self) -> bool:
        return score_accepted(self.score)

    @property
    def fitness(self) -> float:
        return fitness(self.score)

    def rank_key(self) -> tuple:
        """Sort key, best first: higher score, then earlier arrival."""
        return tuple(-x for x in self.score) + (self.seq, self.id)

    def to_dict(self) -> dict:
        return {"id": self.id, "code": self.code, "verdict": None if self.verdict is None else self.verdict.to_dict(),
                "tractable_class": self.tractable_class,
                "complexity_O": self.complexity_O, "confidence": self.confidence,
                "parent_ids": list(self.parent_ids), "score": [float(x) for x in self.score],
                "signature": self.signature, "code_hash": self.code_hash, "descriptors": dict(self.descriptors),
                "island": self.island, "seq": self.seq, "children": self.children, "copy_of": self.copy_of}

    @classmethod
    def from_dict(cls, d: dict) -> "Program":
        d = dict(d)
        d["score"] = tuple(float(x) for x in d["score"])
        d["parent_ids"] = list(d.get("parent_ids", []))
        d["descriptors"] = dict(d.get("descriptors", {}))
        d["verdict"] = None if d.get("verdict") is None else Verdict.from_dict(d["verdict"])
        return cls(**d)

    def copy_as(self, new_id: str, island: int, seq: int) -> "Program":
        """A copy for another island (migration, reset); lineage follows ``copy_of``."""
        d = self.to_dict()
        d.update(id=new_id, island=island, seq=seq, children=0, copy_of=self.copy_of or self.id)
        return Program.from_dict(d)
