"""Formulas for the quantities that are not a plain Z over one set of variables (the Tier-2 tasks),
built from the same pieces as tasks/formula.py so that text and numbers again come from one tree.

* :class:`ConstrainedSum` (T18): Q = sum over the assignments x that satisfy every parity condition
  of exp(+W(x)) (``convention`` "weight") or exp(-E(x)) ("energy"); no inverse temperature. A
  :class:`Parity` condition reads: for every value of its ``each`` loops,
  sum over its ``over`` loops of sum_k (a * x[site_k] + b)  =  rhs  (mod 2).
* :class:`DisorderAverage` (T19, T20): a second family of variables (the random signs, ``disorder``)
  weighted by exp(+-C(eta)), and an ``inner`` formula over the first family whose coefficients read
  the signs. The quantity is sum_eta exp(+-C(eta)) * A(eta), with A(eta) the mean energy of the inner
  formula at the reference inverse temperature ``reference`` (statistic "mean") or the ratio of its
  sums at params["beta"] and at the reference ("ratio").

The number of variables is the product of a family's shape (here not n: n is the task's size, e.g.
L^2 vertices with 2 L^2 edge variables). Evaluation enumerates every assignment (at most
MAX_VARIABLES per family), the disorder average vectorised over the sign patterns of a chunk.
"""

from __future__ import annotations

import ast
import functools
import math
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np
from scipy.special import logsumexp

from tasks.formula import (DOMAIN_VALUES, ONE, SUBSTITUTION, ZERO, Formula, Loop, _eval, _factor_text,
                           _index_tuples, _loops_text, _normal, _rename, _subscript_base, _subscripts,
                           _term_table)

#: enumeration is exact and exponential: 2^18 assignments (the 3 x 3 torus's edges) is the limit
MAX_VARIABLES = 18


