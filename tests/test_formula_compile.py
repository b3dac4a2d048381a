"""Property tests (Hypothesis) of the compiled readers (tasks/formula_reader.py) over generated formulas:
every term shape tasks/formula.py accepts - fixed indices, constants, products of any arity, % and //
indices, nested bounds, 1D/2D/3D shapes, 0/1 and +-1 variables, affine factors, both conventions,
no inverse temperature - and constrained sums and disorder averages (tasks/formula_extras.py).

A case either compiles to a reader whose output, evaluated by enumeration (tests/formula_eval.py, an
evaluator written from the dict's documented meaning), equals the formula's own enumeration, or is
refused by compile_reader in one line naming the term - exactly the cases the generator planted a
refusable feature in. A reader raises nothing but ValueError, and only where the formula's own
evaluation does too (an index outside the shape). The geometry inference never crashes."""

import os
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from formula_eval import value
from tasks.formula import Derived, Formula, Loop, Param, Term
from tasks.formula_extras import ConstrainedSum, DisorderAverage, Parity
from tasks.formula_reader import compile_reader
from tasks.formula_runtime import _geometry

#: FORMULA_EXAMPLES=3000 for a longer hunt (about 3 minutes); the default run takes seconds
SETTINGS = settings(max_examples=int(os.environ.get("FORMULA_EXAMPLES", 150)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
F = Fraction
PARAMS = (Param("beta", "b"), Param("J", "a real"), Param("h", "a real"), Param("A", "16 reals"),
          Param("B", "16 x 16 reals"), Param("S", "16 bits"), Param("p", "in (0, 1/2)"))
#: the branching factors a product may have after the change to spins (tasks/formula_algebra.py)
LIMIT = 10


def params(draw) -> dict:
    return {"beta": draw(st.floats(0.1, 1.2)), "J": draw(st.floats(-1, 1)), "h": draw(st.floats(-1, 1)),
            "A": draw(st.lists(st.floats(-1, 1), min_size=16, max_size=16)),
            "B": (np.asarray(draw(st.lists(st.floats(-1, 1), min_size=16, max_size=16)))[:, None]
                  * np.linspace(-0.5, 0.5, 16)).tolist(),
            "S": draw(st.lists(st.integers(0, 1), min_size=16, max_size=16)), "p": draw(st.floats(0.05, 0.45))}


def shape(draw) -> tuple[int, tuple[str, ...], tuple[Derived, ...], list[str]]:
    """(n, shape texts, derived sizes, one size text per axis)."""
    rank = draw(st.sampled_from([1, 1, 2, 3]))
    if rank == 1:
        return draw(st.integers(2, 12)), ("n",), (), ["n"]
    if rank == 2:
        R, C = draw(st.integers(2, 3)), draw(st.integers(1, 4))
        return R * C, ("R", "n // R"), (Derived("R", str(R)),), ["R", "(n // R)"]
    R, C = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    return 2 * R * C, ("2", "R", "n // (2 * R)"), (Derived("R", str(R)),), ["2", "R", "(n // (2 * R))"]


def index(draw, letters: list[str], size: str) -> str:
    """One axis's index: a constant, a letter (maybe out of range), or arithmetic taken mod the size."""
    options = ["0", "1"]
    for a in letters:
        options += [a, f"{a} - 1", f"({a} + 1) % {size}", f"({a} // 2) % {size}", f"({size} - 1 - {a}) % {size}",
                    f"isqrt({a}) % {size}"]
        options += [f"({a} * 2 + {b}) % {size}" for b in letters if b != a]
    expr = draw(st.sampled_from(options))
    return expr if expr not in ("0", "1") or size == "n" else f"{expr} % {size}"


def coefficient(draw, letters: list[str]) -> str | None:
    options = [None, "J", "0.5", "h * J"]
    for a in letters:
        options += [f"A[{a}]", f"J * ({a} + 1)", f"log(1 + A[{a}] ** 2)", f"({a} < 2) * h", f"2 ** -{a}",
                    f"round(A[{a}], 1)", f"({a} % 3) * J"]
        options += [f"B[{a}][{b}]" for b in letters if b != a]
    return draw(st.sampled_from(options))


def loops(draw, axes: list[str], count: int) -> tuple[Loop, ...]:
    letters, out = ["i", "j", "k"][:count], []
    for d, a in enumerate(letters):
        outer = letters[:d]
        lo = draw(st.sampled_from(["0", "1", "2"] + outer + [f"{o} + 1" for o in outer]))
        his = ["1", "2"] + outer if d == 2 else ["n - 1", "n - 2", "0", "3", "1"] + [f"{x} - 1" for x in axes] + outer
        out.append(Loop(a, lo, draw(st.sampled_from(his))))
    return tuple(out)


AFFINE = [(F(1), F(0))] * 4 + [(F(-1), F(1)), (F(1, 2), F(1, 2)), (F(-1, 2), F(1, 2)), (F(2), F(-1)), (F(1), F(1))]


def branching(sites, affine, domain) -> int:
    """How many distinct factors of a product are neither a plain spin nor a constant once in spins."""
    a, b = affine if domain == "pm1" else (affine[0] / 2, affine[0] / 2 + affine[1])
    return 0 if a == 0 or b == 0 else len(set(sites))


@st.composite
def term_cases(draw, axes: list[str], domain: str):
    """(Term, the reason it must be refused or None)."""
    kind = draw(st.sampled_from(["plain"] * 12 + ["star", "rank_one", "constant", "long", "bad"]))
    scale = draw(st.sampled_from([F(1), F(-1), F(1, 2), F(3, 2), F(-2)]))
    zeros = ("0",) * (len(axes) - 1)
    if kind == "star":        # a central spin coupled to every other
        return Term((Loop("k", "1", f"{axes[0]} - 1"),), scale, "A[k - 1]", (("0",) + zeros, ("k",) + zeros)), None
    if kind == "rank_one" and axes == ["n"]:       # an all-pairs sum with a factorised coefficient
        b_loop = draw(st.sampled_from([Loop("b", "a + 1", "n - 1"), Loop("b", "0", "a - 1")]))
        return Term((Loop("a", "0", "n - 1"), b_loop), scale, "J * A[a] * A[b]", (("a",), ("b",))), None
    if kind == "long":        # a product of 11 to 14 distinct variables at fixed places
        sites = tuple((f"{k} % {axes[0]}",) + zeros for k in range(draw(st.integers(11, 14))))
        affine = draw(st.sampled_from(AFFINE))
        refused = branching(sites, affine, domain) > LIMIT
        return Term((), scale, "J", sites, affine), "2^" if refused else None
    count = draw(st.integers(0, 3))
    lps = loops(draw, axes, count)
    letters = [lp.index for lp in lps]
    coef = coefficient(draw, letters)
    n_sites = 0 if kind == "constant" else draw(st.integers(1, 4))
    sites = [tuple(index(draw, letters, x) for x in axes) for _ in range(n_sites)]
    if sites and draw(st.booleans()):
        sites.insert(draw(st.integers(0, len(sites))), draw(st.sampled_from(sites)))       # a variable twice
    t = Term(lps, scale, coef, tuple(sites), draw(st.sampled_from(AFFINE)))
    if kind != "bad":
        return t, None
    flaw = draw(st.sampled_from(["chained", "unknown", "arity", "scope"] if lps else ["chained", "unknown", "arity"]))
    if flaw == "chained":
        return replace(t, coef="(0 <= J < 1) * h"), "chained comparison"
    if flaw == "unknown":
        return replace(t, coef="J * zeta"), "'zeta' is not in scope"
    if flaw == "arity":
        return replace(t, sites=t.sites + (("0",) * (len(axes) + 1),)), "indices where the variables form"
    return replace(t, loops=(Loop(lps[0].index, "0", "q"),) + lps[1:]), "'q' is not in scope"


@st.composite
def z_cases(draw):
    n, shp, derived, axes = shape(draw)
    domain = draw(st.sampled_from(["pm1", "01"]))
    terms = draw(st.lists(term_cases(axes, domain), min_size=1, max_size=4))
    formula = Formula(shape=shp, params=PARAMS, terms=tuple(t for t, _ in terms), derived=derived, domain=domain,
                      convention=draw(st.sampled_from(["weight", "energy"])),
                      beta_key=draw(st.sampled_from(["beta", ""])))
    refusal = next(((k + 1, why) for k, (_, why) in enumerate(terms) if why), None)
    return formula, params(draw), n, refusal


def check_case(formula, values, n, refusal, reference):
    """The property of the module docstring for one case; ``reference`` evaluates the formula."""
    try:
        reader = compile_reader(formula)
    except ValueError as exc:
        message = str(exc)
        assert refusal is not None, f"refused without a planted flaw: {message}"
        assert "\n" not in message and message.startswith(refusal[0]) and refusal[1] in message, message
        event("refused")
        return
    assert refusal is None, f"compiled although {refusal} was planted"
    try:
        want = reference()
    except (ValueError, IndexError) as exc:      # an index outside the shape: the reader must refuse it too
        with pytest.raises(ValueError):
            reader.load()(values, n)
        event(f"both refuse the params: {type(exc).__name__}")
        return
    got = value(reader.load()(values, n))
    assert got == pytest.approx(want, rel=1e-9, abs=1e-9)
    event("agreed")


@SETTINGS
@given(case=z_cases())
def test_generated_formulas_compile_to_readers_that_agree(case):
    formula, values, n, refusal = case
    refusal = refusal and (f"cannot compile term {refusal[0]} `", refusal[1])
    check_case(formula, values, n, refusal, lambda: formula.log_z(values, n))


@st.composite
def constrained_cases(draw):
    n = draw(st.integers(2, 9))
    domain = draw(st.sampled_from(["pm1", "01"]))
    terms = draw(st.lists(term_cases(["n"], domain), min_size=1, max_size=3))
    weight = Formula(shape=("n",), params=PARAMS, terms=tuple(t for t, _ in terms), domain=domain,
                     convention=draw(st.sampled_from(["weight", "energy"])), variable="x", beta_key="")
    conditions, refusal = [], next(((f"cannot compile the weight's term {k + 1} `", why)
                                    for k, (_, why) in enumerate(terms) if why), None)
    for c in range(draw(st.integers(1, 3))):
        each = (Loop("i", draw(st.sampled_from(["0", "1"])), draw(st.sampled_from(["n - 1", "n - 2", "0"]))),) \
            if draw(st.booleans()) else ()
        e = [lp.index for lp in each]
        over = (Loop("j", draw(st.sampled_from(["0"] + e)),
                     draw(st.sampled_from(["1", "n - 1"] + [f"{x} + 1" for x in e]))),) if draw(st.booleans()) else ()
        letters = e + [lp.index for lp in over]
        sites = tuple((draw(st.sampled_from(["0", "n - 1"] + [f"({x} + 1) % n" for x in letters] + letters)),)
                      for _ in range(draw(st.integers(1, 3))))
        rhs = draw(st.sampled_from(["1", "0", "S[3]"] + [f"S[{x}]" for x in e] + [f"{x} % 2" for x in e]))
        good = [(F(1), F(0)), (F(-1), F(1))] if domain == "01" else [(F(1, 2), F(1, 2)), (F(-1, 2), F(1, 2))]
        affine = draw(st.sampled_from(good * 4 + [(F(1), F(0)) if domain == "pm1" else (F(2), F(0))]))
        conditions.append(Parity(each, over, sites, rhs, affine))
        if affine not in good and refusal is None:
            refusal = (f"cannot compile parity condition {c + 1} `", "not a sum of the variables' 0/1 values")
    return ConstrainedSum(weight, tuple(conditions)), params(draw), n, refusal


@SETTINGS
@given(case=constrained_cases())
def test_generated_constrained_sums_compile_to_readers_that_agree(case):
    cs, values, n, refusal = case
    check_case(cs, values, n, refusal, lambda: cs.log_value(values, n))


@st.composite
def disorder_cases(draw):
    n = draw(st.integers(2, 5))
    eta_shape = draw(st.sampled_from(["n", "n - 1"]))
    d_domain, s_domain = draw(st.sampled_from(["pm1", "01"])), draw(st.sampled_from(["pm1", "01"]))
    half = (F(-1, 2), F(1, 2))
    signs = Formula(shape=(eta_shape,), params=PARAMS, variable="eta", domain=d_domain, beta_key="",
                    terms=(Term((Loop("b", "0", f"{eta_shape} - 1"),), F(1), "log(p)", (("b",),), half),
                           Term((Loop("b", "0", f"{eta_shape} - 1"),), F(1), draw(st.sampled_from(["h", "log(1 - p)"])),
                                (("b",),), (-half[0], half[1]))))
    reading = draw(st.sampled_from(["eta[b]", "(2 * eta[b] - 1)", "(1 - eta[b])"]))
    inner_terms = [Term((Loop("b", "0", f"{eta_shape} - 1"),), F(1), f"J * {reading}", (("b",), ("(b + 1) % n",))),
                   Term((), F(1), "h * eta[0]", (("0",),))]          # a fixed spin, a fixed sign
    inner_terms += [t for t, why in draw(st.lists(term_cases(["n"], s_domain), max_size=2)) if why is None]
    statistic = draw(st.sampled_from(["mean", "ratio"]))
    inner = Formula(shape=("n",), params=PARAMS, terms=tuple(inner_terms), domain=s_domain,
                    convention=draw(st.sampled_from(["weight", "energy"])),
                    beta_key="beta" if statistic == "ratio" else "")
    reference = ("bN", draw(st.sampled_from(["atanh(1 - 2 * p) / (1 + J ** 2)", "0.5 + p"])))
    return DisorderAverage(signs, inner, reference, statistic), params(draw), n


@settings(SETTINGS, max_examples=SETTINGS.max_examples // 3)
@given(case=disorder_cases())
def test_generated_disorder_averages_compile_to_readers_that_agree(case):
    da, values, n = case
    check_case(da, values, n, None, lambda: da.value(values, n))


@st.composite
def geometry_cases(draw):
    rank = draw(st.integers(1, 3))
    shp = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    n = int(np.prod(shp))
    terms = []
    for k in draw(st.lists(st.integers(1, 3), max_size=3, unique=True)):
        idx = np.asarray(draw(st.lists(st.lists(st.integers(0, n - 1), min_size=k, max_size=k), max_size=8)),
                         dtype=np.int64).reshape(-1, k)
        terms.append((idx, np.ones(len(idx))))
    arrays = [np.asarray(draw(st.floats(-2, 2))), np.asarray(draw(st.lists(st.integers(0, 1), max_size=6)))]
    if draw(st.booleans()):
        arrays.append(np.asarray(draw(st.lists(st.floats(allow_nan=True, allow_infinity=True),
                                               min_size=2 * n, max_size=2 * n))).reshape(n, 2))
    return shp, terms, n, arrays


@SETTINGS
@given(case=geometry_cases())
def test_the_geometry_inference_never_crashes(case):
    shp, terms, n, arrays = case
    positions, coords = _geometry(shp, terms, n, arrays)
    given_points = [a for a in arrays if a.shape == (n, 2) and np.all(np.isfinite(a))]
    if positions is not None:
        assert positions.shape == (n, 2) and np.all(np.isfinite(positions))
    if len(shp) == 2:
        assert coords.shape == (n, 2) and np.array_equal(coords[:, 0] * shp[1] + coords[:, 1], np.arange(n))
        if positions is not None:                                   # the grid drawing, site (r, c) at (c, -r)
            assert np.array_equal(positions, np.stack([coords[:, 1], -coords[:, 0]], 1))
    else:
        assert coords is None
    if len(shp) == 1 and given_points:
        assert np.array_equal(positions, given_points[0])          # points given with the instance win
    if len(shp) == 3:
        assert positions is None


def test_round_of_a_table_entry_is_pythons_round_in_both_evaluators():
    """round(A[i], 1) at A[i] = 0.95 is 0.9 (the float is 0.9499...); numpy's scalar round says 1.0. The
    interpreter and the compiled reader must both keep Python's answer (found by the generator above)."""
    terms = (Term(loops=(), scale=Fraction(1), coef=None, sites=(("0",),), affine=(Fraction(1), Fraction(0))),
             Term(loops=(Loop("i", "0", "n - 1"),), scale=Fraction(1), coef="round(A[i], 1)", sites=(("0",),),
                  affine=(Fraction(1), Fraction(0))))
    weight = Formula(shape=("n",), params=PARAMS, terms=terms, domain="pm1", convention="weight", variable="x",
                     beta_key="")
    cs = ConstrainedSum(weight, (Parity((), (), (("0",),), "1", (Fraction(1, 2), Fraction(1, 2))),))
    a = [0.0] * 16
    a[8] = 0.95
    values = {"beta": 1.0, "J": 0.0, "h": 0.0, "A": a, "B": [[0.0] * 16] * 16, "S": [0] * 16, "p": 0.1}
    want = 1.9 + 8 * np.log(2.0)             # s[0] = +1 by the parity; the other 8 spins are free
    assert cs.log_value(values, 9) == pytest.approx(want, rel=1e-12)
    assert value(compile_reader(cs).load()(values, 9)) == pytest.approx(want, rel=1e-12)
