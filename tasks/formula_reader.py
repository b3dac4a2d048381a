"""Readers compiled from a task's formula: params -> the model's terms, as a self-contained program.

``compile_reader(formula)`` writes the source of ``_read_formula(params, n)``, plain numpy (imports
only math and numpy, so it runs inside a candidate program), from the formula's normal form
(tasks/formula_algebra.py: weight monomials in +-1 variables, like terms merged). Every loop becomes
a vectorised index table (nested ranges by ``np.repeat``), every coefficient and index the same
Python expression evaluated on those arrays (tasks/formula_runtime.py makes the two agree); what
cannot be compiled is refused first, in one line naming the term (tasks/formula_check.py), and
params that do not fit raise ValueError. The reader returns a plain dict:

kind "z" (a Formula: Z = sum exp(beta W))::

    {"kind": "z", "n", "beta", "terms": [(idx (m, k) int64, w (m,)) one entry per order k, merged],
     "rank_one": [(u (n,), a)], "constant": c, "positions": (n, 2) or None, "coords": (n, 2) or None}

  with W(s) = c + sum_k w_k prod s[idx_k] + sum over blocks (a/2)[(u.s)^2 - |u|^2] (tasks/model.py).
  An all-pairs sum with a coefficient f(i) f(j) stays one rank-one block (O(n) memory).

kind "constrained" (a ConstrainedSum, T18): the weight as fields and a constant over the +-1 forms
  of the variables, and the parity conditions as rows ``{"row_of", "var", "rhs", "coords"}`` over the
  0/1 values (x = 1 where the variable takes its upper value); ``coords`` are the values of each
  condition's ``each`` indices (its place on a grid).

kind "disorder" (a DisorderAverage, T19/T20): the signs' log-weight as a model over the signs (indices
  0..N-1) and the inner weight as a model over signs and spins together (spins at N..N+n-1), the
  reference inverse temperature and the statistic.

What is inferred about geometry, at run time from the index tables (a solver verifies what it uses):

* a two-index family of shape (R, C) whose pair terms join sites at most one step apart in each index
  gets the grid drawing, site (r, c) at (c, -r) (a candidate straight-line embedding: the planar
  solver checks its rotation system with Euler's formula before trusting it);
* ``coords`` keeps every site's (r, c) in such a family, so a step that removes spins can still tell
  whether the rest is a full grid, and whether its pairs join nearest neighbours modulo that grid
  (a torus) - the Kaufman solver reads it;
* a one-index family: a params entry that is an (n, 2) float array is the drawing (points given with
  the instance); else pairs i, i+1 lie on a line and pairs i, (i+1) mod n on a circle.

Two identities are applied to coefficients so that tiny probabilities keep their digits:
atanh(1 - 2x) = (log1p(-x) - log x)/2 and log(1 - x) = log1p(-x).
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, field
from fractions import Fraction

from tasks import formula_runtime
from tasks.formula_check import check
from tasks.formula import DOMAIN_VALUES, FUNCTIONS, Formula, Loop
from tasks.formula_algebra import Monomial, _canonical_loops, expand, lift, merge, monomials, rank_one_block, \
    spin_monomials, to_spins
from tasks.formula_extras import ConstrainedSum, DisorderAverage

READER_NAME = "_read_formula"



@dataclass(frozen=True)
class CompiledReader:
    """The reader of one formula: its source (self-contained; defines ``_read_formula``), the kind of
    dict it returns, and notes on what compiling it did (the change of variables, rank-one blocks)."""

    kind: str
    source: str
    notes: tuple[str, ...] = field(default=())
    #: the formula's variables were in {0, 1} (the reader returns them as +-1 spins plus a constant)
    changed_domain: bool = False

    def load(self):
        """The ``_read_formula`` function, executed in a fresh namespace."""
        namespace: dict = {}
        exec(compile(self.source, "<compiled reader>", "exec"), namespace)  # noqa: S102 - our own generated code
        return namespace[READER_NAME]


def compile_reader(formula) -> CompiledReader:
    """The reader of ``formula`` (a Formula, ConstrainedSum or DisorderAverage); ValueError, one line
    naming the term and why, when a term cannot be compiled (tasks/formula_check.py)."""
    check(formula)
    if isinstance(formula, Formula):
        return _compile_z(formula)
    if isinstance(formula, ConstrainedSum):
        return _compile_constrained(formula)
    if isinstance(formula, DisorderAverage):
        return _compile_disorder(formula)
    raise ValueError(f"no reader can be compiled from a {type(formula).__name__}")


# -- the three kinds -------------------------------------------------------------------------------

def _compile_z(f: Formula) -> CompiledReader:
    monos = spin_monomials(f)
    w = _Writer(f.params, f.derived)
    w.family(f.variable, f.shape, offset="0")
    w.line(f"if math.prod(shape_{f.variable}) != n:")
    w.line(f"    raise ValueError(f'the variables form an array of shape {{shape_{f.variable}}}, not n = {{n}} of them')")
    beta = f"float(p_{f.param(f.beta_key).name})" if f.beta_key else "1.0"
    w.line("parts, constant, rank_one = [], 0.0, []")
    notes, blocks = [], []
    for k, m in enumerate(monos):
        block = rank_one_block(m) if len(f.shape) == 1 else None
        if block is not None:
            w.rank_one(block, f.variable)
            blocks.append(m)
            notes.append(f"term {k}: an all-pairs sum with a factorised coefficient, kept as one rank-one block")
        else:
            w.monomial(m, k)
    _guards(w, [(f.terms, f.variable)], monos, blocks)
    w.line("terms, more = _merge_terms(parts)")
    w.line("positions, coords = _geometry(shape_%s, terms, n, [%s])" % (
        f.variable, ", ".join(f"p_{p.name}" for p in f.params)))
    w.line(f'return {{"kind": "z", "n": n, "beta": {beta}, "terms": terms, "rank_one": rank_one, '
           f'"constant": constant + more, "positions": positions, "coords": coords}}')
    if f.domain == "01":
        notes.insert(0, "the {0, 1} variables are written as x = (1 + s)/2: spins plus the energy constant it leaves")
    return CompiledReader("z", w.source(), tuple(notes), changed_domain=f.domain == "01")


def _compile_constrained(cs: ConstrainedSum) -> CompiledReader:
    f = cs.weight
    monos = spin_monomials(f)
    w = _Writer(f.params, f.derived)
    w.family(f.variable, f.shape, offset="0")
    w.line(f"n_vars = math.prod(shape_{f.variable})")
    w.line("parts, constant, rank_one = [], 0.0, []")
    for k, m in enumerate(monos):
        w.monomial(m, k)
    _guards(w, [(f.terms, f.variable)], monos)
    w.line("terms, more = _merge_terms(parts)")
    w.line("constraints = []")
    lo, hi = DOMAIN_VALUES[f.domain]
    for c in cs.constraints:
        w.parity(c, f.variable, Fraction(lo), Fraction(hi))
    w.line('return {"kind": "constrained", "n": n, "n_vars": int(n_vars), "terms": terms, "constant": constant + more, '
           '"constraints": constraints}')
    notes = ("the weight is written over +-1 forms of the variables (x = 1 where the variable takes its upper value)",)
    return CompiledReader("constrained", w.source(), notes, changed_domain=f.domain == "01")


def _compile_disorder(da: DisorderAverage) -> CompiledReader:
    eta, s = da.disorder.variable, da.inner.variable
    domains = {eta: da.disorder.domain, s: da.inner.domain}
    outer = spin_monomials(da.disorder, domains)
    inner = merge(expand(to_spins(lift(monomials(da.inner), eta), domains)))
    params = da.params
    derived = tuple({d.name: d for d in (*da.disorder.derived, *da.inner.derived)}.values())
    w = _Writer(params, derived)
    w.family(eta, da.disorder.shape, offset="0")
    w.line(f"n_disorder = math.prod(shape_{eta})")
    w.family(s, da.inner.shape, offset="n_disorder")
    w.line(f"if math.prod(shape_{s}) != n:")
    w.line("    raise ValueError('the spins do not number n')")
    name, expr = da.reference
    w.line(f"reference_beta = float({w.expr(expr)})")
    beta = f"float(p_{da.inner.param(da.inner.beta_key).name})" if da.inner.beta_key else "reference_beta"
    w.line("parts, constant, rank_one = [], 0.0, []")
    for k, m in enumerate(outer):
        w.monomial(m, k)
    w.line("disorder_terms, disorder_constant = _merge_terms(parts)")
    w.line("disorder_constant += constant")
    w.line("parts, constant = [], 0.0")
    for k, m in enumerate(inner):
        w.monomial(m, k)
    _guards(w, [(da.disorder.terms, eta), (da.inner.terms, s)], outer + inner)
    w.line("inner_terms, more = _merge_terms(parts)")
    w.line(f'return {{"kind": "disorder", "n": n, "n_disorder": int(n_disorder), "statistic": {da.statistic!r}, '
           f'"disorder": {{"terms": disorder_terms, "constant": disorder_constant}}, '
           f'"inner": {{"terms": inner_terms, "constant": constant + more}}, '
           f'"reference_beta": reference_beta, "beta": {beta}}}')
    notes = (f"the signs {eta} read by the coefficients become variables of the inner weight "
             "(a model over the signs and the spins together)",)
    return CompiledReader("disorder", w.source(), notes, changed_domain="01" in domains.values())


def _guards(w: "_Writer", written, monos: list[Monomial], blocks: list[Monomial] = ()) -> None:
    """Index checks for the variables the algebra cancelled (s s = 1, like terms adding to zero): the
    formula's own evaluation checks every index a term writes, so the reader does too, once per (loops,
    index) that no monomial or rank-one block left in the reader already reads. ``written`` is
    [(terms, family)] as the formula writes them."""
    read = {(m.loops, s.family, s.index) for m in monos for s in m.sites}
    read |= {(m.loops, s.family, (lp.index,)) for m in blocks for s in m.sites for lp in m.loops}
    missing: dict[tuple, list] = {}
    for terms, family in written:
        for t in terms:
            loops = _canonical_loops(t.loops)
            for site in t.sites:
                if (loops, family, site) not in read and (family, site) not in missing.get(loops, []):
                    missing.setdefault(loops, []).append((family, site))
    for loops, sites in missing.items():
        w.guard(loops, sites)


# -- code writing ------------------------------------------------------------------------------------

class _Writer:
    """Accumulates the body of ``_read_formula``; expressions are renamed to prefixed locals (params
    p_*, derived sizes d_*, loop letters i_*), chained subscripts a[i][j] become a[i, j]."""

    def __init__(self, params, derived):
        self.names = {"n": "n"}
        self.body = ["n = int(n)"]
        for p in params:
            self.names[p.name] = f"p_{p.name}"
            self.body.append(f"p_{p.name} = _param(params, {p.key!r})")
        for d in derived:
            self.names[d.name] = f"d_{d.name}"
            self.body.append(f"d_{d.name} = {self.expr(d.value)}")
        self.families: dict[str, str] = {}

    def line(self, text: str) -> None:
        self.body.append(text)

    def family(self, name: str, shape: tuple[str, ...], offset: str) -> None:
        dims = ", ".join(f"int({self.expr(d)})" for d in shape)
        self.line(f"shape_{name} = ({dims},)")
        self.families[name] = offset

    def expr(self, text: str, local: dict | None = None) -> str:
        tree = ast.parse(text, mode="eval")
        tree = _Rewriter({**self.names, **(local or {})}).visit(tree)
        return ast.unparse(ast.fix_missing_locations(tree))

    def loops(self, loops: tuple[Loop, ...]) -> dict:
        """Lines building the index columns of ``loops``; returns letter -> local name."""
        local: dict[str, str] = {}
        cols: list[str] = []
        for lp in loops:
            lo, hi = self.expr(lp.lo, local), self.expr(lp.hi, local)
            local[lp.index] = f"i_{lp.index}"
            cols.append(local[lp.index])
            prev = ", ".join(cols[:-1])
            self.line(f"{', '.join(cols)}, = _nest(({prev}{',' if prev else ''}), {lo}, {hi})")
        if not loops:
            self.line("i__ = np.zeros(1, dtype=np.int64)")
        return local

    def size(self, local: dict) -> str:
        return f"len({next(iter(local.values()))})" if local else "1"

    def monomial(self, m: Monomial, k: int) -> None:
        self.line(f"# term {k}: {_describe(m)}")
        local = self.loops(m.loops)
        coef = "1.0" if m.coef is None else self.expr(m.coef, local)
        self.line(f"w = {float(m.scale)!r} * _values({coef}, {self.size(local)})")
        if not m.sites:
            self.line("constant += float(w.sum())")
            return
        flats = []
        for s in m.sites:
            index = ", ".join(self.expr(e, local) for e in s.index)
            flats.append(f"_flat(shape_{s.family}, ({index},), {self.families[s.family]}, {self.size(local)})")
        self.line(f"parts.append((np.stack([{', '.join(flats)}], 1), w))")

    def guard(self, loops: tuple[Loop, ...], sites: list[tuple[str, tuple[str, ...]]]) -> None:
        """Only the index checks of ``sites`` (family, index) over ``loops`` (see :func:`_guards`)."""
        self.line("# indices the algebra cancelled, still checked against the shape as the formula checks them")
        local = self.loops(loops)
        for family, index in sites:
            idx = ", ".join(self.expr(e, local) for e in index)
            self.line(f"_flat(shape_{family}, ({idx},), {self.families[family]}, {self.size(local)})")

    def rank_one(self, b, family: str) -> None:
        self.line("# an all-pairs sum kept as the rank-one block (u, a): sum_(i<j) a u_i u_j s_i s_j")
        local = {b.letter: f"i_{b.letter}"}
        self.line(f"i_{b.letter} = np.arange(0, int({self.expr(b.hi)}) + 1, dtype=np.int64)")
        u = "1.0" if b.vector is None else self.expr(b.vector, local)
        weight = "1.0" if b.weight is None else self.expr(b.weight)
        self.line(f"u = np.zeros(math.prod(shape_{family}))")
        self.line(f"u[_flat(shape_{family}, (i_{b.letter},))] = _values({u}, len(i_{b.letter}))")
        self.line(f"rank_one.append((u, {float(b.scale)!r} * float({weight})))")

    def parity(self, c, family: str, lo: Fraction, hi: Fraction) -> None:
        """Rows of one parity condition over the 0/1 values x (value = lo + (hi - lo) x)."""
        a, b = c.affine
        slope, shift = a * (hi - lo), a * lo + b
        if slope.denominator != 1 or slope.numerator % 2 == 0 or shift.denominator != 1:
            raise ValueError("a parity condition is not a sum of the variables' 0/1 values mod 2")
        self.line("# parity condition: " + c.text(family, "words"))
        local = self.loops(c.each)
        each_cols = [local[lp.index] for lp in c.each]
        size = self.size(local)
        self.line(f"rows = np.arange({size})")
        rhs = self.expr(c.rhs, local)
        self.line(f"rhs = _index(_values({rhs}, {size}))")
        # each row's place, taken before the loops of ``over`` repeat the columns
        coords = f"np.stack([{', '.join(each_cols)}], 1)" if each_cols else "np.zeros((1, 0), dtype=np.int64)"
        self.line(f"coords = {coords}")
        inner = dict(local)
        if c.over:
            cols = ["rows"] + each_cols
            for lp in c.over:
                lo_e, hi_e = self.expr(lp.lo, inner), self.expr(lp.hi, inner)
                inner[lp.index] = f"i_{lp.index}"
                self.line(f"{', '.join(cols + [inner[lp.index]])}, = _nest(({', '.join(cols)},), {lo_e}, {hi_e})")
                cols.append(inner[lp.index])
        flats = []
        for site in c.sites:
            index = ", ".join(self.expr(e, inner) for e in site)
            flats.append(f"_flat(shape_{family}, ({index},), 0, len(rows))")
        self.line(f"var = np.concatenate([{', '.join(flats)}])")
        self.line(f"row_of = np.tile(rows, {len(c.sites)})")
        if shift.numerator % 2:
            self.line("rhs = rhs + np.bincount(row_of, minlength=len(rhs))")
        self.line('constraints.append({"row_of": row_of, "var": var, "rhs": rhs % 2, "coords": coords})')

    def source(self) -> str:
        body = "\n".join("    " + ln for ln in self.body)
        runtime = formula_runtime.IMPORTS + "\n\n" + "\n\n\n".join(
            inspect.getsource(f).rstrip() for f in formula_runtime.FUNCTIONS)
        # params that do not fit the formula (an array too short, a string for a number) are a
        # ValueError, as from a task's to_model, not whatever numpy raised
        return (runtime + "\n\n\n" + f"def {READER_NAME}(params, n):\n"
                '    """The model of these params at size n, compiled from the task\'s formula '
                '(tasks/formula_reader.py)."""\n'
                "    try:\n"
                f"        return {READER_NAME}_body(params, n)\n"
                "    except (IndexError, TypeError) as exc:\n"
                "        raise ValueError(f'the params do not fit the formula ({type(exc).__name__}: {exc})') "
                "from None\n"
                f"\n\ndef {READER_NAME}_body(params, n):\n" + body + "\n")


