"""A task's Boltzmann weight as a small structured expression: one tree, rendered to text and
evaluated numerically, so a description generated from it is faithful by construction.

Conventions
-----------
Variables: one array family (``variable``, ``s`` in the catalog) of shape ``shape`` (sizes are
expressions in n and the derived sizes, e.g. ("L", "L")); n is the product of the shape and every
entry takes values in {-1, +1} (``domain`` "pm1") or {0, 1} (``domain`` "01").

Terms: a term is ``scale * coef * prod_k (a * var[site_k] + b)`` summed over nested index loops
(inclusive ranges; a bound may use the indices of the loops before it). With ``(a, b) = (1, 0)`` the
factors are the plain variables. The terms add up to

* W(s), and Z = sum_s exp(+beta * W(s))   (``convention`` "weight"; W = -H of tasks/model.py), or
* E(s), and Z = sum_s exp(-beta * E(s))   (``convention`` "energy").

Every expression (loop bounds, coefficients, site indices, derived sizes) is a Python expression
string over the index letters, n, the derived sizes and the parameter names. The text shows its
``ast.unparse`` form and the evaluation compiles the same string.

Catalog modules build formulas with :func:`term`, e.g. ``term("J * s[i] * s[i + 1]", ("i", "0", "n - 2"))``.
"""

from __future__ import annotations

import ast
import functools
import math
from dataclasses import dataclass, replace
from fractions import Fraction
from itertools import combinations
from string import Template

import numpy as np
from scipy.special import logsumexp

ONE, ZERO = Fraction(1), Fraction(0)
DOMAIN_VALUES = {"pm1": (-1.0, 1.0), "01": (0.0, 1.0)}
DOMAIN_TEXT = {"pm1": "{-1, +1}", "01": "{0, 1}"}
#: the substitution var_old = p * var_new + q taking one domain to the other
SUBSTITUTION = {("pm1", "01"): (Fraction(2), Fraction(-1)), ("01", "pm1"): (Fraction(1, 2), Fraction(1, 2))}


def _python_round(x, *digits):
    """Python's round of the number's value: numpy's scalars round by scaling (round(np.float64(0.95), 1) is
    1.0 where round(0.95, 1) is 0.9), so a table entry is first made a Python number."""
    return round(x.item() if isinstance(x, np.generic) else x, *digits)


#: functions an expression may call (evaluation only; never renamed)
FUNCTIONS = {"len": len, "isqrt": math.isqrt, "round": _python_round, "log": np.log, "atanh": np.arctanh}
#: enumeration is exact and exponential: a formula is evaluated at small n only
MAX_EVAL_N = 20


@dataclass(frozen=True)
class Loop:
    """``index`` runs over lo, lo + 1, ..., hi (inclusive)."""

    index: str
    lo: str
    hi: str


@dataclass(frozen=True)
class Term:
    """scale * coef * prod_k (a * var[sites[k]] + b), summed over ``loops``; coef None means 1."""

    loops: tuple[Loop, ...]
    scale: Fraction
    coef: str | None
    sites: tuple[tuple[str, ...], ...]
    affine: tuple[Fraction, Fraction] = (ONE, ZERO)


@dataclass(frozen=True)
class Param:
    """One entry of the task's params dict: ``key`` in the dict, ``name`` in the formula, and a phrase
    saying what it is (a ``string.Template``: ``$key`` stands for the formula name of any param)."""

    key: str
    about: str
    name: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", self.key)


@dataclass(frozen=True)
class Derived:
    """A size computed from n and the params (e.g. L = isqrt(n)); never renamed."""

    name: str
    value: str


