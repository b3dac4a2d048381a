"""T25 (issue 35): the planar surface code with faulty syndrome measurements, its raw sum checked by brute force,
its reduction to the random-plaquette gauge model, and the cycle_dual step that derives that reduction from the
formula alone.

The raw sum is checked against the process itself: every one of the 2^N data and measurement error patterns is
simulated round by round (cumulative flips, measured syndromes, their changes), at sizes where 2^N is small
(L = 2 with T = 2, 3; L = 3 with T = 1, which is T21); against the enumeration of the errors consistent with the
detection events (a kernel basis by Gaussian elimination, 2^20 errors at L = 3, T = 2); against the formula
eliminated with its conditions; and against the gauge model at the task's own size (L = T = 3, 44 spins, by the
exact oracles)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy.special import logsumexp

from evaluators.oracles.constrained_sum import constrained_log_value
from evaluators.oracles.registry import exact_log_z
from search.derivation.actions.cycle_dual import _act_cycle_basis, _act_cycle_dual
from search.derivation import derive
from search.derivation.actions import ACTIONS, get_action
from search.derivation.runtime import _rt_start
from search.derivation.solvers import step_checker
from search.derivation.view import to_ising, view_of
from tasks import faulty_measurement as fm
from tasks.catalog.t21_surface_code import syndrome as t21_syndrome
from tasks.formula_reader import compile_reader
from tasks.registry import get_task


@pytest.fixture(scope="module")
def t25():
    task = get_task("T25")
    return task, compile_reader(task.formula).load()


def _simulated(L: int, T: int, p: float, q: float):
    """Every error pattern of the process, simulated: (detection events (2^N, T, L, L-1), class (2^N,),
    log probability (2^N,)). Round t adds its flips to the accumulated error, measures its syndrome (T21's
    function) with the outcome flips of round t (none in the last round); the events are the changes."""
    Q, C, N = fm.sizes(L, T)
    X = ((np.arange(2 ** N)[:, None] >> np.arange(N)) & 1).astype(np.int64)
    data, meas = X[:, :T * Q].reshape(-1, T, Q), X[:, T * Q:].reshape(len(X), T - 1, L, L - 1)
    incidence = np.stack([t21_syndrome(L, np.eye(Q, dtype=np.int64)[b]).reshape(-1) for b in range(Q)])
    accumulated = np.zeros((len(X), Q), dtype=np.int64)
    previous = np.zeros((len(X), L * (L - 1)), dtype=np.int64)
    events = []
    for t in range(T):
        accumulated = (accumulated + data[:, t]) % 2
        measured = accumulated @ incidence % 2
        if t < T - 1:
            measured = (measured + meas[:, t].reshape(len(X), -1)) % 2
        events.append((measured + previous) % 2)
        previous = measured
    D = np.stack(events, 1).reshape(-1, T, L, L - 1)
    cls = accumulated[:, 0:L * L:L].sum(1) % 2
    k_data, k_meas = data.reshape(len(X), -1).sum(1), meas.reshape(len(X), -1).sum(1)
    log_p = (k_data * math.log(p) + (T * Q - k_data) * math.log1p(-p) + k_meas * math.log(q)
             + ((T - 1) * C - k_meas) * math.log1p(-q))
    return D, cls, log_p


@pytest.mark.parametrize("L, T", [(2, 2), (2, 3), (3, 1)])
def test_raw_sum_by_simulating_every_error_pattern(L, T):
    """Per class, the literal sum over every simulated pattern with the observed events equals the coset
    enumeration; the probabilities of all event patterns and classes add up to 1."""
    p, q = 0.11, 0.07
    D_all, cls, log_p = _simulated(L, T, p, q)
    assert logsumexp(log_p) == pytest.approx(0.0, abs=1e-12)
    rng = np.random.default_rng(L * 10 + T)
    for _ in range(3):
        data, meas = fm.sample(rng, L, T, 0.3, 0.3)
        D = fm.detection_events(L, data, meas)
        same = np.all(D_all.reshape(len(D_all), -1) == D.reshape(-1), axis=1)
        literal = [logsumexp(log_p[same & (cls == a)]) for a in (0, 1)]
        assert fm.coset_log_probabilities(L, p, q, D) == pytest.approx(literal, rel=1e-12)
        bits = np.concatenate([data.ravel(), meas.ravel()]).astype(np.int64)
        index = int(np.sum(bits << np.arange(len(bits), dtype=np.int64)))
        assert same[index] and cls[index] == fm.logical(L, data)        # the sampled pattern itself


def test_one_round_is_the_perfect_measurement_code_of_t21():
    """T = 1 (the only round perfect) is T21: the coset enumeration equals T21's own formula, eliminated."""
    t21 = get_task("T21")
    read21 = compile_reader(t21.formula).load()
    rng = np.random.default_rng(4)
    for _ in range(3):
        data, meas = fm.sample(rng, 3, 1, 0.2, 0.2)
        D = fm.detection_events(3, data, meas)
        ours = fm.coset_log_probabilities(3, 0.13, 0.4, D)
        theirs = [constrained_log_value(read21({"p": 0.13, "syndrome": D[0].tolist(), "cls": a}, 9), 22)
                  for a in (0, 1)]
        assert ours == pytest.approx(theirs, rel=1e-12)


