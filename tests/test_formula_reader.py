"""Readers compiled from a task's formula (tasks/formula_reader.py, tasks/formula_algebra.py): the model
they return against the formula's own enumeration and the task's model, for every task and generated
paraphrases; rank-one blocks kept as vectors; the geometry inferred; digits kept at tiny probabilities."""

import math
import time

import numpy as np
import pytest

from evaluators.oracles.naive import naive_log_z
from search.derivation.checks import exact_value
from search.derivation.runtime import _rt_grid, _rt_start
from search.derivation.view import to_ising
from tasks.formula import Formula, Param, term
from tasks.formula_algebra import rank_one_block, spin_monomials
from tasks.formula_reader import compile_reader
from tasks.paraphrase import paraphrase
from tasks.registry import all_tasks, get_task
from tasks.rotation_system import drawing_is_planar

Z_TASKS = [t for t in all_tasks() if isinstance(t.formula, Formula)]


def _model(reader, params, n):
    return _rt_start(reader(params, n))


@pytest.mark.parametrize("task", Z_TASKS, ids=lambda t: t.id)
@pytest.mark.parametrize("seed", [None, 0, 1, 2])
def test_compiled_reader_gives_the_formula_and_the_task(task, seed):
    """The compiled model's log Z equals the formula's own enumeration (an independent evaluation of the
    same tree) and the task's model, for the task's formula and three generated paraphrases."""
    formula = task.formula if seed is None else paraphrase(task, seed).formula
    reader = compile_reader(formula).load()
    n = min(task.probe_sizes)
    for k in range(2):
        params = task.probe_params(n, 5, k)
        got = naive_log_z(to_ising(_model(reader, params, n)))
        assert got == pytest.approx(formula.log_z(params, n), rel=1e-11, abs=1e-11)
        assert got == pytest.approx(naive_log_z(task.to_model(params, n)), rel=1e-11, abs=1e-11)


def test_a_zero_one_paraphrase_comes_back_to_one_term_exactly():
    """(2x - 1)(2y - 1) multiplied out in {0, 1} variables and converted back: the like terms cancel in
    exact arithmetic, leaving the single pair term (no field, no constant), so P05 stays one rank-one block."""
    p05 = get_task("P05")
    expanded = next(paraphrase(p05, s) for s in range(20) if "expanded" in paraphrase(p05, s).rules[1])
    monos = spin_monomials(expanded.formula)
    assert len(monos) == 1 and len(monos[0].sites) == 2
    assert rank_one_block(monos[0]) is not None


@pytest.mark.parametrize("task_id, n", [("P05", 10_000), ("T10", 100_000)])
def test_all_pairs_sums_stay_rank_one_blocks_at_large_n(task_id, n):
    task = get_task(task_id)
    for seed in (None, 0, 1, 2):
        formula = task.formula if seed is None else paraphrase(task, seed).formula
        params = task.sample_params(np.random.default_rng(3), n)
        start = time.perf_counter()
        out = compile_reader(formula).load()(params, n)
        assert time.perf_counter() - start < 2.0
        assert len(out["rank_one"]) == 1 and out["rank_one"][0][0].shape == (n,)
        assert all(i.shape[1] == 1 for i, _ in out["terms"])       # fields at most, never n^2 pairs


def test_the_lattice_gas_constant_is_the_change_of_variables():
    """T11's occupations x = (1 + s)/2 leave the energy constant n mu/2 + (n - 1) eps/4."""
    t11 = get_task("T11")
    reader = compile_reader(t11.formula)
    assert reader.changed_domain
    params = t11.probe_params(10, 0, 0)
    out = reader.load()(params, 10)
    assert out["constant"] == pytest.approx(10 * params["mu"] / 2 + 9 * params["eps"] / 4, rel=1e-14)


def test_geometry_is_inferred_from_the_formula():
    p04, t07, t17, p03 = (get_task(t) for t in ("P04", "T07", "T17", "P03"))
    out = compile_reader(p04.formula).load()(p04.probe_params(16, 0, 0), 16)
    assert out["positions"].tolist()[:5] == [[0, 0], [1, 0], [2, 0], [3, 0], [0, -1]]
    ring = compile_reader(t07.formula).load()(t07.probe_params(10, 0, 0), 10)
    assert np.allclose(np.hypot(*ring["positions"].T), 1.0)
    params = t17.probe_params(16, 0, 0)
    drawn = compile_reader(t17.formula).load()(params, 16)
    assert np.array_equal(drawn["positions"], np.asarray(params["points"]))
    edges = drawn["terms"][0][0]
    assert drawing_is_planar(16, edges, drawn["positions"])
    torus = _model(compile_reader(p03.formula).load(), p03.probe_params(16, 0, 0), 16)
    assert torus["positions"] is None                              # pairs wrap: no straight-line drawing
    assert _rt_grid(torus) == {"rows": 4, "cols": 4, "wrap_rows": True, "wrap_cols": True}


@pytest.mark.parametrize("seed", [None, 0, 1, 2])
def test_constrained_and_disorder_readers_reproduce_the_formulas(seed):
    t18, t19, t20 = (get_task(t) for t in ("T18", "T19", "T20"))
    f18 = t18.formula if seed is None else paraphrase(t18, seed).formula
    params = t18.probe_params(9, 1, 0)
    assert exact_value(compile_reader(f18).load()(params, 9)) == pytest.approx(f18.log_value(params, 9), rel=1e-12)
    for task in (t19, t20):
        f = task.formula if seed is None else paraphrase(task, seed).formula
        params = {"p": 0.13, "J": 0.8, "beta": 0.6}
        got = exact_value(compile_reader(f).load()(params, 4))
        assert got == pytest.approx(f.value(params, 4), rel=1e-12)


def test_tiny_probabilities_keep_their_digits():
    """atanh(1 - 2p) is compiled as (log1p(-p) - log p)/2: at p = 1e-15 the reference inverse temperature
    is right to rounding, where the literal atanh is off by 2e-5 (relative)."""
    out = compile_reader(get_task("T20").formula).load()({"p": 1e-15, "J": 1.0, "beta": 1.0}, 9)
    assert out["reference_beta"] == pytest.approx(0.5 * (math.log1p(-1e-15) - math.log(1e-15)), rel=1e-15)
    assert abs(math.atanh(1 - 2e-15) - out["reference_beta"]) > 1e-5 * out["reference_beta"]


def test_a_formula_that_cannot_be_compiled_says_why():
    bad = Formula(shape=("n",), params=(Param("beta", "b"), Param("J", "j")),
                  terms=(term("J * s[i] * s[i + 1]", ("i", "0", "n - 2")),))
    bad = Formula(shape=bad.shape, params=bad.params, terms=(bad.terms[0].__class__(
        bad.terms[0].loops, bad.terms[0].scale, "frobnicate(J)", bad.terms[0].sites),))
    with pytest.raises(ValueError, match=r"^cannot compile term 1 `.*`: the call frobnicate\(J\) is not one of"):
        compile_reader(bad)
