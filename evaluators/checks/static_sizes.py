"""Symbolic sizes for the static cost audit: what ``range(...)``, ``np.zeros(...)``, a
comprehension or ``itertools.product(...)`` amounts to, as a sympy expression in n (the number
of spins), tracked through simple assignments (``L = math.isqrt(n)`` -> sqrt(n)).
"""

from __future__ import annotations

import ast

import sympy as sp

from evaluators.checks.complexity_claim import N_SYM

LINALG = {"det", "slogdet", "eig", "eigh", "eigvals", "eigvalsh", "inv", "solve", "svd", "qr", "lu",
          "lu_factor", "cholesky", "pinv", "lstsq", "expm", "matrix_power", "pfaffian"}
CREATE = {"zeros", "ones", "empty", "full"}
_SAME_SHAPE = {"exp", "log", "abs", "sqrt", "cos", "sin", "tanh", "cosh", "sinh", "log1p", "expm1",
               "real", "imag", "conj", "copy", "array", "asarray", "ascontiguousarray", "exp2", "sign"}
_SCALAR = {"int", "round", "float", "floor", "ceil", "abs", "trunc", "int64", "int32", "intp", "fabs"}


class SizeTracker:
    """Names -> sizes (expressions in n) and names -> array shapes for one module."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.alias: dict[str, str] = {}
        self.env: dict[str, sp.Expr] = {"n": N_SYM, "N": N_SYM}
        self.shapes: dict[str, tuple] = {}
        self.nodes = list(ast.walk(tree))   # walked once: a long program has ~15k nodes, read three times
        for node in self.nodes:
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.alias[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    self.alias[a.asname or a.name] = f"{node.module}.{a.name}"
        self._collect()

    def _collect(self) -> None:
        """Symbolic sizes of simply assigned names (two sweeps so order does not matter)."""
        unstable = {"n", "N"} & {t.id for node in self.nodes if isinstance(node, (ast.For, ast.comprehension))
                                 for t in ast.walk(node.target) if isinstance(t, ast.Name)}
        for name in unstable:
            self.env.pop(name, None)
        for _ in range(2):
            seen: dict[str, object] = {}
            for node in self.nodes:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    name = node.targets[0].id
                    if name in ("n", "N"):
                        continue
                    v, s = self.size(node.value), self.shape(node.value)
                    prev = seen.setdefault(name, (v, s))
                    if prev != (v, s):
                        v, s = None, None
                        seen[name] = (None, None)
                    for table, value in ((self.env, v), (self.shapes, s)):
                        if value is None:
                            table.pop(name, None)
                        else:
                            table[name] = value
                elif isinstance(node, (ast.AugAssign, ast.For, ast.comprehension)):
                    for t in ast.walk(node.target):
                        if isinstance(t, ast.Name) and t.id not in ("n", "N"):
                            seen[t.id] = (None, None)
                            self.env.pop(t.id, None)
                            self.shapes.pop(t.id, None)

    def name(self, func) -> str:
        """Dotted name of a call target with import aliases resolved: np.linalg.det -> numpy.linalg.det."""
        parts = []
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name):
            return ""
        parts.append(self.alias.get(func.id, func.id))
        return ".".join(reversed(parts))

    def size(self, node) -> sp.Expr | None:
        """The value of an integer-like expression as a sympy expression in n, or None."""
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            if not abs(node.value) < 1e18:
                return None
            return sp.Integer(node.value) if isinstance(node.value, int) else sp.Rational(str(node.value))
        if isinstance(node, ast.Name):
            return self.env.get(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = self.size(node.operand)
            return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
        if isinstance(node, ast.BinOp):
            a, b = self.size(node.left), self.size(node.right)
            if a is None or b is None:
                return None
            if isinstance(node.op, (ast.Pow, ast.LShift, ast.RShift)) and b.is_Number and (
                    abs(b) > 256 or (a.is_Number and abs(b) * max(1, int(abs(a)).bit_length()) > 4096)):
                return None  # a constant like 2**10**10: no size of ours, and too big to evaluate
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b, ast.Div: lambda: a / b,
                   ast.FloorDiv: lambda: a / b, ast.Pow: lambda: a ** b, ast.LShift: lambda: a * 2 ** b,
                   ast.RShift: lambda: a / 2 ** b}
            f = ops.get(type(node.op))
            return f() if f and not (isinstance(node.op, (ast.Div, ast.FloorDiv)) and b == 0) else None
        if isinstance(node, ast.IfExp):  # `n - 1 if flip else n`: the smaller branch bounds the cost below
            a, b = self.size(node.body), self.size(node.orelse)
            return sp.Min(a, b) if a is not None and b is not None else None
        if isinstance(node, ast.Call) and node.args:
            last = self.name(node.func).rsplit(".", 1)[-1]
            if last == "len":
                s = self.shape(node.args[0])
                return s[0] if s else None
            v = self.size(node.args[0])
            if v is None:
                return None
            if last in _SCALAR:
                return v
            if last in ("sqrt", "isqrt"):
                return sp.sqrt(v)
        return None

    def shape(self, node) -> tuple | None:
        if isinstance(node, ast.Name):
            return self.shapes.get(node.id)
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts and not any(isinstance(e, ast.Starred) for e in node.elts):
            inner = self.shape(node.elts[0])
            return (sp.Integer(len(node.elts)),) + (inner or ())
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            trips = [self.trip(g.iter) for g in node.generators]
            if any(t is None for t in trips):
                return None
            return (sp.Mul(*trips),) + (self.shape(node.elt) or ())
        if isinstance(node, ast.Attribute) and node.attr == "T":
            s = self.shape(node.value)
            return tuple(reversed(s)) if s else None
        if isinstance(node, ast.BinOp):
            a, b = self.shape(node.left), self.shape(node.right)
            if isinstance(node.op, ast.MatMult):
                return (a[0], b[1]) if a and b and len(a) == 2 and len(b) == 2 else None
            return max((s for s in (a, b) if s), key=len, default=None)
        if not isinstance(node, ast.Call):
            return None
        last = self.name(node.func).rsplit(".", 1)[-1]
        args = node.args
        if last in CREATE and args:
            dims = args[0].elts if isinstance(args[0], (ast.Tuple, ast.List)) else [args[0]]
            sizes = [self.size(d) for d in dims]
            return tuple(sizes) if all(s is not None for s in sizes) else None
        if last in ("eye", "identity") and args:
            k = self.size(args[0])
            return (k, k) if k is not None else None
        if last in ("arange", "range") or (last in ("list", "tuple") and args and isinstance(args[0], ast.Call)):
            t = self.trip(node if last in ("arange", "range") else args[0])
            return (t,) if t is not None else None
        if last == "outer" and len(args) == 2:
            a, b = self.shape(args[0]), self.shape(args[1])
            return (a[0], b[0]) if a and b else None
        if last in _SAME_SHAPE and args:
            return self.shape(args[0])
        return None

    def trip(self, node) -> sp.Expr | None:
        """Number of iterations of ``for _ in node`` as an expression in n, or None."""
        if isinstance(node, ast.Call):
            name = self.name(node.func)
            last = name.rsplit(".", 1)[-1]
            if last in ("range", "arange") and node.args:
                b = [self.size(a) for a in node.args[:3]]
                if len(b) == 1:
                    return b[0]
                if b[1] is None:
                    return None
                span = b[1] - (b[0] if b[0] is not None else 0)
                return span / b[2] if len(b) == 3 and b[2] not in (None, 0) else span
            if last == "product" and name.startswith("itertools"):
                base = sp.Integer(1)
                for a in node.args:
                    k = self.length(a.value, starred=True) if isinstance(a, ast.Starred) else self.length(a)
                    base *= k if k is not None else 2
                rep = next((self.size(k.value) for k in node.keywords if k.arg == "repeat"), sp.Integer(1))
                return base ** rep if rep is not None else None
            if last in ("enumerate", "reversed", "sorted", "list", "tuple", "zip") and node.args:
                return self.trip(node.args[0])
            if last == "ndindex" and node.args:
                dims = [self.length(a.value, starred=True, values=True) if isinstance(a, ast.Starred)
                        else self.size(a) for a in node.args]
                return sp.Mul(*dims) if all(d is not None for d in dims) else None
        s = self.shape(node)
        return s[0] if s else None

    def length(self, node, starred: bool = False, values: bool = False) -> sp.Expr | None:
        """len(node); with ``starred``, the product of the lengths (``values``: of the values)
        of the items of node, as in ``product(*[(-1, 1)] * n)`` or ``ndindex(*[2] * n)``."""
        item = self.size if values else self.length
        if starred:
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                seq, k = (node.left, node.right) if isinstance(node.left, (ast.List, ast.Tuple)) else (node.right, node.left)
                if isinstance(seq, (ast.List, ast.Tuple)) and len(seq.elts) == 1:
                    base, reps = item(seq.elts[0]), self.size(k)
                    return base ** reps if base is not None and reps is not None else None
            if isinstance(node, (ast.ListComp, ast.GeneratorExp)) and len(node.generators) == 1:
                base, reps = item(node.elt), self.trip(node.generators[0].iter)
                return base ** reps if base is not None and reps is not None else None
            return None
        s = self.shape(node)
        return s[0] if s else self.trip(node)
