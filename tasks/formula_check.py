"""What a compiled reader can evaluate: every term of a formula checked before it is compiled, and
anything the reader cannot compile refused in one line that names the term.

tasks/formula.py evaluates an expression once per index tuple, with Python ints; the compiled reader
(tasks/formula_reader.py) evaluates it once per term on whole index columns. The two agree on the
expressions built from numbers, the names in scope, subscripts, arithmetic (+ - * / // % **, bit
operations), one comparison, and the calls of tasks/formula.FUNCTIONS; they part on the rest (a
chained comparison, ``and``/``or``, ``x if c else y`` take the truth value of an array), so those are
refused here, as are the formulas that cannot be evaluated at all:

* a name not in scope: a loop bound sees n, the parameters, the derived sizes and the letters of the
  loops before it; a coefficient or a variable's index sees all the term's letters;
* a loop letter used twice in one term (the inner one would hide the outer);
* a variable with more or fewer indices than its array has axes, or an index that is a tuple/slice;
* a product whose multiplied-out form in +-1 spins has more than 2^MAX_EXPANDED_FACTORS monomials
  (tasks/formula_algebra.py; plain +-1 products of any length are one monomial);
* a parity condition whose left side is not a sum of the 0/1 values mod 2 (tasks/formula_extras.py).

Every message reads "cannot compile <what> `<its text>`: <why>", on one line.
"""

from __future__ import annotations

import ast
from fractions import Fraction

from tasks.formula import DOMAIN_VALUES, FUNCTIONS, Formula, _term_text
from tasks.formula_algebra import MAX_EXPANDED_FACTORS, Monomial, Site, branching_factors, expand, lift, to_spins
from tasks.formula_extras import ConstrainedSum, DisorderAverage

_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.BitAnd, ast.BitOr,
              ast.BitXor, ast.LShift, ast.RShift, ast.USub, ast.UAdd, ast.Invert, ast.Lt, ast.LtE, ast.Gt,
              ast.GtE, ast.Eq, ast.NotEq, ast.Load)
_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Subscript, ast.Call, ast.Compare,
          ast.Tuple) + _OPERATORS


def check(formula) -> None:
    """ValueError (one line, naming the term) when the reader of ``formula`` (a Formula, ConstrainedSum
    or DisorderAverage) cannot be compiled; None when it can."""
    if isinstance(formula, Formula):
        scope = _scope(formula.params, formula.derived, formula.shape)
        _check_formula(formula, scope, {formula.variable: formula.domain})
    elif isinstance(formula, ConstrainedSum):
        weight = formula.weight
        scope = _scope(weight.params, weight.derived, weight.shape)
        _check_formula(weight, scope, {weight.variable: weight.domain}, where="the weight's ")
        for k, c in enumerate(formula.constraints):
            _check_parity(c, k, weight, scope)
    elif isinstance(formula, DisorderAverage):
        eta, s = formula.disorder.variable, formula.inner.variable
        if eta == s:
            raise ValueError(f"cannot compile the disorder average: the signs and the spins are both named {s!r}")
        derived = tuple({d.name: d for d in (*formula.disorder.derived, *formula.inner.derived)}.values())
        scope = _scope(formula.params, derived, formula.disorder.shape + formula.inner.shape)
        domains = {eta: formula.disorder.domain, s: formula.inner.domain}
        _check_expr(formula.reference[1], scope, "the reference inverse temperature", formula.reference[1])
        _check_formula(formula.disorder, scope, domains, where="the signs' weight ")
        _check_formula(formula.inner, scope, domains, where="the inner weight ",
                       signs=(eta, len(formula.disorder.shape)))
    else:
        raise ValueError(f"no reader can be compiled from a {type(formula).__name__}")


# -- the pieces --------------------------------------------------------------------------------------

def _scope(params, derived, shape) -> set[str]:
    """The names every expression may read (n, parameters, derived sizes), each derived size and the
    shape checked against the names before it."""
    scope = {"n"} | {p.name for p in params}
    for d in derived:
        _check_expr(d.value, scope, f"the derived size {d.name}", d.value)
        scope.add(d.name)
    for dim in shape:
        _check_expr(dim, scope, "the shape of the variables", dim)
    return scope


def _check_formula(f: Formula, scope: set[str], domains: dict[str, str], where: str = "",
                   signs: tuple[str, int] | None = None) -> None:
    """Each term of ``f``; ``signs`` is (family, axes) of the variables a coefficient may read (a
    disorder average's inner weight reads the random signs: ``lift`` moves them into the product)."""
    family = signs[0] if signs else None
    for k, t in enumerate(f.terms):
        negative, body = _term_text(t, f.variable, "words")
        what, text = f"{where}term {k + 1}", ("-" if negative else "") + body

        def refuse(why: str, what=what, text=text):
            raise ValueError(_message(what, text, why))

        letters: list[str] = []
        for lp in t.loops:
            if lp.index in letters:
                refuse(f"the loop letter {lp.index!r} is used twice")
            for bound in (lp.lo, lp.hi):
                _check_expr(bound, scope | set(letters), what, text)
            letters.append(lp.index)
        inside = scope | set(letters)
        if t.coef is not None:
            _check_expr(t.coef, inside | ({family} if family else set()), what, text, subscripted=family)
        for site in t.sites:
            _check_site(site, f.variable, len(f.shape), inside, what, text)
        m = Monomial(t.loops, t.scale, t.coef, tuple(Site(f.variable, site, t.affine) for site in t.sites))
        try:
            monos = to_spins(lift([m], family) if family else [m], domains)
        except ValueError as exc:
            refuse(str(exc))
        for mono in monos:
            for s in mono.sites:
                if s.family == family and len(s.index) != signs[1]:
                    refuse(f"{family}[{']['.join(s.index)}] has {len(s.index)} indices where the signs form an "
                           f"array of {signs[1]} axes")
            count = branching_factors(mono)
            if count > MAX_EXPANDED_FACTORS:
                refuse(f"its product in +-1 spins has {count} factors that are neither a plain spin nor a constant "
                       f"(a {{0, 1}} variable is (1 + s)/2), 2^{count} monomials multiplied out; the reader "
                       f"multiplies out at most {MAX_EXPANDED_FACTORS} such factors")
        expand(monos)                                           # cannot fail after the count above