def test_classes_add_up_to_the_probability_of_the_detection_events(t25):
    """L = 3, T = 2 (2^20 errors with the events): the formula with each class, eliminated with its conditions,
    equals the coset enumeration; the two classes add up to the total probability of the events (the formula
    without its class condition, eliminated), and differ."""
    task, read = t25
    total_sum = replace(task.formula, constraints=task.formula.constraints[:-1])
    read_total = compile_reader(total_sum).load()
    rng = np.random.default_rng(7)
    p, q = 0.06, 0.04
    for _ in range(2):
        data, meas = fm.sample(rng, 3, 2, 0.1, 0.1)
        D = fm.detection_events(3, data, meas)
        by_class = fm.coset_log_probabilities(3, p, q, D)
        params = {"p": p, "q": q, "detections": D.tolist()}
        formula = [constrained_log_value(read({**params, "cls": a}, 9), 22) for a in (0, 1)]
        assert formula == pytest.approx(by_class, rel=1e-11)
        assert abs(formula[0] - formula[1]) > 1e-6
        assert task.own_reference({**params, "cls": 1}, 9, "brute") == (pytest.approx(by_class[1], rel=1e-12),
                                                                        "coset_enumeration")
        total = constrained_log_value(read_total({**params, "cls": 0}, 9), 22)
        assert logsumexp(formula) == pytest.approx(total, rel=1e-12)
        basis = fm._gf2_nullspace(fm.check_rows(3, 2)).astype(np.int64)
        assert len(basis) == 20
        some = (fm.reference_error(3, D, 0) + rng.integers(0, 2, size=(64, 20)) @ basis) % 2
        assert all(np.array_equal(fm.detection_events(3, *fm.split(3, 2, x)), D) for x in some)


def test_the_gauge_model_equals_the_formula_at_the_task_size(t25):
    """L = T = 3 (51 variables, 2^33 errors with the events): the formula eliminated with its conditions and the
    random-plaquette gauge model (44 plaquette spins, 12 cube redundancies) by the exact oracles, on typical, cold
    and critical instances and both classes."""
    task, read = t25
    cases = [task.probe_params(9, 0, k) for k in range(2)]
    cases.append(task.cold_params(cases[0], 9, np.random.default_rng(1))[0])
    cases.append(task.critical_params(cases[1], 9)[0])
    for params in cases:
        assert len(params["detections"]) == 3 and params["q"] == params["p"]
        for a in (0, 1):
            case = {**params, "cls": a}
            model = task.to_model(case, 9)
            assert model.n == 44 and max(len(t) for t in model.terms) == 4
            value = constrained_log_value(read(case, 9), 22)
            assert math.isfinite(value) and value < 0.0
            assert exact_log_z(model).log_z == pytest.approx(value, rel=1e-10, abs=1e-10)


def test_the_plaquettes_span_the_errors_of_one_class():
    """The hand-written plaquettes satisfy every condition and span their solutions: rank = N - rank of the
    conditions with the class, the redundancy one per cube (L (L - 1)(T - 1))."""
    for L, T in [(3, 2), (3, 3), (4, 3)]:
        Q, C, N = fm.sizes(L, T)
        A = np.concatenate([fm.check_rows(L, T), fm.class_row(L, T)[None, :]])
        G = np.zeros((len(fm.plaquettes(L, T)), N), dtype=np.int64)
        for f, edges in enumerate(fm.plaquettes(L, T)):
            G[f, edges] = 1
        assert not np.any(A.astype(np.int64) @ G.T % 2)
        rank_a, rank_g = N - len(fm._gf2_nullspace(A)), len(G) - len(fm._gf2_nullspace(G.T))
        assert rank_a == T * C + 1 and rank_g == N - rank_a and len(G) - rank_g == L * (L - 1) * (T - 1)


def test_cycle_dual_derives_the_gauge_model_from_the_formula(t25):
    """From the formula alone: the relevant short cycles of the space-time graph (3-cycles on the boundaries,
    then the plaquettes that are not sums of them) span the solutions; the model has 2-, 3- and 4-spin terms,
    and its log Z (exact oracles: 36 spins) is the formula's."""
    task, read = t25
    for k in range(2):
        params = task.probe_params(9, 0, k)
        problem = _rt_start(read(params, 9))
        kept, need, _, _ = _act_cycle_basis(problem)
        assert need == 32 and {len(c) for c in kept} == {3, 4}
        plaquettes = {tuple(sorted(f)) for f in fm.plaquettes(3, 3)}
        assert all(c in plaquettes for c in kept) and len(kept) == 36     # 8 prism faces are sums of 3-cycles
        state = _act_cycle_dual(problem, {})
        model = to_ising(state)
        assert model.n == 36 and max(len(t) for t in model.terms) == 4
        assert exact_log_z(model).log_z == pytest.approx(constrained_log_value(read(params, 9), 22), rel=1e-10)


