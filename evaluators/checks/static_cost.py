"""Static evidence about a candidate's running time, read from its AST (nothing is executed).

Evidence, not proof: every finding names the construct and its line. What is recognised:

* enumerations: ``itertools.product(vals, repeat=r)``, ``range(2**n)``, ``range(1 << n)``,
  ``np.arange(2**n)``, comprehensions over them, loops over arrays of such a length;
  an enumeration over 2^n states implies exp, over 2^L (L = isqrt(n)) row states exp_sqrt;
* dense arrays and matrices: ``np.zeros((2**L, 2**L))``, ``states @ states.T``, ``np.outer``;
* loop nests: the product of the trip counts of nested loops (three ``for`` over ``range(n)``
  implies n^3);
* dense linear algebra (``det``, ``slogdet``, ``eig*``, ``inv``, ``solve``, ...) on an m x m
  matrix of known shape: m^3.

Sizes are tracked symbolically in n (the number of spins, a parameter named ``n`` or ``N``):
``L = int(math.sqrt(n))``, ``math.isqrt(n)``, ``round(n ** 0.5)`` all become sqrt(n). A
construct that only runs under a guard bounding n by a constant (``if n <= 20:``, the code after
``if n > 20: return ...``, ``assert n < 30``) is reported as ``bounded`` with no implication.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import sympy as sp

from evaluators.checks.complexity_claim import N_SYM, ClaimParseError, classify
from evaluators.checks.growth import Growth
from evaluators.checks.static_sizes import CREATE, LINALG, SizeTracker


@dataclass(frozen=True)
class StaticFinding:
    kind: str                 # enumeration | dense_matrix | dense_linalg | loop_nest | bounded
    detail: str               # "line 7: itertools.product(..., repeat=n) enumerates 2^n states"
    implies: Growth | None    # lower bound on the running time in n, None when bounded
    line: int = 0
    construct: str = ""       # the source of the construct, first line: "for a in range(2 ** L)"
    effect: str = ""          # "enumerates 2^(sqrt n) row states (L = sqrt n) (cost ...)"

    def sentence(self) -> str:
        """'enumerates 2^n configurations (...) (line 7: itertools.product(...))'."""
        return f"{self.effect} (line {self.line}: {self.construct})" if self.effect else self.detail


def static_evidence(code: str) -> list[StaticFinding]:
    """Findings about ``code``, costliest first (empty when it does not parse)."""
    try:
        return _Analyzer(ast.parse(code)).run()
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):  # not code, or absurdly nested
        return []


def static_estimate(code: str) -> StaticFinding | None:
    """The costliest construct that scales with n, single loops and length-n arrays included
    (``static_evidence`` reports only the costly ones, from n^2 up): the code's own cost as far as
    the AST shows it, or None when nothing in it scales with n. Evidence for a claim, not proof."""
    try:
        a = _Analyzer(ast.parse(code))
        found = a.run() + a.light
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        return None
    return max((f for f in found if f.implies is not None), key=lambda f: growth_key(f.implies), default=None)


def growth_key(g: Growth) -> tuple[int, float]:
    return (g.rank, g.rate)


def _safe_classify(e: sp.Expr) -> Growth | None:
    if not e.has(N_SYM):
        return None
    try:
        return classify(e)
    except ClaimParseError:
        return None


def _pretty(e: sp.Expr) -> str:
    return str(e).replace("**", "^").replace("sqrt(n)", "sqrt n")


class _Analyzer:
    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.sizes = SizeTracker(tree)
        self.events: dict[int, StaticFinding] = {}
        self.light: list[StaticFinding] = []   # unguarded constructs of cost n^1 .. n^2 (static_estimate)

    def run(self) -> list[StaticFinding]:
        self._block(self.tree.body, sp.Integer(1), 0, None)
        out = sorted(self.events.values(), key=lambda f: (f.implies is None, *(
            (-f.implies.rank, -f.implies.rate) if f.implies else (0, 0)), f.line))
        return out[:8]

    def _block(self, stmts, mult, depth, guard) -> None:
        for st in stmts:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self._block(st.body, sp.Integer(1), 0, None)
                continue
            if isinstance(st, ast.For):
                trip = self.sizes.trip(st.iter)
                self._scan(st.iter, mult, guard)
                inner = mult * trip if trip is not None else mult
                d = depth + (trip is not None and trip.has(N_SYM))
                if trip is not None:
                    self._event(st, inner, "loop", guard, d, own=trip, body=st.body)
                self._block(st.body, inner, d, guard)
                self._block(st.orelse, mult, depth, guard)
                continue
            if isinstance(st, ast.If):
                self._scan(st.test, mult, guard)
                self._block(st.body, mult, depth, guard or self._bound(st.test, True, st.lineno))
                self._block(st.orelse, mult, depth, guard or self._bound(st.test, False, st.lineno))
                if st.body and isinstance(st.body[-1], (ast.Return, ast.Raise)) and not st.orelse:
                    guard = guard or self._bound(st.test, False, st.lineno)
                continue
            if isinstance(st, ast.Assert):
                guard = guard or self._bound(st.test, True, st.lineno)
                continue
            for field in ("body", "orelse", "finalbody", "handlers"):
                sub = getattr(st, field, None)
                if isinstance(sub, list) and sub and isinstance(sub[0], (ast.stmt, ast.excepthandler)):
                    for s in sub:
                        self._block(s.body if isinstance(s, ast.excepthandler) else [s], mult, depth, guard)
            if isinstance(st, (ast.While, ast.With, ast.Try)):
                for expr in (getattr(st, "test", None), *[i.context_expr for i in getattr(st, "items", [])]):
                    if expr is not None:
                        self._scan(expr, mult, guard)
            else:
                self._scan(st, mult, guard)

    def _scan(self, node, mult, guard) -> None:
        """Cost events inside one simple statement: comprehensions, array builds, linalg, @."""
        for sub in ast.walk(node):
            if isinstance(sub, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                trips = [self.sizes.trip(g.iter) for g in sub.generators]
                known = [t for t in trips if t is not None]
                if known:
                    own = sp.Mul(*known)
                    self._event(sub, mult * own, "comprehension", guard, len(known), own=own, body=[sub])
            elif isinstance(sub, ast.Call):
                name = self.sizes.name(sub.func)
                last = name.rsplit(".", 1)[-1]
                shape = self.sizes.shape(sub)
                if last in CREATE | {"arange", "eye", "identity"} and shape:
                    own = sp.Mul(*shape)
                    self._event(sub, mult * own, "array", guard, len(shape), own=own, shape=shape)
                elif last == "product" and name.startswith("itertools"):
                    t = self.sizes.trip(sub)
                    if t is not None:
                        self._event(sub, mult * t, "product", guard, 1, own=t)
                elif last in LINALG and sub.args and ("linalg" in name or name.startswith("scipy")):
                    s = self.sizes.shape(sub.args[0])
                    if s and len(s) >= 2:
                        self._event(sub, mult * sp.Mul(*s[:-2]) * s[-1] ** 3, "linalg", guard, 3, shape=s)
            elif isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.MatMult):
                a, b = self.sizes.shape(sub.left), self.sizes.shape(sub.right)
                if a and b and len(a) == 2 and len(b) == 2:
                    self._event(sub, mult * a[0] * a[1] * b[1], "matmul", guard, 3, shape=(a[0], b[1]))

    # -- events -------------------------------------------------------------------------
    def _event(self, node, cost, what, guard, depth, own=None, body=(), shape=None) -> None:
        if not cost.has(N_SYM):
            return
        g = _safe_classify(cost)
        if g is None:
            return
        exponential = g.kind != "poly"
        line = getattr(node, "lineno", 0)
        src = ast.unparse(node).split("\n")[0].rstrip(":")
        src = src if len(src) <= 70 else src[:67] + "..."
        if not exponential and g.rate < 2 - 1e-9:
            if not guard and g.rate >= 1 - 1e-9:
                what_ = {"loop": "runs a loop", "comprehension": "builds a comprehension"}.get(what, "builds an array")
                effect = f"{what_} over n items (cost {g.describe()})"
                self.light.append(StaticFinding("loop_nest", f"line {line}: {src} {effect}", g, line, src, effect))
            return
        own_g = _safe_classify(own) if own is not None and (shape is None or len(shape) == 1) else None
        if own_g is not None and own_g.kind != "poly":
            kind = "enumeration"
            states = "configurations" if own_g.kind == "exp" else "row states (L = sqrt n)"
            effect = f"enumerates {_pretty(own)} {states}"
            if any(isinstance(b, ast.BinOp) and isinstance(b.op, ast.RShift) for s in body for b in ast.walk(s)):
                effect += ", decoding spins with bit shifts"
            if growth_key(g) != growth_key(own_g):
                effect += " inside enclosing loops"
        elif what == "linalg":
            kind, effect = "dense_linalg", f"does dense linear algebra on a {_pretty(shape[-1])} x {_pretty(shape[-1])} matrix"
        elif what in ("array", "matmul") and shape and len(shape) >= 2:
            kind, effect = "dense_matrix", f"builds a dense {' x '.join(_pretty(d) for d in shape)} array"
        else:
            kind, effect = "loop_nest", f"runs {depth} nested loops"
        effect += f" (cost {g.describe()})"
        if guard:
            kind, effect, g = "bounded", f"{effect}, but only when {guard}, so it does not set the asymptotic cost", None
        old = self.events.get(line)
        if old is None or (old.implies is not None and g is not None and growth_key(g) > growth_key(old.implies)) \
                or (old.implies is None and g is not None):
            self.events[line] = StaticFinding(kind, f"line {line}: {src} {effect}", g, line, src, effect)

    def _bound(self, test, truth: bool, line: int) -> str | None:
        """'n <= 20 (line 5)' when ``test`` evaluating to ``truth`` bounds n by a constant."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self._bound(test.operand, not truth, line)
        if isinstance(test, ast.BoolOp):
            parts = [self._bound(v, truth, line) for v in test.values]
            any_ok = isinstance(test.op, ast.And) == truth
            hits = [p for p in parts if p]
            return (hits[0] if hits else None) if any_ok else (hits[0] if len(hits) == len(parts) else None)
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return None
        a, b, op = self.sizes.size(test.left), self.sizes.size(test.comparators[0]), test.ops[0]
        if a is None or b is None:
            return None
        if b.has(N_SYM) and not a.has(N_SYM):
            a, b = b, a
            op = {ast.Lt: ast.Gt(), ast.LtE: ast.GtE(), ast.Gt: ast.Lt(), ast.GtE: ast.LtE()}.get(type(op), op)
        if not a.has(N_SYM) or b.has(N_SYM):
            return None
        upper = isinstance(op, (ast.Lt, ast.LtE, ast.Eq)) if truth else isinstance(op, (ast.Gt, ast.GtE, ast.NotEq))
        return f"{ast.unparse(test) if truth else 'not (' + ast.unparse(test) + ')'} (line {line})" if upper else None
