"""The planar-code decoder (evaluators/decoding) against independent references: enumeration of
every error (ConstrainedSum.log_value, L = 3), the constrained sum eliminated with its conditions
(L = 4, 5) and the planar Pfaffian oracle on T21's face-dual model (L = 8, 16 here; L = 32 under
-m slow), at p from 1e-12 to 1/2, both classes."""

import warnings

import numpy as np
import pytest

from evaluators.decoding.planar_code import class_log_probability, small_p_form, transfer_log_p, transfer_log_p_dd
from evaluators.decoding.sampling import Outcomes, class_log_probabilities_batch, classes, draw_errors, syndromes
from evaluators.oracles.constrained_sum import constrained_log_value
from evaluators.oracles.planar import planar_log_z
from tasks.catalog.t21_surface_code import TASK as T21
from tasks.catalog.t21_surface_code import syndrome as t21_syndrome
from tasks.formula_reader import compile_reader

PS = (1e-12, 1e-3, 0.05, 0.1092, 0.2, 0.4999, 0.5)
TOL = 1e-9          # in log P; measured worst: 2e-14 (enumeration), 1e-11 (planar oracle, its own error)


def _syndromes(L: int, count: int, seed: int, p_draw: float = 0.15) -> list[np.ndarray]:
    rng = np.random.default_rng([seed, L])
    return [t21_syndrome(L, e) for e in draw_errors(rng, L, p_draw, count)]


def _params(S, p, a):
    return {"p": p, "syndrome": np.asarray(S).tolist(), "cls": a}


def test_enumeration_of_every_error_at_L3():
    L = 3
    for S in _syndromes(L, 4, 0, p_draw=0.3):
        for p in PS:
            for a in (0, 1):
                ref = T21.formula.log_value(_params(S, p, a), L * L)
                got = class_log_probability(L, p, S, a)
                assert abs(got - ref) < TOL, (S.tolist(), p, a, got, ref)


@pytest.mark.parametrize("L", [4, 5])
def test_constrained_sum_elimination(L):
    read = compile_reader(T21.formula).load()
    for S in _syndromes(L, 2, 1):
        for p in PS:
            for a in (0, 1):
                ref = constrained_log_value(read(_params(S, p, a), L * L))
                assert abs(class_log_probability(L, p, S, a) - ref) < TOL, (L, p, a)


def _against_planar(L, syndromes_, ps):
    worst = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for S in syndromes_:
            for p in ps:
                for a in (0, 1):
                    ref = planar_log_z(T21.to_model(_params(S, p, a), L * L))
                    err = abs(class_log_probability(L, p, S, a) - ref)
                    assert err < TOL * max(1.0, abs(ref) / 100), (L, p, a, err)
                    worst = max(worst, err)
    return worst


def test_planar_oracle_L8_and_L16():
    _against_planar(8, _syndromes(8, 2, 2), PS)
    _against_planar(16, _syndromes(16, 1, 3), PS)


@pytest.mark.slow
def test_planar_oracle_L32():
    """A minute or two (the oracle at L = 32 and p = 1e-12 runs its cold, certified elimination)."""
    _against_planar(32, _syndromes(32, 2, 4), PS)


def test_double_double_agrees_with_float64_where_both_hold():
    for L in (12, 32):
        for S in _syndromes(L, 2, 5):
            for p in (0.01, 0.1092, 0.3):
                for a in (0, 1):
                    x = transfer_log_p(L, p, S.astype(np.int8), a)
                    y = transfer_log_p_dd(L, p, S.astype(np.int8), a)
                    assert abs(x - y) < 1e-10 * max(1.0, abs(y) / 100)


def test_small_p_form_agrees_with_double_double_where_that_holds():
    """Below DD_MIN_P the value comes from the small-p form; on L = 12 double-double is still exact
    there (it fails on larger L, measured), so the two must agree."""
    L = 12
    for S in _syndromes(L, 3, 6):
        for p in (5e-13, 1e-14, 1e-16):
            for a in (0, 1):
                assert abs(small_p_form(L, p, S.astype(np.int8), a) - transfer_log_p_dd(L, p, S.astype(np.int8), a)) < 1e-9


def test_sampled_syndromes_and_classes_are_t21s():
    L = 7
    rng = np.random.default_rng(7)
    E = draw_errors(rng, L, 0.2, 40)
    S = syndromes(L, E)
    assert all(np.array_equal(S[k], t21_syndrome(L, E[k])) for k in range(len(E)))
    assert np.array_equal(classes(L, E), E[:, [r * L for r in range(L)]].sum(axis=1) % 2)
    lp = class_log_probabilities_batch(L, 0.2, S)
    assert np.allclose(lp, [[class_log_probability(L, 0.2, s, a) for a in (0, 1)] for s in S], atol=1e-12)


def test_outcome_estimators():
    o = Outcomes(np.log(np.array([[0.3, 0.1], [0.1, 0.3], [0.2, 0.2]])), np.array([0, 0, 1], dtype=np.int8))
    assert np.allclose(o.indicator(), [1.0, 0.0, 0.5])
    assert np.allclose(o.nishimori(), [0.75, 0.75, 0.5])


def test_refuses_what_it_cannot_do():
    S = np.zeros((3, 2), dtype=np.int8)
    for bad in (dict(L=3, p=0.0), dict(L=3, p=0.6), dict(L=1, p=0.1)):
        with pytest.raises(ValueError):
            class_log_probability(bad["L"], bad["p"], S, 0)
    with pytest.raises(ValueError):
        class_log_probability(3, 0.1, np.zeros((3, 3)), 0)
    with pytest.raises(ValueError):
        class_log_probability(3, 0.1, S, 2)
