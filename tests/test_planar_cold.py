"""The planar cold routes of issue 36, oracle and template, against independent references.

- the exact ground-state energy (a minimum-weight T-join of the dual as an integer program, both
  the oracle's and the template's) against a networkx minimum-weight perfect matching of the
  oracle's expanded dual (domain walls, 2|J| per wall edge);
- the sandwich that proves E0 from two certified values, and why the slope alone did not: the
  16 x 16 triangular antiferromagnet, where two temperatures rounded to the lattice gave -253;
- the template's values colder than beta |J| = 12 against the transfer matrix (width 16), its
  refusal where it cannot vouch (32 x 32, one line naming the limit), and its running error bound
  against the error of the unbounded value where double-double fails.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from evaluators.oracles.base import TooLarge
from evaluators.oracles.dual_pfaffian import dual_pfaffian_matrix
from evaluators.oracles.planar import _bridges, planar_inputs, planar_log_z
from evaluators.oracles.planar_ground import min_t_join, sandwich_e0
from evaluators.oracles.transfer_matrix import transfer_matrix_log_z
from search.structural.templates import planar_pfaffian
from search.structural.templates.ground_state import _ground_walls
from tasks.model import IsingModel
from tasks.registry import get_task


def _model(task_id: str, n: int, beta: float = 1.0, seed: int = 0):
    task = get_task(task_id)
    p = task.probe_params(n, seed, 0)
    m = task.to_model(p, n)
    scale = float(np.abs(m.couplings[1]).max())
    return task.to_model(task.with_beta(p, beta / scale), n)


def _matching_e0(m) -> float:
    """E0 by networkx: a minimum-weight perfect matching of the oracle's expanded dual, whose
    matchings are the domain-wall configurations (weights exp(-2|K|): 0 for gadget edges)."""
    emb, K, _, _ = planar_inputs(m, "low_t")
    K = K / np.abs(K).max()
    A = dual_pfaffian_matrix(emb, K, 1)[0].tocoo()
    upper = A.row < A.col
    walls = np.rint(-np.log(np.abs(A.data[upper])) / 2.0).astype(int)
    G = nx.Graph()
    G.add_weighted_edges_from(zip(A.row[upper].tolist(), A.col[upper].tolist(), (-walls).tolist()))
    matching = nx.max_weight_matching(G, maxcardinality=True)
    assert 2 * len(matching) == A.shape[0]
    return -np.abs(K).sum() + 2.0 * sum(-G[u][v]["weight"] for u, v in matching)


@pytest.mark.parametrize("task_id,n", [("P04", 144), ("T14", 144), ("T17", 64)])
def test_minimum_t_join_equals_a_networkx_matching(task_id, n):
    m = _model(task_id, n)
    expected = _matching_e0(m)
    emb, K, _, _ = planar_inputs(m, "low_t")
    walled = ~_bridges(emb)
    aK = np.abs(K) / np.abs(K).max()
    total = int(np.rint(aK.sum()))
    walls = min_t_join(emb.face[:emb.m][walled], emb.face[emb.m:][walled], emb.n_faces, np.ones(int(walled.sum())),
                       (K[walled] < 0).astype(float))
    assert 2 * walls - total == expected
    # the template's own (on its own faces, from the straight-line drawing)
    edges, J = m.couplings
    edges, J = planar_pfaffian._merged(edges, J, m.n)
    face = planar_pfaffian._cycles(planar_pfaffian._plane_darts(m.n, edges[:, 0], edges[:, 1], m.embedding())[2])[0]
    assert 2 * _ground_walls(face, np.ones(len(J), dtype=np.int64), (J < 0).astype(float)) - len(J) == expected


def test_the_sandwich_proves_e0_only_when_one_lattice_point_is_left():
    # log Z(t) = -t e0 + log g (+ tiny): e0 = -255, g = 2 (the 16 x 16 triangular antiferromagnet)
    v = lambda t: 255.0 * t + math.log(2.0)        # noqa: E731
    assert sandwich_e0(v(10), 1e-11, v(16), 1e-11, 10.0, 16.0, 705) == -255
    # a degeneracy of e^40 with t2 = 16: -log Z / t is 2.5 lattice steps below e0: not proved
    w = lambda t: 255.0 * t + 40.0                 # noqa: E731
    assert sandwich_e0(w(10), 1e-11, w(16), 1e-11, 10.0, 16.0, 705) is None


def test_the_slope_between_two_temperatures_is_no_proof_of_the_ground_state():
    """Issue 36's failure in miniature: on the 16 x 16 triangular antiferromagnet the states 2|J|
    above its two ground states dominate at beta |J| = 6 .. 12, and the slope between them rounds to
    E0 = -253 for the true -255, with a bracket that looks tight. The planar oracle now answers only
    with E0 proved (here it refuses at beta |J| = 1000 and the transfer matrix answers)."""
    hot, cold = (planar_log_z(_model("T14", 256, b)) for b in (6.0, 12.0))
    slope = -(cold - hot) / 6.0
    assert 2 * round((slope + 705) / 2.0) - 705 == -253
    exact = transfer_matrix_log_z(_model("T14", 256, 1000.0))
    assert exact == pytest.approx(1000.0 * 255 + math.log(2.0), rel=1e-15)
    try:
        value = planar_log_z(_model("T14", 256, 1000.0))
    except TooLarge as exc:
        assert "beta|J| = 1000" in str(exc) and "within reach" in str(exc)
    else:
        assert value == pytest.approx(exact, rel=1e-13)


def _template(m):
    edges, J = m.couplings
    return planar_pfaffian._method_log_z(edges, J * m.beta, np.zeros(m.n), [], m.embedding(), 1.0, m.n, {})


@pytest.mark.parametrize("beta_j", [13.0, 20.0, 1000.0])
def test_template_cold_equals_the_transfer_matrix_on_the_16_by_16_triangular_antiferromagnet(beta_j):
    m = _model("T14", 256, beta_j)
    assert _template(m) == pytest.approx(transfer_matrix_log_z(m), rel=1e-13, abs=2e-9)


@pytest.mark.parametrize("beta_j", [13.0, 1000.0])
def test_template_decimal_route_equals_the_transfer_matrix_on_the_16_by_16_triangular_antiferromagnet(beta_j):
    """The domain walls eliminated in decimal arithmetic (cold_decimal: digits from beta, two runs that
    agree), the program's route where no certified line exists and the model is too wide to sweep
    (32 x 32 at beta|J| = 13 and 1000 take it: 10 and 18 s), forced here on the 16 x 16 member of the
    family, against the transfer matrix."""
    m = _model("T14", 256, beta_j)
    edges, J = m.couplings
    got = planar_pfaffian._walls_log_z(edges, J * m.beta, m.embedding(), 1.0, m.n, {}, False, in_decimal=True)
    assert got == pytest.approx(transfer_matrix_log_z(m), rel=1e-13, abs=2e-9)


def test_template_refuses_in_one_line_naming_every_limit(monkeypatch):
    """Where the decimal route too would take too long (its limit set to 0 s here), an ArithmeticError
    naming the cold line's limit, the sweep's and the decimal elimination's, never a number."""
    from search.structural.templates import cold_decimal

    monkeypatch.setattr(cold_decimal, "CD_MAX_SECONDS", 0.0)
    with pytest.raises(ArithmeticError) as info:
        _template(_model("T14", 1024, 13.0))
    text = str(info.value)
    assert "\n" not in text and "beta|J| = 13 on 1024 spins" in text and "not certified" in text
    assert "beta|J| <= 12, or a smaller model" in text and "the exact sweep's frontier" in text
    assert "the decimal elimination of its" in text


