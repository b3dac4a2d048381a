"""The decimal route of the four-Pfaffian torus program (issue 34: T18 exact from its formula at every
p): a class far below the likeliest, or weights exp(-2|K|) below 2^-500, by the same Pfaffians in
decimal arithmetic with as many digits as the class needs (search/structural/templates/skew_decimal.py,
torus_decimal.py). Checked against enumeration of every edge set (3 x 3, weights down to e^-700), the
exact count at p = 1/2, chain enumeration (L = 3, 4) and the transfer matrix (L = 5, 6) at p from 1/2
to 1e-300, every class; the shared part's fewer digits against all digits; the derived T18 program on
the ladder's cold draws at 12 x 12 (p = 1.4e-239, where its double-double route cannot go: weights
below 2^-500) against the transfer matrix's value (computed live under ``-m slow``).
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pytest

from evaluators.oracles.torus_pfaffian import _torus_couplings, torus_dual
from evaluators.oracles.transfer_matrix import transfer_matrix_log_z
from search.derivation.solvers import torus_pfaffian as solver
from search.structural.templates import torus_decimal
from search.structural.templates.skew_decimal import _sd_context
from search.structural.templates.torus_decimal import _td_class_sums, _td_setup
from tasks import toric_code as tc
from tasks.registry import get_task
from tests.test_torus_pfaffian import _enumerate_classes

TASK = get_task("T18")
P_GRID = (0.5 - 1e-12, 0.3, 0.1, 1e-12, 1e-17, 1e-160, 1e-300)


def _logs(W):
    return np.array([float(w.ln(_sd_context(40))) if w > 0 else -math.inf for w in W]).reshape(2, 2)


@pytest.mark.parametrize("terminals", [(), ((0, 0), (1, 2)), ((0, 0), (0, 1), (2, 1), (1, 2))])
def test_class_sums_match_enumeration(terminals):
    rng = np.random.default_rng(len(terminals))
    log_xh, log_xv = -rng.uniform(0.0, 3.0, (3, 3)), -rng.uniform(0.0, 3.0, (3, 3))
    log_xh[0, 1], log_xv[2, 2] = -700.0, -400.0             # weights far below float64's 2^-500 in products
    t = np.zeros((3, 3), dtype=np.int64)
    for r, c in terminals:
        t[r, c] = 1
    ref = _enumerate_classes(log_xh, log_xv, t)
    W, bounds = _td_class_sums(_td_setup(log_xh, log_xv, t), 400)
    assert all(b < w * Decimal("1e-12") for w, b in zip(W, bounds))
    np.testing.assert_allclose(_logs(W), ref, rtol=1e-13)


def test_half_counts_every_class_exactly():
    """p = 1/2: every weight 1, each class holds 2^(n-1) of the 2^(n+1) T-joins of a 5 x 5 torus."""
    t = np.zeros((5, 5), dtype=np.int64)
    t[0, 0] = t[3, 2] = 1
    W, _ = _td_class_sums(_td_setup(np.zeros((5, 5)), np.zeros((5, 5)), t), 60)
    assert all(w == 2 ** 24 for w in W)


def _t18_case(L: int, p: float, cls: int):
    rng = np.random.default_rng(L)
    errors = (rng.random(2 * L * L) < 0.15).astype(np.int64)
    return {"p": p, "syndrome": tc.syndrome(L, errors).tolist(), "homology": [cls >> 1, cls & 1]}


def _decimal_log_p(params, n):
    """log P(class | S) by the decimal route alone (the program's fallback, forced)."""
    model = TASK.to_model(params, n)
    Kh, Kv = _torus_couplings(model)
    log_xh, log_xv, t, (a, b) = torus_dual(Kh, Kv)
    shift = math.log(2.0) + np.abs(Kh).sum() + np.abs(Kv).sum() + model.beta * model.constant
    return shift + solver._sol_torus_decimal_log(log_xh, log_xv, t, a, b)


def _reference(params, n):
    own = TASK.own_reference(params, n, "brute")
    return own[0] if own is not None else transfer_matrix_log_z(TASK.to_model(params, n))


FAST = [(L, p) for L in (3, 4) for p in P_GRID] + [(5, 0.1), (5, 1e-17), (5, 1e-300), (6, 1e-160)]
SLOW = [(L, p) for L in (5, 6) for p in P_GRID if (L, p) not in FAST]


@pytest.mark.parametrize("L, p", FAST + [pytest.param(L, p, marks=pytest.mark.slow) for L, p in SLOW])
def test_t18_every_class_against_chains_and_transfer(L, p):
    for cls in range(4):
        params = _t18_case(L, p, cls)
        ref = _reference(params, L * L)
        assert _decimal_log_p(params, L * L) == pytest.approx(ref, rel=1e-12, abs=1e-12)


def test_shared_digits_agree_with_all_digits(monkeypatch):
    """The interior (shared by the four sectors) in TD_SHARED_DIGITS gives the class sums that all
    digits give, on classes down to 1e-600 of the largest."""
    params = _t18_case(6, 1e-160, 1)
    model = TASK.to_model(params, 36)
    log_xh, log_xv, t, _ = torus_dual(*_torus_couplings(model))
    setup = _td_setup(log_xh, log_xv, t)
    few, _ = _td_class_sums(setup, 700)
    monkeypatch.setattr(torus_decimal, "TD_SHARED_DIGITS", 10 ** 6)
    every, _ = _td_class_sums(setup, 700)
    assert _logs(few).max() - _logs(few).min() > 1400.0
    np.testing.assert_allclose(_logs(few), _logs(every), rtol=1e-14)


@pytest.fixture(scope="module")
def program():
    from search.derivation import derive

    d = derive(TASK)
    assert d.program is not None, d.error
    assert "import decimal" in d.program
    namespace: dict = {}
    exec(compile(d.program, "<derived T18>", "exec"), namespace)
    return namespace


#: the transfer matrix on the 12 x 12 ladder draw at p = 1.38e-239 (seed 0), every class (26-77 s each)
TM_12 = {(0, 0): -21989.16465512497, (0, 1): -21988.38887567983, (1, 0): -21989.671742426624, (1, 1): -21989.609363418393}


def _cold_12():
    from evaluators.ladder import ladder_draws

    draw = ladder_draws(TASK, 144, 0)[3]
    assert draw.kind == "cold" and draw.params["p"] < 2.0 ** -500
    return draw.params


def test_program_12x12_cold_draw(program):
    params = _cold_12()
    for (a, b), ref in list(TM_12.items())[1:3]:
        got = program["log_Z"]({**params, "homology": [a, b]}, 144)
        assert got == pytest.approx(ref, rel=1e-12)


@pytest.mark.slow
def test_program_12x12_cold_draw_transfer_matrix_live(program):
    params = _cold_12()
    for a, b in TM_12:
        case = {**params, "homology": [a, b]}
        ref = transfer_matrix_log_z(TASK.to_model(case, 144))
        assert ref == pytest.approx(TM_12[(a, b)], rel=1e-13)
        assert program["log_Z"](case, 144) == pytest.approx(ref, rel=1e-12)