@dataclass(frozen=True)
class Formula:
    """The exponent of a task's Z; see the module docstring for the conventions.

    ``size_note`` states the allowed n and the derived sizes in words (a Template like ``about``).
    ``beta_key`` is the params key of the factor multiplying the exponent; "" means no factor (the
    exponent is used as it is: the weights of tasks/formula_extras.py).
    """

    shape: tuple[str, ...]
    params: tuple[Param, ...]
    terms: tuple[Term, ...]
    derived: tuple[Derived, ...] = ()
    size_note: str = ""
    domain: str = "pm1"
    convention: str = "weight"
    variable: str = "s"
    beta_key: str = "beta"

    def __post_init__(self) -> None:
        if self.domain not in DOMAIN_VALUES or self.convention not in ("weight", "energy"):
            raise ValueError(f"bad domain {self.domain!r} or convention {self.convention!r}")
        if self.beta_key and self.beta_key not in {p.key for p in self.params}:
            raise ValueError(f"beta_key {self.beta_key!r} is not a parameter")

    # -- names ----------------------------------------------------------------------------------
    def param(self, key: str) -> Param:
        return next(p for p in self.params if p.key == key)

    def identifiers(self) -> set[str]:
        """Every renamable name: the variable family, the index letters and the parameter names."""
        return {self.variable} | {lp.index for t in self.terms for lp in t.loops} | {p.name for p in self.params}

    def index_letters(self) -> set[str]:
        return {lp.index for t in self.terms for lp in t.loops}

    @property
    def variables(self) -> tuple[str, ...]:
        """The variable families (one here; tasks/formula_extras.py composes more)."""
        return (self.variable,)

    def fixed_names(self) -> set[str]:
        """Names no renaming may take: n, the derived sizes and the callable functions."""
        return {"n"} | {d.name for d in self.derived} | set(FUNCTIONS)

    def fill(self, template: str) -> str:
        """A Template phrase with each ``$key`` replaced by that parameter's formula name."""
        return Template(template).substitute({p.key: p.name for p in self.params})

    # -- rewrites (each returns a new Formula with the same Z) -----------------------------------
    def renamed(self, mapping: dict[str, str]) -> "Formula":
        """Rename identifiers everywhere at once (variable family, index letters, parameter names)."""
        taken = self.fixed_names() | (self.identifiers() - set(mapping))
        images = [mapping[k] for k in mapping if k in self.identifiers()]
        if len(set(images)) != len(images) or taken & set(images):
            raise ValueError(f"renaming {mapping} is not injective or hits a fixed name")
        ren = functools.partial(_rename, mapping=mapping)
        terms = tuple(replace(
            t,
            loops=tuple(Loop(mapping.get(lp.index, lp.index), ren(lp.lo), ren(lp.hi)) for lp in t.loops),
            coef=None if t.coef is None else ren(t.coef),
            sites=tuple(tuple(ren(e) for e in site) for site in t.sites),
        ) for t in self.terms)
        return replace(
            self, terms=terms, variable=mapping.get(self.variable, self.variable),
            params=tuple(replace(p, name=mapping.get(p.name, p.name)) for p in self.params),
            derived=tuple(Derived(d.name, ren(d.value)) for d in self.derived),
        )

    def with_convention(self, convention: str) -> "Formula":
        """Energy E = -W or weight W: every term changes sign when the convention does."""
        if convention == self.convention:
            return self
        return replace(self, convention=convention, terms=tuple(replace(t, scale=-t.scale) for t in self.terms))

    def with_domain(self, domain: str, expand: bool = True) -> "Formula":
        """Rewrite for variables in the other domain (s = 2x - 1, or x = (1 + s)/2 the other way).

        With ``expand``, a term on one or two plain variables is multiplied out into one term per
        subset of its variables; longer terms (and already substituted ones) keep the affine factors,
        so a four-variable product does not become sixteen sums.
        """
        if domain == self.domain:
            return self
        p, q = SUBSTITUTION[(self.domain, domain)]
        terms: list[Term] = []
        for t in self.terms:
            if expand and t.affine == (ONE, ZERO) and 1 <= len(t.sites) <= 2:
                k = len(t.sites)
                for size in range(k, -1, -1):
                    for subset in combinations(t.sites, size):
                        terms.append(replace(t, scale=t.scale * p**size * q ** (k - size), sites=subset))
            else:
                a, b = t.affine
                terms.append(replace(t, affine=(a * p, a * q + b)))
        return replace(self, domain=domain, terms=tuple(terms))

    def reordered(self, rng: np.random.Generator) -> "Formula":
        """Terms in another order, each product's factors permuted, and independent loops swapped."""
        terms = []
        for t in self.terms:
            sites = tuple(t.sites[i] for i in rng.permutation(len(t.sites)))
            loops = t.loops
            letters = {lp.index for lp in loops}
            if not any(_names(lp.lo) & letters or _names(lp.hi) & letters for lp in loops):
                loops = tuple(loops[i] for i in rng.permutation(len(loops)))
            terms.append(replace(t, sites=sites, loops=loops))
        return replace(self, terms=tuple(terms[i] for i in rng.permutation(len(terms))))

    # -- text -----------------------------------------------------------------------------------
    def exponent_text(self, function: str = "", sum_style: str = "sub") -> str:
        """``F(x) = ...`` one term a line, then the line defining Z from it. ``sum_style`` "sub" writes
        sum_{i=0}^{n - 2}, "words" writes "sum over i = 0..n - 2 of"."""
        function = function or ("W" if self.convention == "weight" else "E")
        arg = self.variable
        beta = f"{self.param(self.beta_key).name} * " if self.beta_key else ""     # "": the exponent as it is
        exp = f"exp({beta}{function}({arg}))" if self.convention == "weight" else f"exp(-{beta}{function}({arg}))"
        return (self.definition_text(function, sum_style) + "\n"
                + f"Z = sum over all {arg} in {DOMAIN_TEXT[self.domain]}^n of {exp}")

    def definition_text(self, function: str, sum_style: str = "sub") -> str:
        """``F(x) = ...`` one term a line (the exponent alone, without the line that uses it)."""
        arg = self.variable
        lines = []
        for k, t in enumerate(self.terms):
            negative, body = _term_text(t, self.variable, sum_style)
            sign = ("- " if negative else "") if k == 0 else ("- " if negative else "+ ")
            lines.append(sign + body)
        head = f"{function}({arg}) = "
        indent = " " * (len(head) - 2)          # so that "+ " and "- " sit left of the first term
        return head + ("\n" + indent).join(lines)

    # -- numbers ----------------------------------------------------------------------------------
    def log_z(self, params: dict, n: int, chunk: int = 1 << 12) -> float:
        """Natural log of Z by enumerating every assignment of the variables (n <= MAX_EVAL_N)."""
        if n > MAX_EVAL_N:
            raise ValueError(f"a formula is evaluated by enumeration, n <= {MAX_EVAL_N}; got {n}")
        env = self._namespace(params, n)
        shape = tuple(int(_eval(d, env)) for d in self.shape)
        if math.prod(shape) != n:
            raise ValueError(f"variable shape {shape} does not hold n = {n} variables")
        tables = [_term_table(t, env, shape) for t in self.terms]
        lo, hi = DOMAIN_VALUES[self.domain]
        beta = float(env[self.param(self.beta_key).name]) if self.beta_key else 1.0
        sign = 1.0 if self.convention == "weight" else -1.0
        parts = []
        for start in range(0, 2**n, chunk):
            idx = np.arange(start, min(2**n, start + chunk), dtype=np.int64)
            bits = (idx[:, None] >> np.arange(n, dtype=np.int64)) & 1
            X = np.where(bits == 1, hi, lo)
            total = np.zeros(len(X))
            for (coefs, sites), t in zip(tables, self.terms):
                a, b = float(t.affine[0]), float(t.affine[1])
                factors = a * X[:, sites] + b if sites.size else np.ones((len(X), len(coefs), 0))
                total += factors.prod(axis=2) @ coefs
            parts.append(logsumexp(sign * beta * total))
        return float(logsumexp(parts))

    def shape_at(self, params: dict, n: int) -> tuple[int, ...]:
        """The variables' array shape (sizes) for these parameters at size n."""
        env = self._namespace(params, n)
        return tuple(int(_eval(d, env)) for d in self.shape)

    def _namespace(self, params: dict, n: int) -> dict:
        env: dict = {"__builtins__": {}, **FUNCTIONS, "n": int(n)}
        for p in self.params:
            if p.key not in params:
                raise ValueError(f"missing parameter {p.key!r}")
            env[p.name] = np.asarray(params[p.key])
        for d in self.derived:
            env[d.name] = _eval(d.value, env)
        return env