def test_template_running_bound_covers_the_error_of_its_unbounded_value():
    """On the 32 x 32 +-J grid at beta |J| = 40 the double-double elimination is wrong (measured
    2.9 in log Z); its running bound says so (and the certified route returns the exact value,
    which the planar oracle certifies through its ground-state line)."""
    m = _model("P04", 1024, 40.0)
    edges, J = m.couplings
    value, bound = planar_pfaffian._walls_log_z(edges, J * m.beta, m.embedding(), 1.0, m.n, {}, True)
    exact = planar_log_z(m)
    assert abs(value - exact) > 0.1 and bound >= abs(value - exact)
    assert _template(m) == pytest.approx(exact, rel=1e-13, abs=2e-9)


def _grid(L: int, J: np.ndarray):
    """(edges, positions) of an L x L grid whose bonds, right then down, take the couplings ``J``."""
    edges = [(r * L + c, r * L + c + 1) for r in range(L) for c in range(L - 1)]
    edges += [(r * L + c, (r + 1) * L + c) for r in range(L - 1) for c in range(L)]
    xy = np.array([(c, r) for r in range(L) for c in range(L)], dtype=float)
    return np.array(edges), xy


def _brute_log_z(n, edges, J, beta):
    states = 1 - 2 * ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1)
    x = beta * ((states[:, edges[:, 0]] * states[:, edges[:, 1]]) @ J)
    top = x.max()
    return top + math.log(float(np.exp(x - top).sum()))


@pytest.mark.parametrize("beta", [30.0, 400.0, 3000.0])
def test_template_without_frustration_is_exact_however_cold(beta):
    """A 4 x 4 Mattis model (continuous |J| in [0.5, 1], signs eps_i eps_j: negative couplings, no
    frustrated face) against brute force: the walls' sum is at least 1, so the elimination vouches
    at every beta, also where exp(-2 beta |J|) underflows (beta |J| > 372). Before, the couplings
    being no multiples of one unit, it refused beyond beta |J| = 25."""
    rng = np.random.default_rng(3)
    edges, xy = _grid(4, None)
    eps = rng.choice([-1.0, 1.0], size=16)
    J = rng.uniform(0.5, 1.0, size=len(edges)) * eps[edges[:, 0]] * eps[edges[:, 1]]
    assert (J < 0).any()
    value = planar_pfaffian._method_log_z(edges, beta * J, np.zeros(16), [], xy, 1.0, 16, {})
    assert value == pytest.approx(_brute_log_z(16, edges, J, beta), rel=1e-14)


