"""Exact algebra on a task's formula: the terms as monomials in +-1 variables, like terms merged.

A formula (tasks/formula.py) writes its exponent as sums of ``scale * coef * prod_k (a * v[site_k] + b)``
in {0, 1} or {-1, +1} variables, as a weight W or an energy E. Compiling it into a model needs one
normal form, reached here by exact rational arithmetic (``fractions.Fraction``), never by floats:

1. the weight convention (an energy term changes sign);
2. the change of variables to spins: a {0, 1} variable x is (1 + s)/2, so its affine factor
   (a, b) becomes (a/2, a/2 + b) (docs/derivations.md, "Change of variables");
3. every product of affine factors multiplied out into one monomial per subset of its variables
   (prod_k (a_k s_k + b_k) = sum over subsets S of prod_{k in S} a_k s_k prod_{k not in S} b_k), the
   factors on a variable written twice in one product first combined into one (s^2 = 1; a {0, 1}
   variable's x^2 = x follows, as it was written (1 + s)/2 in step 2);
4. like terms merged (same loops, coefficient text and variables) with their scales added, and terms
   whose scale is zero dropped, so a paraphrase that expanded (2x - 1)(2y - 1) in {0, 1} variables
   comes back to the one term it was written from, exactly.

Monomials without variables are the energy constant the change of variables leaves. For the
disorder averages of tasks/formula_extras.py, :func:`lift` moves the random signs that a
coefficient reads (``eta[b]``, ``(2 * eta[b] - 1)``) into the monomial as variables of their own
family, so the inner weight becomes a model over the signs and the spins together.

:func:`rank_one_block` recognises the all-pairs sums sum_{i<j} u_i u_j s_i s_j that a dense
coupling matrix of rank one is written as (Mattis, Curie-Weiss), so a compiled reader keeps them as
one vector instead of n^2/2 pairs.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from fractions import Fraction
from itertools import product

from tasks.formula import ONE, SUBSTITUTION, ZERO, Formula, Loop, _names, _normal, _product_factors, _rename, \
    _subscript_base, _subscripts

#: a product of more affine factors than this is not multiplied out (2^k monomials)
MAX_EXPANDED_FACTORS = 10


@dataclass(frozen=True)
class Site:
    """One factor a * v[index] + b of a monomial; ``family`` names the variable array."""

    family: str
    index: tuple[str, ...]
    affine: tuple[Fraction, Fraction] = (ONE, ZERO)

    @property
    def key(self) -> tuple:
        return (self.family, self.index)


@dataclass(frozen=True)
class Monomial:
    """scale * coef * prod(sites), summed over ``loops`` (inclusive ranges); coef None means 1.
    Terms of the weight W: Z = sum exp(+beta W) (or exp(+W) without an inverse temperature)."""

    loops: tuple[Loop, ...]
    scale: Fraction
    coef: str | None
    sites: tuple[Site, ...]

    @property
    def plain(self) -> bool:
        return all(s.affine == (ONE, ZERO) for s in self.sites)

    def letters(self) -> set[str]:
        return {lp.index for lp in self.loops}


def monomials(formula: Formula) -> list[Monomial]:
    """The formula's terms as weight monomials (an energy's terms change sign)."""
    sign = 1 if formula.convention == "weight" else -1
    return [Monomial(t.loops, sign * t.scale, t.coef, tuple(Site(formula.variable, s, t.affine) for s in t.sites))
            for t in formula.terms]


def lift(monos: list[Monomial], family: str) -> list[Monomial]:
    """Move every coefficient factor that reads ``family`` into the sites: each such factor must be
    affine in exactly one entry of the family, e.g. ``eta[d][r][c]`` or ``(2 * eta[d][r][c] - 1)``.
    ValueError when a coefficient reads the family any other way."""
    out = []
    for m in monos:
        if m.coef is None or family not in _names(m.coef):
            out.append(m)
            continue
        keep, sites = [], list(m.sites)
        for f in _product_factors(ast.parse(m.coef, mode="eval").body):
            if family not in {n.id for n in ast.walk(f) if isinstance(n, ast.Name)}:
                keep.append(f)
                continue
            sites.append(_affine_site(f, family))
        scale, rest = m.scale, []
        for f in keep:                               # numbers split off by the parse join the scale
            if isinstance(f, ast.Constant) and isinstance(f.value, (int, float)):
                scale *= Fraction(f.value)
            else:
                rest.append(f)
        coef = None if not rest else " * ".join(_factor_text(f) for f in rest)
        out.append(Monomial(m.loops, scale, coef, tuple(sites)))
    return out


def to_spins(monos: list[Monomial], domains: dict[str, str]) -> list[Monomial]:
    """Every variable of a {0, 1} family (``domains[family] == "01"``) written as (1 + s)/2."""
    p, q = SUBSTITUTION[("01", "pm1")]
    return [replace(m, sites=tuple(
        replace(s, affine=(s.affine[0] * p, s.affine[0] * q + s.affine[1])) if domains.get(s.family) == "01" else s
        for s in m.sites)) for m in monos]


def expand(monos: list[Monomial]) -> list[Monomial]:
    """Products of affine factors in +-1 variables multiplied out into plain monomials.

    Factors written on the same variable (same family and index text) are first combined into one
    affine factor, exactly: a function of one s in {-1, +1} is A s + B with B = (f(1) + f(-1))/2,
    A = (f(1) - f(-1))/2 (so s s = 1, and (1 - s)^2 = 2 - 2 s). Only the factors with both A and B
    nonzero branch; a product of plain spins stays one monomial at any arity.
    ValueError when more than MAX_EXPANDED_FACTORS factors branch (2^k monomials)."""
    out = []
    for m in monos:
        sites = _combined(m.sites)
        free = [k for k, s in enumerate(sites) if s.affine[0] != 0 and s.affine[1] != 0]
        if len(free) > MAX_EXPANDED_FACTORS:
            raise ValueError(f"a product of {len(free)} affine factors would multiply out into 2^{len(free)} "
                             f"monomials (at most {MAX_EXPANDED_FACTORS} such factors are)")
        fixed_scale = m.scale
        for s in sites:
            if s.affine[1] == 0:
                fixed_scale *= s.affine[0]
            elif s.affine[0] == 0:
                fixed_scale *= s.affine[1]
        if fixed_scale == 0:
            continue
        for choice in product((True, False), repeat=len(free)):
            take = dict(zip(free, choice))
            scale, kept = fixed_scale, []
            for k, s in enumerate(sites):
                a, b = s.affine
                if k in take:
                    scale *= a if take[k] else b
                if take.get(k, b == 0):
                    kept.append(Site(s.family, s.index))
            out.append(Monomial(m.loops, scale, m.coef, tuple(kept)))
    return out


def branching_factors(m: Monomial) -> int:
    """How many factors of ``m`` (+-1 variables) :func:`expand` branches on: 2^this monomials."""
    return sum(1 for s in _combined(m.sites) if s.affine[0] != 0 and s.affine[1] != 0)


def _combined(sites: tuple[Site, ...]) -> list[Site]:
    """The factors on each variable multiplied into one affine factor in that +-1 variable (first
    occurrence keeps its place)."""
    groups: dict[tuple, list[Site]] = {}
    for s in sites:
        groups.setdefault(s.key, []).append(s)
    out = []
    for group in groups.values():
        if len(group) == 1:
            out.append(group[0])
            continue
        up, down = ONE, ONE                              # the product at s = +1 and at s = -1
        for s in group:
            up, down = up * (s.affine[0] + s.affine[1]), down * (s.affine[1] - s.affine[0])
        out.append(Site(group[0].family, group[0].index, ((up - down) / 2, (up + down) / 2)))
    return out


def merge(monos: list[Monomial]) -> list[Monomial]:
    """Like terms (same loops up to the order of independent loops, same coefficient text, same
    variables in any order) added; zero scales dropped. The first occurrence keeps its place."""
    acc: dict[tuple, Monomial] = {}
    for m in monos:
        key = (_canonical_loops(m.loops), m.coef, tuple(sorted(s.key for s in m.sites)))
        if key in acc:
            acc[key] = replace(acc[key], scale=acc[key].scale + m.scale)
        else:
            acc[key] = replace(m, loops=_canonical_loops(m.loops),
                               sites=tuple(sorted(m.sites, key=lambda s: s.key)))
    return [m for m in acc.values() if m.scale != 0]


def spin_monomials(formula: Formula, domains: dict[str, str] | None = None) -> list[Monomial]:
    """The normal form of the module docstring: weight monomials in +-1 variables, plain
    products, like terms merged."""
    domains = domains if domains is not None else {formula.variable: formula.domain}
    return merge(expand(to_spins(monomials(formula), domains)))


# -- the rank-one (all pairs) pattern ------------------------------------------------------------

@dataclass(frozen=True)
class RankOneBlock:
    """sum_{a<b} scale * rest * u(a) u(b) s[a] s[b] over a, b in 0..hi: the block (u, scale * rest)
    of tasks/model.py, with u(x) the text ``vector`` in the letter ``letter``."""

    family: str
    letter: str
    hi: str
    vector: str | None        # None: u = 1
    weight: str | None        # coefficient factors that read neither index (None: 1)
    scale: Fraction


def rank_one_block(m: Monomial) -> RankOneBlock | None:
    """The block when ``m`` is an all-pairs sum over a 1-index family whose coefficient factorises
    as rest * f(a) * f(b) (the same f); None otherwise."""
    if len(m.loops) != 2 or len(m.sites) != 2 or not m.plain:
        return None
    (a, lo_a, hi_a), (b, lo_b, hi_b) = ((lp.index, lp.lo, lp.hi) for lp in m.loops)
    s1, s2 = m.sites
    if s1.family != s2.family or len(s1.index) != 1 or {s1.index[0], s2.index[0]} != {a, b}:
        return None
    upper = lo_a == "0" and lo_b == _normal(f"{a} + 1") and hi_a == hi_b
    lower = lo_a == "0" and lo_b == "0" and hi_b == _normal(f"{a} - 1")
    if not (upper or lower) or a in _names(hi_a):
        return None
    hi = hi_a
    fa, fb, rest = [], [], []
    factors = [] if m.coef is None else _product_factors(ast.parse(m.coef, mode="eval").body)
    for f in factors:
        names = {n.id for n in ast.walk(f) if isinstance(n, ast.Name)}
        if a in names and b in names:
            return None
        (fa if a in names else fb if b in names else rest).append(_factor_text(f))
    if sorted(_rename(x, {a: b}) for x in fa) != sorted(fb):
        return None
    return RankOneBlock(s1.family, a, hi, " * ".join(fa) if fa else None, " * ".join(rest) if rest else None,
                        m.scale)


# -- helpers -------------------------------------------------------------------------------------

def _factor_text(node: ast.expr) -> str:
    text = ast.unparse(node)
    return f"({text})" if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) else text


def _affine_site(node: ast.expr, family: str) -> Site:
    """The Site of a factor affine in one entry of ``family`` (ValueError otherwise)."""
    subs = [n for n in ast.walk(node) if isinstance(n, ast.Subscript) and _subscript_base(n) == family]
    inner = {id(n.value) for n in subs}
    outer = [n for n in subs if id(n) not in inner]          # whole chains v[i][j], not their parts
    text, targets = ast.unparse(node), {ast.unparse(n) for n in outer}
    if len(targets) != 1 or text.count(next(iter(targets))) != 1:
        raise ValueError(f"a coefficient reads {family} in a way that is not one affine factor: {text}")
    target = next(iter(targets))
    index = _subscripts(ast.parse(target, mode="eval").body)
    if any(family in _names(e) for e in index):
        raise ValueError(f"{family} is used inside its own index: {text}")
    body = text.replace(target, "__v")
    if _names(body) - {"__v"}:
        raise ValueError(f"the factor {text} mixes {family} with other quantities")
    code = compile(ast.parse(body, mode="eval"), "<affine>", "eval")
    f0, f1, f2 = (eval(code, {"__builtins__": {}}, {"__v": Fraction(v)}) for v in (0, 1, 2))  # noqa: S307
    if f2 - f1 != f1 - f0:
        raise ValueError(f"the factor {text} is not affine in {family}")
    return Site(family, index, (Fraction(f1 - f0), Fraction(f0)))


def _canonical_loops(loops: tuple[Loop, ...]) -> tuple[Loop, ...]:
    letters = {lp.index for lp in loops}
    if any(_names(lp.lo) & letters or _names(lp.hi) & letters for lp in loops):
        return loops
    return tuple(sorted(loops, key=lambda lp: lp.index))


__all__ = ["Monomial", "RankOneBlock", "Site", "branching_factors", "expand", "lift", "merge", "monomials",
           "rank_one_block", "spin_monomials", "to_spins"]