def term(expr: str, *loops: tuple[str, str, str], variable: str = "s") -> Term:
    """A term from its product written in Python, e.g. ``term("-J * s[r][c] * s[r + 1][c]", ("r", "0", "L - 2"),
    ("c", "0", "L - 1"))``: subscripts of ``variable`` are the variables, numbers go to the scale and
    everything else is the coefficient."""
    scale, coef, sites = ONE, [], []
    for f in _product_factors(ast.parse(expr, mode="eval").body):
        if isinstance(f, ast.Constant) and isinstance(f.value, (int, float)):
            scale *= Fraction(f.value)
        elif isinstance(f, ast.Subscript) and _subscript_base(f) == variable:
            sites.append(_subscripts(f))
        elif variable in _names(ast.unparse(f)):
            raise ValueError(f"{expr!r}: the variables may only appear as factors of the product")
        else:
            coef.append(f)
    coef_text = ast.unparse(functools.reduce(lambda x, y: ast.BinOp(x, ast.Mult(), y), coef)) if coef else None
    return Term(loops=tuple(Loop(*(_normal(s) for s in lp)) for lp in loops), scale=scale,
                coef=coef_text, sites=tuple(sites))


# -- helpers: parsing, renaming, text, evaluation ---------------------------------------------------

def _normal(expr: str) -> str:
    return ast.unparse(ast.parse(expr, mode="eval"))