def _describe(m: Monomial) -> str:
    sites = " * ".join(f"{s.family}" + "".join(f"[{e}]" for e in s.index) for s in m.sites)
    loops = ", ".join(f"{lp.index} = {lp.lo}..{lp.hi}" for lp in m.loops)
    return " * ".join(x for x in (str(m.scale), m.coef or "", sites) if x) + (f" over {loops}" if loops else "")


class _Rewriter(ast.NodeTransformer):
    """Renames identifiers to the reader's locals, a[i][j] -> a[i, j], the formula functions to math /
    numpy (with the two digit-keeping identities of the module docstring), isqrt, round and ** to the runtime's
    entry-by-entry forms (tasks/formula_runtime.py)."""

    CALLS = {"len": "len", "isqrt": "_isqrt", "round": "_round", "log": "np.log", "atanh": "np.arctanh"}

    def __init__(self, names: dict):
        self.names = names

    def visit_Name(self, node: ast.Name):
        if node.id not in self.names:
            raise ValueError(f"unknown name {node.id!r} in a formula expression")
        return ast.copy_location(ast.Name(self.names[node.id], ast.Load()), node)

    def visit_Subscript(self, node: ast.Subscript):
        chain, base = [], node
        while isinstance(base, ast.Subscript):
            chain.append(base.slice)
            base = base.value
        idx = [self.visit(s) for s in reversed(chain)]
        value = self.visit(base)
        sl = idx[0] if len(idx) == 1 else ast.Tuple(idx, ast.Load())
        return ast.copy_location(ast.Subscript(value, sl, ast.Load()), node)

    def visit_BinOp(self, node: ast.BinOp):
        if not isinstance(node.op, ast.Pow):
            return self.generic_visit(node)
        args = [self.visit(node.left), self.visit(node.right)]     # an int to a negative power is a float
        return ast.copy_location(ast.Call(ast.Name("_pow", ast.Load()), args, []), node)

    def visit_Call(self, node: ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
            raise ValueError(f"unsupported call {ast.unparse(node)} in a formula expression")
        name = node.func.id
        if name in ("atanh", "log") and len(node.args) == 1:
            x = _one_minus(node.args[0], 2 if name == "atanh" else 1)
            if x is not None:
                x = self.visit(x)
                if name == "atanh":      # atanh(1 - 2x) = (log1p(-x) - log(x)) / 2
                    return ast.parse(f"0.5 * (np.log1p(-({ast.unparse(x)})) - np.log({ast.unparse(x)}))",
                                     mode="eval").body
                return ast.parse(f"np.log1p(-({ast.unparse(x)}))", mode="eval").body
        args = [self.visit(a) for a in node.args]
        func = ast.parse(self.CALLS[name], mode="eval").body
        return ast.copy_location(ast.Call(func, args, []), node)


def _one_minus(node: ast.expr, factor: int):
    """x when ``node`` is 1 - factor * x (factor 1: 1 - x), else None."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and isinstance(node.left, ast.Constant)
            and node.left.value == 1):
        return None
    right = node.right
    if factor == 1:
        return right
    if isinstance(right, ast.BinOp) and isinstance(right.op, ast.Mult) and isinstance(right.left, ast.Constant) \
            and right.left.value == factor:
        return right.right
    return None


__all__ = ["CompiledReader", "READER_NAME", "compile_reader"]