@pytest.mark.parametrize("task_id, n", [("T18", 9), ("T21", 9), ("T24", 9)])
def test_cycle_dual_is_exact_on_the_drawn_codes_and_leaves_them_to_their_drawings(task_id, n):
    """On the sums the drawing steps take (toric and planar codes, the depolarizing toric code) the cycles give
    the same value (brute force over the spins), but the step is not admitted there: the drawing's faces come
    with the lattice the solvers use."""
    task = get_task(task_id)
    params = task.probe_params(n, 0, 0)
    problem = _rt_start(compile_reader(task.formula).load()(params, n))
    model = to_ising(_act_cycle_dual(problem, {}))
    assert exact_log_z(model, "brute").log_z == pytest.approx(constrained_log_value(problem, 22), rel=1e-10)
    view = view_of(task_id, (n,), [problem], False, first_steps=[a for a in ACTIONS.values() if a.FIRST_STEP])
    assert "map the sum with a drawing of its graph" in get_action("cycle_dual").admits(view)


def test_cycle_dual_refuses_what_its_cycles_cannot_span():
    """A sum whose solutions need a long cycle (a ring of 12 variables, one condition per vertex and nothing
    else: the ring itself, 12 edges) is refused past the length cap, naming the dimensions spanned."""
    N = 12
    problem = {"kind": "constrained", "n": N, "n_vars": N, "constant": 0.0,
               "terms": [(np.arange(N).reshape(-1, 1), np.full(N, 0.3))],
               "constraints": [{"row_of": np.repeat(np.arange(N), 2),
                                "var": np.stack([np.arange(N), (np.arange(N) - 1) % N], 1).ravel(),
                                "rhs": np.zeros(N, dtype=np.int64), "coords": np.zeros((N, 1), dtype=np.int64)}]}
    with pytest.raises(ValueError, match="span 0 of the 1 dimensions"):
        _act_cycle_dual(problem, {})
    problem["constraints"][0]["rhs"][0] = 1
    with pytest.raises(ValueError, match="no assignment"):
        _act_cycle_dual(problem, {})


def test_t25_derivation_reaches_the_gauge_model_an_exact_program_and_valid_bounds(sandbox):
    """~5 s (20 s under load): from T25's formula alone, the cycle_dual reduction checked at L = T = 3 (its
    36-spin model by the exact oracles in-process, the program finished by the wide elimination in the
    sandbox), the exact (exponential) program, and mean-field / tree-reweighted bounds after the reduction
    that hold."""
    d = derive(get_task("T25"), sandbox=sandbox)
    assert d.chain == "spin_variables -> cycle_dual -> wide_elimination", (d.error, [(s.action, s.check.text())
                                                                           for s in d.failed])
    assert d.tractable_class == "no_efficient_known" and all(s.check.passed for s in d.steps)
    bounds = [a for a in d.answers if a.kind == "bounds"]
    assert bounds and bounds[0].actions[0][0] == "cycle_dual" and bounds[0].check.passed


def test_wide_elimination_finishes_large_multi_spin_checks_exactly(t25):
    """The step checks' finisher for models with multi-spin terms beyond enumeration is the elimination program
    (exact: the 36-spin gauge model against the oracles; it refuses a width past its cap with a MemoryError)."""
    task, read = t25
    solver = step_checker("large")
    assert solver.NAME == "wide_elimination" and step_checker("pairwise").NAME == "tensor_contraction"
    params = task.probe_params(9, 0, 1)
    state = _act_cycle_dual(_rt_start(read(params, 9)), {})
    value = solver.ENTRY(state, {}) + state["log_shift"]
    assert value == pytest.approx(constrained_log_value(read(params, 9), 22), rel=1e-10)
    wide = _act_cycle_dual(_rt_start(read(task.probe_params(16, 0, 0), 16)), {})
    with pytest.raises(MemoryError, match="width"):
        solver.ENTRY(wide, {})


def test_the_in_process_check_of_a_large_gauge_model_survives_the_oracles_refusing(t25, monkeypatch):
    """Beyond brute force the in-process check asks the exact oracles within a budget; when they refuse (a loaded
    machine) the large-model finisher answers, to the same value."""
    from evaluators.oracles.base import TooLarge
    from search.derivation import checks

    task, read = t25
    params = task.probe_params(9, 0, 0)
    state = _act_cycle_dual(_rt_start(read(params, 9)), {})
    assert state["n"] > checks.BRUTE_MAX_N
    by_oracle = checks._exact_value(state)

    def refuse(*args, **kwargs):
        raise TooLarge("over the call's budget (test)")

    monkeypatch.setattr(checks, "exact_log_z", refuse)
    assert checks._exact_value(state) == pytest.approx(by_oracle, rel=1e-12)
    assert by_oracle == pytest.approx(constrained_log_value(read(params, 9), 22), rel=1e-10)
