"""Each term shape tasks/formula.py accepts, compiled (tasks/formula_reader.py) and checked against the
formula's own enumeration: the shapes that used to crash or mis-read (a fixed spin index, an empty
range, isqrt and ** on index columns, a parity condition with a fixed site, a long product, beta_key
""), what is refused and how it says so, a formula-only task's to_model, and the structural readers'
message for a constrained sum. The generated formulas are in tests/test_formula_compile.py."""

from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest

from evaluators.oracles.brute import brute_log_z
from formula_eval import value
from search.structural.readers import NoReader, reader_source
from tasks.base import Gold, Task
from tasks.formula import Formula, Loop, Param, Term, term
from tasks.formula_extras import ConstrainedSum, Parity
from tasks.formula_reader import compile_reader
from tasks.registry import get_task

HALF = Fraction(1, 2)
PARAMS = (Param("beta", "b"), Param("B", "a real"), Param("J", "a real"), Param("A", "16 reals"))
RNG = np.random.default_rng(7)
VALUES = {"beta": 0.7, "B": 0.3, "J": -0.8, "A": RNG.normal(size=16).tolist()}


def z(*terms, domain="pm1", shape=("n",), **kw) -> Formula:
    return Formula(shape=shape, params=PARAMS, terms=terms, domain=domain, **kw)


def agrees(formula, n, params=VALUES):
    got = value(compile_reader(formula).load()(params, n))
    assert got == pytest.approx(formula.log_z(params, n), rel=1e-10, abs=1e-10)
    return got