def _names(expr: str) -> set[str]:
    return {node.id for node in ast.walk(ast.parse(expr, mode="eval")) if isinstance(node, ast.Name)}


def _product_factors(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _product_factors(node.left) + _product_factors(node.right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return [ast.Constant(-1)] + _product_factors(node.operand)
    return [node]


def _subscript_base(node: ast.expr) -> str | None:
    while isinstance(node, ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _subscripts(node: ast.Subscript) -> tuple[str, ...]:
    out = []
    while isinstance(node, ast.Subscript):
        out.append(ast.unparse(node.slice))
        node = node.value
    return tuple(reversed(out))


class _Renamer(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, str]):
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.copy_location(ast.Name(self.mapping.get(node.id, node.id), node.ctx), node)


def _rename(expr: str, mapping: dict[str, str]) -> str:
    return ast.unparse(_Renamer(mapping).visit(ast.parse(expr, mode="eval")))


def _number(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"({x.numerator}/{x.denominator})"


def _factor_text(variable: str, site: tuple[str, ...], affine: tuple[Fraction, Fraction]) -> str:
    ref = variable + "".join(f"[{e}]" for e in site)
    a, b = affine
    if (a, b) == (ONE, ZERO):
        return ref
    if a == b and a.numerator == 1:                       # (1 + x)/2
        return f"(1 + {ref})/{a.denominator}"
    if a == -b and b.numerator == 1:                      # (1 - x)/2, or 1 - x
        return f"(1 - {ref})" + ("" if b.denominator == 1 else f"/{b.denominator}")
    return f"({'' if a == 1 else _number(a) + ' * '}{ref} {'-' if b < 0 else '+'} {_number(abs(b))})"


def _loops_text(loops: tuple[Loop, ...], style: str) -> str:
    if style == "words":
        return "sum over " + ", ".join(f"{lp.index} = {lp.lo}..{lp.hi}" for lp in loops) + " of "
    return "".join(f"sum_{{{lp.index}={lp.lo}}}^{{{lp.hi}}} " for lp in loops)


def _term_text(t: Term, variable: str, style: str) -> tuple[bool, str]:
    """(negative, text without its sign)."""
    factors = [] if abs(t.scale) == 1 and (t.coef or t.sites) else [_number(abs(t.scale))]
    if t.coef is not None:
        node = ast.parse(t.coef, mode="eval").body
        loose = isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub))
        factors.append(f"({t.coef})" if loose else t.coef)
    factors += [_factor_text(variable, site, t.affine) for site in t.sites]
    return t.scale < 0, _loops_text(t.loops, style) + " * ".join(factors)


@functools.lru_cache(maxsize=4096)
def _compiled(expr: str):
    return compile(ast.parse(expr, mode="eval"), "<formula>", "eval")


def _eval(expr: str, env: dict, local: dict | None = None):
    return eval(_compiled(expr), env, local or {})   # noqa: S307 -- our own catalog expressions, no builtins


def _index_tuples(loops: tuple[Loop, ...], env: dict, local: dict | None = None):
    local = local or {}
    if not loops:
        yield dict(local)
        return
    first, rest = loops[0], loops[1:]
    for v in range(int(_eval(first.lo, env, local)), int(_eval(first.hi, env, local)) + 1):
        yield from _index_tuples(rest, env, {**local, first.index: v})


def _term_table(t: Term, env: dict, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(coefficients (T,), flat variable indices (T, k)) over the term's index tuples."""
    coefs, sites = [], []
    for local in _index_tuples(t.loops, env):
        coefs.append(float(t.scale) * (1.0 if t.coef is None else float(_eval(t.coef, env, local))))
        row = []
        for site in t.sites:
            idx = tuple(int(_eval(e, env, local)) for e in site)
            if len(idx) != len(shape) or any(not 0 <= i < d for i, d in zip(idx, shape)):
                raise ValueError(f"variable index {idx} outside the shape {shape} (at {local})")
            row.append(int(np.ravel_multi_index(idx, shape)))
        sites.append(row)
    return np.asarray(coefs, dtype=np.float64), np.asarray(sites, dtype=np.int64).reshape(len(coefs), len(t.sites))
