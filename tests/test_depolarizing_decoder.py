"""The depolarizing planar-code decoder (evaluators/decoding/depolarizing_planar.py): the boundary MPS
against independent references. Enumeration of each class's stabilizer coset (L = 3: 2^6 x 2^6 error
pairs per class); T21's exact bit-flip decoder (the fermionic column transfer, another method) on the
x marginal (the sum over the plaquette syndromes at L = 3 is T21 at 2p/3) and on the two halves of the
network separately (x only, z only through the transposition) at L = 6; the error against chi (L = 5,
against the uncut contraction)."""

import math

import numpy as np
import pytest

from evaluators.decoding import depolarizing_planar as dp
from evaluators.decoding.planar_code import class_log_probability as t21_log_p
from evaluators.decoding.sampling import Outcomes

PS = (0.05, 0.15, 0.189, 0.3)
TOL = 1e-10                # in log P, measured worst 5e-12 (p = 0.05)


def _syndromes(L, count, seed, p_draw=0.2):
    rng = np.random.default_rng([seed, L])
    x, z = dp.draw(rng, L, p_draw, count)
    return dp.syndromes(L, x, z), dp.classes(L, x, z)


def test_errors_syndromes_and_classes():
    L = 5
    rng = np.random.default_rng(0)
    x, z = dp.draw(rng, L, 0.3, 4000)
    kinds = np.bincount((2 * x + z).ravel(), minlength=4) / x.size          # I, Z, X, Y
    assert abs(kinds[0] - 0.7) < 0.01 and all(abs(k - 0.1) < 0.01 for k in kinds[1:])
    px, pz = dp.plaquette_generators(L), dp.vertex_generators(L)
    zero = np.zeros_like(px)
    # every generator commutes with every check and keeps the class
    assert not dp.syndromes(L, px, zero).any() and not dp.syndromes(L, zero[:len(pz)], pz).any()
    assert not dp.classes(L, px, zero).any() and not dp.classes(L, zero[:len(pz)], pz).any()
    # the logical operators: X on the row h(0, .) flips a, Z on the column h(., 0) flips b
    row, col = np.zeros((1, dp.qubits(L)), np.uint8), np.zeros((1, dp.qubits(L)), np.uint8)
    row[0, :L] = 1
    col[0, 0:L * L:L] = 1
    assert not dp.syndromes(L, row, col).any()
    assert dp.classes(L, row, 0 * row)[0] == 2 and dp.classes(L, 0 * col, col)[0] == 1
    # reference errors have the syndromes and classes asked
    syn, cls = _syndromes(L, 30, 1)
    for c in range(4):
        fx, fz = dp.reference_errors(L, syn, np.full(30, c))
        assert np.array_equal(dp.syndromes(L, fx, fz), syn) and np.all(dp.classes(L, fx, fz) == c)


@pytest.mark.parametrize("p", PS)
def test_the_mps_is_the_coset_enumeration_at_L3(p):
    L = 3
    syn, _ = _syndromes(L, 6, 2, p_draw=0.25)
    exact = np.array([[dp.exact_class_log_probability(L, p, s, c) for c in range(4)] for s in syn])
    for chi in (4, None):                       # 4 = 2^(L-1): nothing is cut
        got = dp.class_log_probabilities(L, p, syn, chi)
        assert np.abs(got - exact).max() < TOL, (chi, np.abs(got - exact).max())
    assert np.abs(dp.class_log_probabilities(L, p, syn, 1) - exact).max() > 0.1     # chi = 1 is not exact


@pytest.mark.parametrize("p", (1e-6, 1e-12))
def test_tiny_p_at_L3_keeps_the_decision_not_the_digits(p):
    """At tiny p float64 loses digits: the boundary state of a cut holds configurations that push an
    error onto the cut (weight ~1 on either side, ~p once both sides are joined), so a class of weight
    p^k is read off states of norm ~1 and rounding (1e-16 of that norm) takes over once p^k < 1e-16.
    Measured (tests/benchmarks/depolarizing_mps_check.py): at L = 3 errors up to 6e-4 (p = 1e-6) and
    20 (p = 1e-12) in log P, some unlikely classes -inf, the decision still right; at L = 4, p = 1e-12
    the decision itself fails (max_a P(a | S) off by 0.25). The decoder is for the threshold region
    (p ~ 0.1-0.3: errors of 1e-14 at L <= 4); this pins what holds at L = 3."""
    L = 3
    syn, _ = _syndromes(L, 6, 3, p_draw=0.15)
    exact = np.array([[dp.exact_class_log_probability(L, p, s, c) for c in range(4)] for s in syn])
    got = dp.class_log_probabilities(L, p, syn, None)
    best = exact.argmax(axis=1)
    assert np.array_equal(got.argmax(axis=1), best)
    post = lambda a: Outcomes(a, best.astype(np.int8)).nishimori()      # noqa: E731
    assert np.abs(post(got) - post(exact)).max() < 1e-4
    assert np.abs(got - exact).max() > 1e-6             # the digits this test does not claim