@dataclass(frozen=True)
class Parity:
    """For every value of ``each``: sum over ``over`` of sum_k (a * x[sites[k]] + b) = rhs (mod 2)."""

    each: tuple[Loop, ...]
    over: tuple[Loop, ...]
    sites: tuple[tuple[str, ...], ...]
    rhs: str
    affine: tuple[Fraction, Fraction] = (ONE, ZERO)

    def letters(self) -> set[str]:
        return {lp.index for lp in self.each + self.over}

    def renamed(self, mapping: dict[str, str]) -> "Parity":
        ren = functools.partial(_rename, mapping=mapping)
        loops = lambda ls: tuple(Loop(mapping.get(lp.index, lp.index), ren(lp.lo), ren(lp.hi)) for lp in ls)  # noqa: E731
        return Parity(loops(self.each), loops(self.over), tuple(tuple(ren(e) for e in s) for s in self.sites),
                      ren(self.rhs), self.affine)

    def text(self, variable: str, style: str) -> str:
        lhs = " + ".join(_factor_text(variable, site, self.affine) for site in self.sites)
        if self.over:
            lhs = _loops_text(self.over, style) + (f"({lhs})" if len(self.sites) > 1 else lhs)
        cond = f"{lhs} = {self.rhs} (mod 2)"
        if not self.each:
            return cond
        return "for every " + ", ".join(f"{lp.index} = {lp.lo}..{lp.hi}" for lp in self.each) + ": " + cond

    def holds(self, env: dict, X: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """(B,) bool: the condition, all its instances, on each row of X (B, count) of variable values."""
        a, b = float(self.affine[0]), float(self.affine[1])
        ok = np.ones(len(X), dtype=bool)
        for outer in _index_tuples(self.each, env):
            total, rhs = np.zeros(len(X)), int(_eval(self.rhs, env, outer))
            for local in _index_tuples(self.over, env, outer):
                for site in self.sites:
                    total += a * X[:, _flat(site, env, local, shape)] + b
            ok &= np.rint(total).astype(np.int64) % 2 == rhs % 2
        return ok


def parity(lhs: str, rhs: str, each=(), over=(), variable: str = "x") -> Parity:
    """A condition from its left side written in Python, e.g. ``parity("x[0][r][c] + x[1][r][c]",
    "S[r][c]", each=(("r", "0", "L - 1"), ("c", "0", "L - 1")))``: a sum of subscripted variables."""
    node, sites = ast.parse(lhs, mode="eval").body, []
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        sites.append(node.right)
        node = node.left
    sites.append(node)
    if not all(isinstance(s, ast.Subscript) and _subscript_base(s) == variable for s in sites):
        raise ValueError(f"{lhs!r}: a parity condition is a plain sum of {variable}[...] entries")
    loops = lambda ls: tuple(Loop(*(_normal(x) for x in lp)) for lp in ls)  # noqa: E731
    return Parity(loops(each), loops(over), tuple(_subscripts(s) for s in reversed(sites)), _normal(rhs))


@dataclass(frozen=True)
class ConstrainedSum:
    """Q = sum over x satisfying every condition of exp(+-W(x)); ``weight`` has ``beta_key`` ""."""

    weight: Formula
    constraints: tuple[Parity, ...]

    # the naming interface of tasks/paraphrase.py
    params = property(lambda self: self.weight.params)
    param = property(lambda self: self.weight.param)
    variables = property(lambda self: (self.weight.variable,))
    beta_key = property(lambda self: "")
    domain = property(lambda self: self.weight.domain)
    convention = property(lambda self: self.weight.convention)

    def index_letters(self) -> set[str]:
        return self.weight.index_letters() | {x for c in self.constraints for x in c.letters()}

    def identifiers(self) -> set[str]:
        return self.weight.identifiers() | self.index_letters()

    def fixed_names(self) -> set[str]:
        return self.weight.fixed_names()

    def renamed(self, mapping: dict[str, str]) -> "ConstrainedSum":
        return ConstrainedSum(self.weight.renamed(mapping), tuple(c.renamed(mapping) for c in self.constraints))

    def with_domain(self, domain: str, expand: bool = True) -> "ConstrainedSum":
        if domain == self.weight.domain:
            return self
        p, q = SUBSTITUTION[(self.weight.domain, domain)]
        return ConstrainedSum(self.weight.with_domain(domain, expand),
                              tuple(replace(c, affine=(c.affine[0] * p, c.affine[0] * q + c.affine[1]))
                                    for c in self.constraints))

    def with_convention(self, convention: str) -> "ConstrainedSum":
        return replace(self, weight=self.weight.with_convention(convention))

    def reordered(self, rng: np.random.Generator) -> "ConstrainedSum":
        cons = [replace(c, sites=tuple(c.sites[i] for i in rng.permutation(len(c.sites)))) for c in self.constraints]
        return ConstrainedSum(self.weight.reordered(rng), tuple(cons[i] for i in rng.permutation(len(cons))))

    def log_value(self, params: dict, n: int, chunk: int = 1 << 14) -> float:
        """Natural log of Q by enumerating every assignment (-inf when none satisfies the conditions)."""
        env = self.weight._namespace(params, n)
        shape, count = _shape(self.weight, env)
        sign = 1.0 if self.weight.convention == "weight" else -1.0
        tables = [_term_table(t, env, shape) for t in self.weight.terms]
        parts = [-math.inf]
        for X in _assignments(count, self.weight.domain, chunk):
            keep = np.ones(len(X), dtype=bool)
            for c in self.constraints:
                keep &= c.holds(env, X, shape)
            if keep.any():
                parts.append(logsumexp(sign * _totals(self.weight, tables, X[keep])))
        return float(logsumexp(parts))


@dataclass(frozen=True)
class DisorderAverage:
    """sum over eta of exp(+-C(eta)) * A(eta); see the module docstring. ``reference`` is (name,
    expression) of the reference inverse temperature, e.g. ("bN", "atanh(1 - 2 * p) / J")."""

    disorder: Formula
    inner: Formula
    reference: tuple[str, str]
    statistic: str = "mean"

    def __post_init__(self) -> None:
        if self.statistic not in ("mean", "ratio") or (self.statistic == "ratio") != bool(self.inner.beta_key):
            raise ValueError("statistic 'mean' (inner beta_key '') or 'ratio' (inner beta_key set)")

    @property
    def params(self):
        keys = {p.key for p in self.disorder.params}
        return self.disorder.params + tuple(p for p in self.inner.params if p.key not in keys)

    def param(self, key: str):
        return next(p for p in self.params if p.key == key)

    variables = property(lambda self: (self.disorder.variable, self.inner.variable))
    beta_key = property(lambda self: self.inner.beta_key)
    domain = property(lambda self: self.inner.domain)          # with_domain moves both families
    convention = property(lambda self: self.inner.convention)  # with_convention sets both

    def index_letters(self) -> set[str]:
        return self.disorder.index_letters() | self.inner.index_letters()

    def identifiers(self) -> set[str]:
        return self.disorder.identifiers() | self.inner.identifiers()

    def fixed_names(self) -> set[str]:
        return self.disorder.fixed_names() | self.inner.fixed_names() | {self.reference[0]}

    def renamed(self, mapping: dict[str, str]) -> "DisorderAverage":
        name, expr = self.reference
        return replace(self, disorder=self.disorder.renamed(mapping), inner=self.inner.renamed(mapping),
                       reference=(name, _rename(expr, mapping)))

    def with_domain(self, domain: str, expand: bool = True) -> "DisorderAverage":
        """Both families in ``domain``: the signs' own weight rewritten, and every sign read by the
        inner coefficients replaced by its affine expression in the new variables."""
        inner, disorder = self.inner.with_domain(domain, expand), self.disorder
        if domain != disorder.domain:
            p, q = SUBSTITUTION[(disorder.domain, domain)]
            sub = _FamilySubstitution(disorder.variable, (p, q))
            inner = replace(inner, terms=tuple(
                replace(t, coef=None if t.coef is None else ast.unparse(sub.visit(ast.parse(t.coef, mode="eval"))))
                for t in inner.terms))
            disorder = disorder.with_domain(domain, expand)
        return replace(self, disorder=disorder, inner=inner)

    def with_convention(self, convention: str) -> "DisorderAverage":
        return replace(self, disorder=self.disorder.with_convention(convention),
                       inner=self.inner.with_convention(convention))

    def reordered(self, rng: np.random.Generator) -> "DisorderAverage":
        return replace(self, disorder=self.disorder.reordered(rng), inner=self.inner.reordered(rng))

    def value(self, params: dict, n: int, chunk: int = 1 << 11) -> float:
        """The quantity itself for "mean" (signed), its natural log for "ratio" (positive)."""
        env = self.disorder._namespace(params, n)
        env.update(self.inner._namespace(params, n))
        d_shape, d_count = _shape(self.disorder, env)
        shape, count = _shape(self.inner, env)
        b_ref = float(_eval(self.reference[1], env))
        beta = float(env[self.inner.param(self.inner.beta_key).name]) if self.inner.beta_key else b_ref
        d_sign = 1.0 if self.disorder.convention == "weight" else -1.0
        sign = 1.0 if self.inner.convention == "weight" else -1.0
        d_tables = [_term_table(t, env, d_shape) for t in self.disorder.terms]
        S = next(_assignments(count, self.inner.domain, 1 << count))
        products = _products(self.inner, env, shape, S)                    # (terms, spins), once
        log_parts, signed = [], []
        for Y in _assignments(d_count, self.disorder.domain, chunk):
            log_prob = d_sign * _totals(self.disorder, d_tables, Y)
            env[self.disorder.variable] = np.moveaxis(Y.reshape(len(Y), *d_shape), 0, -1)   # patterns last
            a = sign * (_coefficients(self.inner, env, len(Y)) @ products)  # (patterns, spins): +-W
            top = a.max(axis=1, keepdims=True)
            w_ref = np.exp(b_ref * (a - top))
            z_ref = w_ref.sum(axis=1)
            if self.statistic == "mean":
                mean_energy = -(a * w_ref).sum(axis=1) / z_ref              # the energy is -W
                signed.append(np.exp(log_prob) @ mean_energy)
            else:
                z_beta = np.exp(beta * (a - top)).sum(axis=1)
                log_parts.append(logsumexp(log_prob + (beta - b_ref) * top[:, 0] + np.log(z_beta / z_ref)))
        return float(sum(signed)) if self.statistic == "mean" else float(logsumexp(log_parts))


class _FamilySubstitution(ast.NodeTransformer):
    """eta[...] -> (a * eta[...] + b): the signs written in the other domain inside a coefficient."""

    def __init__(self, family: str, affine: tuple[Fraction, Fraction]):
        self.family, self.affine = family, affine

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        if _subscript_base(node) != self.family:
            return self.generic_visit(node)
        text = _factor_text(self.family, _subscripts(node), self.affine)
        return ast.parse(text, mode="eval").body


def _flat(site: tuple[str, ...], env: dict, local: dict, shape: tuple[int, ...]) -> int:
    idx = tuple(int(_eval(e, env, local)) for e in site)
    if len(idx) != len(shape) or any(not 0 <= i < d for i, d in zip(idx, shape)):
        raise ValueError(f"variable index {idx} outside the shape {shape} (at {local})")
    return int(np.ravel_multi_index(idx, shape))


def _shape(formula: Formula, env: dict) -> tuple[tuple[int, ...], int]:
    shape = tuple(int(_eval(d, env)) for d in formula.shape)
    count = math.prod(shape)
    if count > MAX_VARIABLES:
        raise ValueError(f"enumeration is limited to {MAX_VARIABLES} variables a family; got {count}")
    return shape, count


def _assignments(count: int, domain: str, chunk: int):
    """Every assignment of ``count`` variables in ``domain``, as (chunk, count) value arrays."""
    lo, hi = DOMAIN_VALUES[domain]
    for start in range(0, 2**count, chunk):
        idx = np.arange(start, min(2**count, start + chunk), dtype=np.int64)
        yield np.where((idx[:, None] >> np.arange(count, dtype=np.int64)) & 1 == 1, hi, lo)


def _totals(formula: Formula, tables, X: np.ndarray) -> np.ndarray:
    """(B,) the formula's terms summed on each row of X."""
    total = np.zeros(len(X))
    for (coefs, sites), t in zip(tables, formula.terms):
        a, b = float(t.affine[0]), float(t.affine[1])
        factors = a * X[:, sites] + b if sites.size else np.ones((len(X), len(coefs), 0))
        total += factors.prod(axis=2) @ coefs
    return total


def _products(formula: Formula, env: dict, shape: tuple[int, ...], S: np.ndarray) -> np.ndarray:
    """(term instances, len(S)): each instance's product of (a * s + b) factors on every row of S."""
    rows = []
    for t in formula.terms:
        a, b = float(t.affine[0]), float(t.affine[1])
        for local in _index_tuples(t.loops, env):
            prod = np.ones(len(S))
            for site in t.sites:
                prod = prod * (a * S[:, _flat(site, env, local, shape)] + b)
            rows.append(prod)
    return np.stack(rows)


def _coefficients(formula: Formula, env: dict, batch: int) -> np.ndarray:
    """(batch, term instances): scale * coef of every instance, the coefficients evaluated once with
    the sign family bound to a (..., batch) array (instances in the order of :func:`_products`)."""
    cols = []
    for t in formula.terms:
        for local in _index_tuples(t.loops, env):
            c = 1.0 if t.coef is None else _eval(t.coef, env, local)
            cols.append(float(t.scale) * np.broadcast_to(np.asarray(c, dtype=np.float64), (batch,)))
    return np.stack(cols, axis=1)


__all__ = ["ConstrainedSum", "DisorderAverage", "MAX_VARIABLES", "Parity", "parity"]