STAR = (term("B * s[0]"), term("A[k - 1] * s[0] * s[k]", ("k", "1", "n - 1")))
SHAPES = {
    "a central spin coupled to every other (fixed index)": z(*STAR),
    "a fixed index on one axis of a grid": z(term("J * s[0][c] * s[1][c]", ("c", "0", "n // 2 - 1")),
                                             term("B * s[1][0]"), shape=("2", "n // 2")),
    "constants only, with and without loops": z(term("3 * B"), term("A[i]", ("i", "0", "n - 1"))),
    "empty ranges (lo > hi), nested and not": z(term("J * s[i] * s[i + 1]", ("i", "3", "1")),
                                                term("B * s[i] * s[j]", ("i", "0", "n - 1"), ("j", "i + 5", "i + 2")),
                                                term("B * s[2]")),
    "% and // indices, bounds reading the outer index": z(
        term("A[i] * s[i // 2] * s[(i * 3 + j) % n]", ("i", "0", "n - 1"), ("j", "i", "n - 1"))),
    "3D shape, coefficient reading some loops only": Formula(
        shape=("2", "2", "n // 4"), params=PARAMS,
        terms=(term("A[c] * s[a][b][c] * s[(a + 1) % 2][b][c]", ("a", "0", "1"), ("b", "0", "1"),
                    ("c", "0", "n // 4 - 1")),
               term("J * s[1][0][c]", ("c", "0", "n // 4 - 1")))),
    "isqrt and a negative power of a loop index": z(term("J * 2 ** -i * s[isqrt(i)]", ("i", "0", "n - 1"))),
    "a variable repeated in a product, 0/1": z(term("J * s[i] * s[i] * s[(i + 1) % n]", ("i", "0", "n - 1")),
                                               term("B * s[0] * s[0]"), domain="01"),
    "affine factors (1 - x), energy convention": replace(
        z(term("J * s[i] * s[i + 1] * s[0]", ("i", "0", "n - 2")), domain="01", convention="energy"),
        terms=(replace(term("J * s[i] * s[i + 1] * s[0]", ("i", "0", "n - 2")), affine=(-Fraction(1), Fraction(1))),)),
    "a product of twelve +-1 spins (one monomial)": z(term("J * " + " * ".join(f"s[{k}]" for k in range(12)))),
    "no inverse temperature (beta_key '')": z(term("J * s[i] * s[i + 1]", ("i", "0", "n - 2")), beta_key=""),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_every_term_shape_compiles_to_the_formula(name):
    formula = SHAPES[name]
    n = 12
    agrees(formula, n)


def test_the_star_reads_the_central_spin_once_per_coupling():
    out = compile_reader(z(*STAR)).load()(VALUES, 6)
    (fields, w1), (pairs, w2) = out["terms"]
    assert fields.tolist() == [[0]] and w1.tolist() == [0.3]
    assert pairs.tolist() == [[0, k] for k in range(1, 6)] and np.allclose(w2, VALUES["A"][:5])


def test_a_repeated_zero_one_variable_is_itself():
    """x_i x_i x_j = x_i x_j for 0/1 variables (not x_j, as s_i s_i s_j = s_j would give)."""
    twice = z(term("J * s[0] * s[0] * s[1]"), domain="01")
    once = z(term("J * s[0] * s[1]"), domain="01")
    assert agrees(twice, 3) == pytest.approx(agrees(once, 3), rel=1e-14)
    assert agrees(twice, 3) != pytest.approx(agrees(z(term("J * s[1]"), domain="01"), 3), rel=1e-6)


REFUSED = {
    "a product of eleven 0/1 variables": (z(term("B * s[0]"), term("J * " + " * ".join(f"s[{k}]" for k in range(11))),
                                            domain="01"), "term 2", "2^11 monomials"),
    "a chained comparison": (z(term("(0 <= J < 1) * s[0]")), "term 1", "chained comparison"),
    "an index too few": (z(term("J * s[i]", ("i", "0", "1")), shape=("2", "n // 2")), "term 1",
                         "s[i] has 1 indices where the variables form an array of 2 axes"),
    "a bound reading an inner loop": (z(term("J * s[i] * s[j]", ("i", "0", "j"), ("j", "0", "n - 1"))), "term 1",
                                      "'j' is not in scope"),
    "a letter used twice": (z(term("J * s[i]", ("i", "0", "1"), ("i", "0", "1"))), "term 1", "used twice"),
    "an unknown function": (z(Term((Loop("i", "0", "n - 1"),), Fraction(1), "exp(J)", (("i",),))), "term 1",
                            "the call exp(J)"),
    "a parity condition on +-1 values": (ConstrainedSum(z(term("J * s[0]"), beta_key=""), (
        Parity((), (), (("0",), ("1",)), "1"),)), "parity condition 1", "not a sum of the variables' 0/1 values"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_what_cannot_be_compiled_is_refused_in_one_line_naming_the_term(name):
    formula, where, why = REFUSED[name]
    with pytest.raises(ValueError) as info:
        compile_reader(formula)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"cannot compile {where} `") and why in message, message


def test_a_parity_condition_with_a_fixed_site_and_inner_loops():
    """x[0] + sum_{j=i..i+1} x[j mod n] = S[i] for every i: one row per i with its coords, the fixed site
    repeated per row (it used to be one scalar, which np.concatenate refused)."""
    weight = Formula(shape=("n",), params=(Param("P", "reals"), Param("S", "bits")),
                     terms=(term("P[i] * x[i]", ("i", "0", "n - 1"), variable="x"),), variable="x", domain="01",
                     beta_key="")
    cond = Parity((Loop("i", "0", "n - 2"),), (Loop("j", "i", "i + 1"),), (("0",), ("j % n",)), "S[i]")
    cs = ConstrainedSum(weight, (cond,))
    params = {"P": RNG.normal(size=8).tolist(), "S": [1, 0, 0, 1, 1, 0, 1, 0]}
    out = compile_reader(cs).load()(params, 7)
    assert out["constraints"][0]["coords"].tolist() == [[i] for i in range(6)]
    assert value(out) == pytest.approx(cs.log_value(params, 7), rel=1e-12)


# -- a task stated by its formula alone ------------------------------------------------------------

class FormulaOnly(Task):
    id, title, canonical, paraphrased = "FORMULA_ONLY", "star", "star", "star"
    gold, probe_sizes = Gold("treewidth_bounded", "O(n)"), (6, 9)
    formula = z(*STAR, term("A[k] * s[k] * s[(k + 1) % n]", ("k", "1", "n - 1")))

    def sample_params(self, rng, n):
        return {"beta": 0.9, "B": float(rng.normal()), "J": 0.0, "A": rng.normal(size=16).tolist()}


def test_a_formula_only_task_gets_its_model_from_the_formula():
    task = FormulaOnly()
    for n in task.probe_sizes:
        params = task.probe_params(n, 0, 0)
        model = task.to_model(params, n)
        assert model.n == n and model.beta == 0.9 and model.max_order == 2
        assert brute_log_z(model) == pytest.approx(task.formula.log_z(params, n), rel=1e-12)


def test_a_task_with_its_own_to_model_keeps_it_and_one_with_neither_stays_abstract():
    class Own(FormulaOnly):
        def to_model(self, params, n):
            return "own"

    assert Own().to_model({}, 6) == "own"
    assert type(get_task("P01")).to_model is not Task.model_from_formula      # a catalogue task keeps its own

    class Neither(Task):
        def sample_params(self, rng, n):
            return {}

    with pytest.raises(TypeError, match="abstract"):
        Neither()


def test_the_structural_readers_say_what_a_constrained_sum_is():
    with pytest.raises(NoReader, match=r"task T18: its formula is a constrained sum .* which the structural "
                                       r"templates do not read directly"):
        reader_source(get_task("T18"))