def test_summed_over_the_z_syndromes_it_is_the_bit_flip_code_at_2p_over_3():
    """sum over S_z and b of P(a, b, S_x, S_z) is the x marginal: each qubit's x is 1 with probability
    2p/3, independently, so it is T21's P(a, S_x) at 2p/3 (the column transfer: another method). At
    L = 3 over all 2^6 plaquette syndromes, both classes a, two vertex syndromes."""
    L = 3
    nz = L * (L - 1)
    sz = ((np.arange(1 << nz)[:, None] >> np.arange(nz)[None, :]) & 1).reshape(-1, L, L - 1)
    sx_all, _ = _syndromes(L, 2, 6, p_draw=0.3)
    for p in (0.05, 0.189, 0.3):
        for sx in sx_all[:, 0]:
            syn = np.stack([np.broadcast_to(sx, sz.shape), sz], axis=1).astype(np.int8)
            lp = dp.class_log_probabilities(L, p, syn, 4)                 # (64, 4): classes 2a + b
            for a in (0, 1):
                total = np.logaddexp.reduce(lp[:, 2 * a:2 * a + 2].ravel())
                assert abs(total - t21_log_p(L, 2 * p / 3, sx, a)) < TOL, (p, a)


def test_each_half_alone_is_the_bit_flip_decoder():
    """With weights that ignore z (x only), the network is T21's bit-flip class probability times the
    2^(L (L-1)) z-coset elements; with weights that ignore x it is T21's on the transposed plaquette
    syndrome. T21's decoder is the fermionic column transfer: an independent method. L = 6, chi = 32:
    the plaquette legs' rank 2^(L-1), nothing cut."""
    L, p = 6, 0.13
    syn, _ = _syndromes(L, 2, 4)
    q = 1.0 - p
    rep = np.repeat(syn, 4, axis=0)
    cls = np.tile(np.arange(4), len(syn))
    fx, fz = dp.reference_errors(L, rep, cls)
    x_only = dp.contract(L, p, fx, fz, 32, w=np.array([[q, q], [p, p]])).reshape(-1, 4)
    z_only = dp.contract(L, p, fx, fz, 32, w=np.array([[q, p], [q, p]])).reshape(-1, 4)
    shift = L * (L - 1) * math.log(2.0)
    for k, s in enumerate(syn):
        for c in range(4):
            a, b = c // 2, c % 2
            assert abs(x_only[k, c] - shift - t21_log_p(L, p, s[0], a)) < 1e-9
            assert abs(z_only[k, c] - shift - t21_log_p(L, p, s[1], b)) < 1e-9


def test_the_error_falls_with_chi_to_rounding():
    L, p = 5, 0.189
    syn, _ = _syndromes(L, 8, 5)
    exact = dp.class_log_probabilities(L, p, syn, None)
    assert np.abs(dp.class_log_probabilities(L, p, syn, 16) - exact).max() < 1e-11      # 16 = 2^(L-1)
    errs = [np.abs(dp.class_log_probabilities(L, p, syn, chi) - exact).max() for chi in (2, 4, 8)]
    assert errs[0] > errs[1] > errs[2] and errs[0] > 0.1 and errs[2] < 0.05, errs


def test_four_class_outcomes():
    lp = np.log(np.array([[0.4, 0.1, 0.1, 0.1], [0.1, 0.2, 0.3, 0.1], [0.2, 0.2, 0.05, 0.05]]))
    o = Outcomes(lp, np.array([0, 1, 1], dtype=np.int8))
    assert np.allclose(o.indicator(), [1.0, 0.0, 0.5])
    assert np.allclose(o.nishimori(), [0.4 / 0.7, 0.3 / 0.7, 0.2 / 0.5])
