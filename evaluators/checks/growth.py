"""Growth classes of running time as a function of n: the common language of the complexity
audit (what was claimed, what was measured) and of class consistency.

Three kinds, ordered: polynomial n^d (log factors ignored) < exponential in sqrt(n)
2^(c sqrt n) < exponential in n 2^(c n). Within a kind, the degree d or rate c orders them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

KINDS = ("poly", "exp_sqrt", "exp")


@dataclass(frozen=True)
class Growth:
    kind: str          # one of KINDS
    rate: float = 1.0  # polynomial degree d, or c in 2^(c sqrt n) / 2^(c n)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown growth kind {self.kind!r}")

    @property
    def rank(self) -> int:
        return KINDS.index(self.kind)

    @property
    def polynomial(self) -> bool:
        return self.kind == "poly"

    def describe(self) -> str:
        if self.rate == float("inf"):  # an unstated degree ("poly(n)") or a faster-than-class rate ("n!")
            return {"poly": "polynomial of unstated degree",
                    "exp_sqrt": "faster than 2^(c sqrt n) for every c, slower than 2^(c n)",
                    "exp": "faster than 2^(c n) for every c"}[self.kind]
        if self.kind == "exp_sqrt" and self.rate == 0:  # quasi-polynomial: 2^(log^2 n), n^(log n)
            return "faster than any polynomial, slower than 2^(c sqrt n)"
        if self.kind == "poly":
            d = round(self.rate, 1)
            return "O(1)" if d == 0 else f"polynomial, about n^{d:g}"
        if self.kind == "exp_sqrt":
            return f"exponential in sqrt(n), about 2^({self.rate:.2g} sqrt n)"
        return f"exponential in n, about 2^({self.rate:.2g} n)"


_NUM = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_DESCRIBED = (  # (pattern, kind, rate or None to read group 1): the sentences of Growth.describe, in its order
    (re.compile(r"^\s*O\(1\)"), "poly", 0.0),
    (re.compile(r"^\s*polynomial of unstated degree"), "poly", math.inf),
    (re.compile(r"^\s*polynomial, about n\^" + _NUM), "poly", None),
    (re.compile(r"^\s*faster than any polynomial"), "exp_sqrt", 0.0),
    (re.compile(r"^\s*exponential in sqrt\(n\), about 2\^\(" + _NUM + r" sqrt n\)"), "exp_sqrt", None),
    (re.compile(r"^\s*faster than 2\^\(c sqrt n\)"), "exp_sqrt", math.inf),
    (re.compile(r"^\s*exponential in n, about 2\^\(" + _NUM + r" n\)"), "exp", None),
    (re.compile(r"^\s*faster than 2\^\(c n\)"), "exp", math.inf),
)


def from_description(text: str | None) -> Growth | None:
    """The Growth whose :meth:`Growth.describe` begins ``text``; None when it is not one. Only to upgrade
    Verdicts journaled before the measured growth was recorded as typed fields (``Complexity.measured_kind``)."""
    if isinstance(text, str):
        for pattern, kind, rate in _DESCRIBED:
            m = pattern.match(text)
            if m:
                return Growth(kind, float(m.group(1)) if rate is None else rate)
    return None


def at_least(claim: Growth, measured: Growth, degree_slack: float = 0.75) -> bool:
    """True when ``claim`` is no lower than ``measured``.

    Kinds are compared strictly (an exponential cost claimed polynomial is dishonest);
    polynomial degrees with ``degree_slack`` for timing noise and log factors; rates of
    exponentials are not compared, since a few timing points cannot pin them down.
    """
    if claim.rank != measured.rank:
        return claim.rank > measured.rank
    if claim.kind == "poly":
        return measured.rate <= claim.rate + degree_slack
    return True


def log2_steps(g: Growth, n: int) -> float:
    """log2 of the elementary steps of growth ``g`` at size n (n spins), up to its constant factor."""
    return {"poly": g.rate * math.log2(max(n, 1)), "exp_sqrt": g.rate * math.sqrt(n), "exp": g.rate * n}[g.kind]