def _check_parity(c, k: int, weight: Formula, scope: set[str]) -> None:
    what, text = f"parity condition {k + 1}", c.text(weight.variable, "words")
    letters: list[str] = []
    for lp in c.each + c.over:
        if lp.index in letters:
            raise ValueError(_message(what, text, f"the loop letter {lp.index!r} is used twice"))
        for bound in (lp.lo, lp.hi):
            _check_expr(bound, scope | set(letters), what, text)
        letters.append(lp.index)
    _check_expr(c.rhs, scope | {lp.index for lp in c.each}, what, text)
    for site in c.sites:
        _check_site(site, weight.variable, len(weight.shape), scope | set(letters), what, text)
    lo, hi = (Fraction(v) for v in DOMAIN_VALUES[weight.domain])
    a, b = c.affine
    slope, shift = a * (hi - lo), a * lo + b
    if slope.denominator != 1 or slope.numerator % 2 == 0 or shift.denominator != 1:
        raise ValueError(_message(what, text, "its left side is not a sum of the variables' 0/1 values mod 2 "
                                              f"(each term is {slope} x + {shift} with x in {{0, 1}})"))


def _check_site(site: tuple[str, ...], variable: str, axes: int, scope: set[str], what: str, text: str) -> None:
    ref = variable + "".join(f"[{e}]" for e in site)
    if len(site) != axes:
        raise ValueError(_message(what, text, f"{ref} has {len(site)} indices where the variables form an array "
                                              f"of {axes} axes"))
    for e in site:
        tree = _parse(e, what, text)
        if isinstance(tree.body, (ast.Tuple, ast.Slice)):
            raise ValueError(_message(what, text, f"the index {e!r} of {ref} is not one integer "
                                                  "(write one [...] per axis)"))
        _check_expr(e, scope, what, text)


def _check_expr(expr: str, scope: set[str], what: str, text: str, subscripted: str | None = None) -> None:
    """ValueError naming ``what`` when ``expr`` reads a name outside ``scope`` or uses a construct the
    reader does not evaluate as Python does on one number (``subscripted``: a name read only as x[...])."""
    tree = _parse(expr, what, text)
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    slices = {id(node.slice) for node in ast.walk(tree) if isinstance(node, ast.Subscript)}
    for node in ast.walk(tree):
        why = None
        if not isinstance(node, _NODES):
            why = f"{type(node).__name__} ({ast.unparse(node) if isinstance(node, ast.expr) else '...'}) is not " \
                  "something a reader evaluates on index arrays as Python does on one number"
        elif isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            why = f"the constant {node.value!r} is not a number"
        elif isinstance(node, ast.Tuple) and id(node) not in slices:
            why = f"the tuple {ast.unparse(node)} is not a number"
        elif isinstance(node, ast.Compare) and len(node.ops) != 1:
            why = f"the chained comparison {ast.unparse(node)} does not act entry by entry on arrays"
        elif isinstance(node, ast.Call) and (not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS
                                             or node.keywords or any(isinstance(a, ast.Starred) for a in node.args)):
            why = f"the call {ast.unparse(node)} is not one of {', '.join(sorted(FUNCTIONS))} (positional arguments)"
        elif isinstance(node, ast.Name) and id(node) not in called and node.id not in scope:
            why = f"the name {node.id!r} is not in scope here (n, the parameters, the derived sizes, the letters " \
                  "of the term's loops; a loop bound sees only the loops before it)"
        elif isinstance(node, ast.Name) and id(node) in called and node.id in scope:
            why = f"{node.id!r} is called as a function"
        if why:
            raise ValueError(_message(what, text, why))
    if subscripted:
        bare = [node for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == subscripted]
        inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Subscript)}
        if any(id(node) not in inner for node in bare):
            raise ValueError(_message(what, text, f"{subscripted} is read whole, not one entry {subscripted}[...]"))


def _parse(expr: str, what: str, text: str) -> ast.Expression:
    try:
        return ast.parse(expr, mode="eval")
    except SyntaxError:
        raise ValueError(_message(what, text, f"{expr!r} is not a Python expression")) from None


def _message(what: str, text: str, why: str) -> str:
    return " ".join(f"cannot compile {what} `{text}`: {why}".split())


__all__ = ["check"]