def test_template_without_frustration_at_1024_spins_is_the_ground_state_line():
    """32 x 32 ferromagnet with continuous couplings at beta = 3000: log Z = beta sum J + log 2 to
    float64 rounding (every excitation weighs below exp(-3000))."""
    rng = np.random.default_rng(0)
    edges, xy = _grid(32, None)
    J = rng.uniform(0.5, 1.0, size=len(edges))
    value = planar_pfaffian._method_log_z(edges, 3000.0 * J, np.zeros(1024), [], xy, 1.0, 1024, {})
    exact = 3000.0 * math.fsum(J) + math.log(2.0)
    assert value == pytest.approx(exact, rel=1e-15)


def test_the_line_references_step_down_when_the_start_is_not_vouched():
    """The references start at beta|J| = 12; where the running bound does not vouch there (a 32 x 32
    +-J grid: 3.8e-6 at 12) they step down by 2 to the first vouched one, never below 6."""
    from search.structural.templates import cold_line

    def at(bound_from):
        return lambda t: (-100.0 * t, 1e-12 if t < bound_from else 1e-3)

    first = next(cold_line._references(at(11.0), 40.0, 1))
    assert [t for t, _, _ in first] == [10.0]
    assert list(cold_line._references(at(5.0), 40.0, 1)) == []


def _polynomial_at(log_g, c, e0, bound=1e-11, terms=60):
    """at(t) -> (log Z, bound) of an exact ground-state line: P(x) = g e^(c x) truncated at ``terms``
    (states 2uk above g ground states, counted g c^k / k!), x = exp(-2 t), log Z = -t e0 + log P."""
    def at(t):
        x = math.exp(-2.0 * t)
        logs = [log_g + k * math.log(c * x) - math.lgamma(k + 1) for k in range(terms)]
        top = max(logs)
        return -t * e0 + top + math.log(math.fsum(math.exp(v - top) for v in logs)), bound
    return at


def test_the_line_extrapolation_brackets_log_g_where_two_references_cannot():
    """A line whose first excited level is 5000 times as numerous as the ground level (a 32 x 32 +-J
    grid: 4e-3 at t = 7): the pair's bracket from references at 6 and 7 is 4e-3 wide, the
    extrapolation through seven references half a unit apart contains log g and log P at t = 14
    to 5e-10, and the bounds alternate as the divided differences say."""
    from search.structural.templates import cold_line

    log_g, c, e0 = math.log(7.0), 5000.0, -100.0
    at = _polynomial_at(log_g, c, e0)
    pair, _ = cold_line._line_bracket(at, e0, 6.0, 7.0, 1)
    assert pair is not None and pair[1] > 1e-3                       # S(t2) bound: far from vouching
    ts = [7.0, 6.5, 6.0, 5.5, 5.0, 4.5, 4.0]
    (lo, hi), why = cold_line._line_extrapolation(at, e0, ts, 0.0)
    assert why is None and lo <= log_g <= hi and hi - lo < 5e-10          # vouched: half-width below 1e-9
    y = math.exp(-2.0 * (14.0 - 7.0))
    (lo, hi), _ = cold_line._line_extrapolation(at, e0, ts, y)
    exact = at(14.0)[0] + 14.0 * e0
    assert lo <= exact <= hi and hi - lo < 5e-10
    assert exact - log_g > 1e-9                                       # the excited states still count at 14
    (lo3, hi3), _ = cold_line._line_extrapolation(at, e0, ts[:3], 0.0)
    assert lo3 <= log_g <= hi3 and hi3 - lo3 > hi - lo


def test_the_line_extrapolation_refuses_a_line_that_rises_towards_the_cold():
    from search.structural.templates import cold_line

    at = _polynomial_at(math.log(3.0), 50.0, -10.0)
    wrong_e0 = -10.0 + 2.0                                          # E0 off by one lattice step
    got, why = cold_line._line_extrapolation(at, wrong_e0, [7.0, 6.5, 6.0], 0.0)
    assert got is None and "inconsistent with E0" in why


def test_template_cold_on_a_32_by_32_pm_j_grid_equals_the_planar_oracle(monkeypatch):
    """A 32 x 32 +-J grid at beta|J| = 28 whose references vouch only to about 7, where its excited
    states still weigh 4e-3: no pair of references vouches, the extrapolation (step 2b) does, and
    the value equals the planar oracle's (its own ground-state line, other code)."""
    from search.structural.templates import cold_line

    used = []

    def spy(*args):
        got = extrapolation(*args)
        used.append(got[0] is not None)
        return got

    extrapolation = cold_line._line_extrapolation
    monkeypatch.setattr(cold_line, "_line_extrapolation", spy)
    edges, xy = _grid(32, None)
    J = np.random.default_rng(1).choice([-1.0, 1.0], len(edges))
    beta = 28.0
    m = IsingModel(n=1024, terms=tuple(map(tuple, edges.tolist())), weights=J, beta=beta)
    value = planar_pfaffian._method_log_z(edges, beta * J, np.zeros(1024), [], xy, 1.0, 1024, {})
    assert any(used)
    assert value == pytest.approx(planar_log_z(m), rel=1e-13, abs=2e-9)
