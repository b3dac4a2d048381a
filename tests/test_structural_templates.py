"""The structural proposer's templates, run in-process against naive enumeration.

Two kinds of test: every plan the proposer lists for every task, generated as a program and
executed on the task's own random parameters; and each template's ``_method_log_z`` on random
models beyond the tasks (disconnected graphs, rings, bridges, rank-one blocks, fields).
"""

import itertools
import time

import networkx as nx
import numpy as np
import pytest
from scipy.spatial import Delaunay

from evaluators.oracles.naive import naive_log_z
from evaluators.sandbox import static_check
from search.structural import StructuralProposer, assemble
from search.structural.proposer import make_plan
from search.structural.templates import (chain, enumeration, gauge_magnetisation, get_template, planar_pfaffian,
                                         row_transfer, tensor_contraction)
from tasks.formula import Formula
from tasks.model import IsingModel
from tasks.registry import all_tasks

#: every catalogued task whose formula compiles into a reader of pairs and fields (the others get a
#: failed candidate, tested elsewhere)
TASKS = [t for t in all_tasks() if isinstance(t.formula, Formula) and t.id != "T13"]
PROPOSER = StructuralProposer(seed=0)


def _program(code: str) -> dict:
    assert static_check(code) == [], static_check(code)
    namespace: dict = {}
    exec(compile(code, "<candidate>", "exec"), namespace)
    return namespace


def _option_variants(space: dict) -> list[dict]:
    """Every single-option change from the defaults (plus the defaults)."""
    default = {k: v[0] for k, v in space.items()}
    out = [default]
    for k, values in space.items():
        out += [{**default, k: v} for v in values[1:]]
    return out


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_every_plan_of_every_task_is_exact_at_probe_sizes(task):
    view = PROPOSER.view(task)
    plans = PROPOSER.plans_for(task)
    assert plans, f"no plan for {task.id}"
    rng = np.random.default_rng(7)
    for plan in plans:
        space = get_template(plan.template).OPTION_SPACE
        for options in _option_variants(space):
            program = _program(assemble(task, make_plan(view, plan.template, options)))
            for n in task.probe_sizes:
                params = task.sample_params(rng, n)
                ref = naive_log_z(task.to_model(params, n))
                got = program["log_Z"](params, n)
                assert abs(got - ref) < 1e-9, (task.id, plan.template, options, n, got, ref)
                assert program["Z_efficient"](params, n) == pytest.approx(np.exp(ref), rel=1e-9)


def _random_graph(rng, n, max_m):
    m = int(rng.integers(0, max_m + 1))
    e = rng.integers(0, n, size=(m, 2))
    return e[e[:, 0] != e[:, 1]]


def _model(n, beta, edges, J, h=None, rank_one=()):
    return IsingModel.from_arrays(n, beta, edges, J, h, rank_one=tuple(rank_one))


def test_row_transfer_and_tensor_contraction_on_random_models():
    rng = np.random.default_rng(1)
    for _ in range(40):
        n = int(rng.integers(1, 12))
        edges = _random_graph(rng, n, 25)
        J = rng.normal(size=len(edges))
        h = rng.normal(size=n) * (rng.random() < 0.5)
        blocks = [(rng.choice([-1.0, 1.0], n) * rng.uniform(0.3, 2.0), float(rng.normal()))] if rng.random() < 0.3 else []
        beta = float(rng.uniform(0.0, 3.0))
        ref = naive_log_z(_model(n, beta, edges, J, h, blocks))
        for order in row_transfer.OPTION_SPACE["order"]:
            got = row_transfer._method_log_z(edges, J, h, blocks, None, beta, n, {"order": order})
            assert abs(got - ref) < 1e-9, ("row_transfer", order)
        for order, engine in itertools.product(*tensor_contraction.OPTION_SPACE.values()):
            got = tensor_contraction._method_log_z(edges, J, h, blocks, None, beta, n, {"order": order, "engine": engine})
            assert abs(got - ref) < 1e-9, ("tensor_contraction", order, engine)
        for chunk, flip in itertools.product(*enumeration.OPTION_SPACE.values()):
            got = enumeration._method_log_z(edges, J, h, blocks, None, beta, n, {"chunk": chunk, "flip_symmetry": flip})
            assert abs(got - ref) < 1e-9, ("enumeration", chunk, flip)


def test_row_transfer_is_stable_at_low_temperature():
    rng = np.random.default_rng(2)
    n, L = 16, 4
    r, c = np.divmod(np.arange(n), L)
    edges = np.concatenate([np.stack([np.arange(n), r * L + (c + 1) % L], 1), np.stack([np.arange(n), ((r + 1) % L) * L + c], 1)])
    for beta in (6.0, 20.0, 100.0):
        J = rng.choice([-1.0, 1.0], len(edges))
        ref = naive_log_z(_model(n, beta, edges, J))
        assert abs(row_transfer._method_log_z(edges, J, np.zeros(n), [], None, beta, n, {}) - ref) < 1e-9 * abs(ref)


def test_tensor_contraction_refuses_a_wide_network_before_working():
    n = 40
    edges = np.array(list(itertools.combinations(range(n), 2)))
    start = time.perf_counter()
    with pytest.raises(MemoryError):
        tensor_contraction._method_log_z(edges, np.ones(len(edges)), np.zeros(n), [], None, 0.5, n, {"order": "min_degree"})
    assert time.perf_counter() - start < 5.0


def test_chain_on_random_paths_and_rings_with_fields():
    rng = np.random.default_rng(3)
    for _ in range(60):
        n = int(rng.integers(1, 13))
        perm, edges, i = rng.permutation(n), [], 0
        while i < n:
            size = int(rng.integers(1, n - i + 1))
            seg = perm[i:i + size]
            edges += [(seg[k], seg[k + 1]) for k in range(size - 1)]
            if size >= 3 and rng.random() < 0.5:
                edges.append((seg[-1], seg[0]))
            i += size
        edges = np.array(edges, dtype=np.int64).reshape(-1, 2)
        J = rng.normal(size=len(edges)) * 2
        h = rng.normal(size=n) * (rng.random() < 0.7)
        beta = float(rng.uniform(0.0, 4.0))
        ref = naive_log_z(_model(n, beta, edges, J, h))
        for product in chain.OPTION_SPACE["product"]:
            assert abs(chain._method_log_z(edges, J, h, [], None, beta, n, {"product": product}) - ref) < 1e-9


def test_chain_refuses_a_branching_graph():
    with pytest.raises(ValueError, match="not a chain"):
        chain._method_log_z(np.array([[0, 1], [0, 2], [0, 3]]), np.ones(3), np.zeros(4), [], None, 1.0, 4, {})


def test_chain_at_a_hundred_thousand_spins_matches_the_closed_form():
    n, K = 100_000, 0.9
    i = np.arange(n - 1)
    got = chain._method_log_z(np.stack([i, i + 1], 1), np.full(n - 1, 1.0), np.zeros(n), [], None, K, n, {})
    exact = np.log(2.0) + (n - 1) * np.log(2.0 * np.cosh(K))
    assert abs(got - exact) < 1e-9 * exact


def test_gauge_magnetisation_on_random_rank_one_blocks():
    rng = np.random.default_rng(4)
    for _ in range(60):
        n = int(rng.integers(1, 14))
        u = rng.choice([-1.0, 1.0], n) * 1.7
        u[rng.random(n) < 0.2] = 0.0
        a = float(rng.normal())
        h = rng.normal(size=n) * (rng.random() < 0.5)
        beta = float(rng.uniform(0.0, 3.0))
        ref = naive_log_z(_model(n, beta, np.zeros((0, 2)), [], h, [(u, a)]))
        for how in gauge_magnetisation.OPTION_SPACE["binomial"]:
            got = gauge_magnetisation._method_log_z(np.zeros((0, 2)), np.zeros(0), h, [(u, a)], None, beta, n, {"binomial": how})
            assert abs(got - ref) < 1e-9


def test_gauge_magnetisation_refuses_unequal_magnitudes():
    with pytest.raises(ValueError, match="different magnitude"):
        gauge_magnetisation._method_log_z(np.zeros((0, 2)), np.zeros(0), np.zeros(3), [(np.array([1.0, 2.0, 1.0]), 1.0)],
                                          None, 1.0, 3, {})


def test_gauge_magnetisation_at_ten_thousand_spins_is_fast_and_equals_the_binomial_sum():
    n, beta = 10_000, 0.3
    xi = np.random.default_rng(5).choice([-1.0, 1.0], n)
    start = time.perf_counter()
    got = gauge_magnetisation._method_log_z(np.zeros((0, 2)), np.zeros(0), np.zeros(n), [(xi, 1.0)], None, beta, n, {})
    assert time.perf_counter() - start < 1.0
    from math import lgamma
    terms = [lgamma(n + 1) - lgamma(j + 1) - lgamma(n - j + 1) + 0.5 * beta * ((n - 2 * j) ** 2 - n) for j in range(n + 1)]
    top = max(terms)
    assert abs(got - (top + np.log(sum(np.exp(t - top) for t in terms)))) < 1e-9 * abs(got)


# -- the planar Pfaffian ----------------------------------------------------------------------------

def _grid(L):
    n = L * L
    r, c = np.divmod(np.arange(n), L)
    right, down = (r * L + c)[c < L - 1], (r * L + c)[r < L - 1]
    edges = np.concatenate([np.stack([right, right + 1], 1), np.stack([down, down + L], 1)])
    return n, edges, np.stack([c, -r], 1).astype(float)


def _delaunay(rng, n, drop):
    points = rng.uniform(size=(n, 2))
    pairs = {tuple(sorted((int(s[a]), int(s[b])))) for s in Delaunay(points).simplices for a in range(3) for b in range(a + 1, 3)}
    edges = np.array(sorted(pairs))
    return points, edges[rng.random(len(edges)) >= drop]


def test_planar_pfaffian_on_random_planar_graphs_every_form():
    """Delaunay triangulations with edges dropped: bridges, trees, several components, isolated spins."""
    rng = np.random.default_rng(6)
    for _ in range(40):
        n = int(rng.integers(3, 15))
        positions, edges = _delaunay(rng, n, float(rng.uniform(0.0, 0.7)))
        J = rng.normal(size=len(edges))
        beta = float(rng.uniform(0.05, 2.0))
        ref = naive_log_z(_model(n, beta, edges, J))
        for form, solver in itertools.product(planar_pfaffian.OPTION_SPACE["form"], planar_pfaffian.OPTION_SPACE["solver"]):
            got = planar_pfaffian._method_log_z(edges, J, np.zeros(n), [], positions, beta, n, {"form": form, "solver": solver})
            assert abs(got - ref) < 1e-9, (form, solver, n, len(edges))


def test_decorated_graph_is_a_plane_graph():
    """Euler's formula V - E + F = 2 per component holds for the decorated graph's rotation system,
    so its faces (and the Kasteleyn orientation built on them) are those of a planar embedding."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    rng = np.random.default_rng(8)
    seen = []
    original = planar_pfaffian._pfaffian_log

    def spy(n_nodes, edges, weights, ranks, options, xy=None):
        seen.append((n_nodes, edges, ranks))
        return original(n_nodes, edges, weights, ranks, options, xy)

    planar_pfaffian._pfaffian_log = spy
    try:
        for _ in range(15):
            n = int(rng.integers(4, 14))
            positions, edges = _delaunay(rng, n, 0.3)
            for form in planar_pfaffian.OPTION_SPACE["form"]:
                planar_pfaffian._method_log_z(edges, rng.normal(size=len(edges)), np.zeros(n), [], positions, 1.0, n,
                                              {"form": form})
    finally:
        planar_pfaffian._pfaffian_log = original
    assert seen
    for n_nodes, edges, ranks in seen:
        m = len(edges)
        rho = planar_pfaffian._rotation(edges.reshape(-1), ranks.reshape(-1))
        faces = len(np.unique(planar_pfaffian._cycles(rho[np.arange(2 * m) ^ 1])[0]))
        comps = connected_components(coo_matrix((np.ones(m), (edges[:, 0], edges[:, 1])), shape=(n_nodes, n_nodes)),
                                     directed=False)[0]
        assert n_nodes - m + faces == 2 * comps


def test_planar_pfaffian_on_frustrated_grids_at_beta_6():
    """The physics check's low temperature: 4 x 4 +-J against enumeration, 8 x 8 against the transfer matrix."""
    rng = np.random.default_rng(9)
    n, edges, positions = _grid(4)
    for _ in range(30):
        J = rng.choice([-1.0, 1.0], len(edges))
        ref = naive_log_z(_model(n, 6.0, edges, J))
        assert abs(planar_pfaffian._method_log_z(edges, J, np.zeros(n), [], positions, 6.0, n, {}) - ref) < 1e-8
    n, edges, positions = _grid(8)
    for _ in range(8):
        J = rng.choice([-1.0, 1.0], len(edges))
        ref = row_transfer._method_log_z(edges, J, np.zeros(n), [], None, 6.0, n, {})
        assert abs(planar_pfaffian._method_log_z(edges, J, np.zeros(n), [], positions, 6.0, n, {}) - ref) < 1e-6


@pytest.mark.parametrize("beta", [6.0, 12.0, 30.0, 1000.0])
def test_every_planar_pfaffian_form_is_exact_at_low_temperature(beta):
    """Cold, every form goes through the domain walls and the double-double skew elimination (or the
    ground-state line beyond beta |J| = 25). Before, the tanh form lost 1e-3 at beta = 6 on 12 x 12
    and every float64 form lost digits from beta = 8 on."""
    rng = np.random.default_rng(10)
    n, edges, positions = _grid(12)
    for _ in range(2):
        J = rng.choice([-1.0, 1.0], len(edges))
        ref = row_transfer._method_log_z(edges, J, np.zeros(n), [], None, beta, n, {})
        for opts in [dict(zip(planar_pfaffian.OPTION_SPACE, v))
                     for v in itertools.product(*planar_pfaffian.OPTION_SPACE.values())]:
            got = planar_pfaffian._method_log_z(edges, J, np.zeros(n), [], positions, beta, n, opts)
            assert abs(got - ref) <= 1e-12 * abs(ref), (opts, got, ref)


def test_planar_pfaffian_ground_state_line_takes_integer_multiples_and_refuses_the_rest():
    """Magnitudes 1 and 2 lie on one lattice: certified at beta = 100 and 1000 (against enumeration);
    1 and sqrt(2) with frustrated faces, beyond beta |J| = 350, have neither a vouched elimination
    nor a line, so the narrow exact sweep answers (a wide model raises:
    test_planar_pfaffian_refuses_a_wide_gaussian_glass_when_cold_naming_both_limits). Without a
    frustrated face the same magnitudes need no line (the walls' sum is at least 1): exact at beta = 1000."""
    n, edges, positions = _grid(4)
    signs = np.where(np.arange(len(edges)) % 3 == 0, -1.0, 1.0)
    J = np.r_[np.ones(len(edges) - 1), 2.0] * signs
    for beta in (100.0, 1000.0):
        ref = naive_log_z(_model(n, beta, edges, J))
        assert abs(planar_pfaffian._method_log_z(edges, J, np.zeros(n), [], positions, beta, n, {}) - ref) < 1e-9 * ref
    J = np.r_[np.ones(len(edges) - 1), np.sqrt(2.0)]
    ref = naive_log_z(_model(n, 1000.0, edges, J))
    assert planar_pfaffian._method_log_z(edges, J, np.zeros(n), [], positions, 1000.0, n, {}) == pytest.approx(ref, rel=1e-14)
    ref = naive_log_z(_model(n, 1000.0, edges, J * signs))
    assert planar_pfaffian._method_log_z(edges, J * signs, np.zeros(n), [], positions, 1000.0, n, {}) == pytest.approx(ref, rel=1e-14)


def test_planar_pfaffian_agrees_with_the_transfer_matrix_on_a_12_by_12_glass():
    rng = np.random.default_rng(11)
    n, edges, positions = _grid(12)
    for beta in (0.4, 1.5, 3.0):
        J = rng.choice([-1.0, 1.0], len(edges))
        ref = row_transfer._method_log_z(edges, J, np.zeros(n), [], None, beta, n, {})
        for spec in planar_pfaffian.OPTION_SPACE["permc_spec"]:
            got = planar_pfaffian._method_log_z(edges, J, np.zeros(n), [], positions, beta, n, {"permc_spec": spec})
            assert abs(got - ref) < 1e-9 * abs(ref)


def test_planar_pfaffian_64_by_64_is_fast():
    n, edges, positions = _grid(64)
    J = np.random.default_rng(12).choice([-1.0, 1.0], len(edges))
    start = time.perf_counter()
    value = planar_pfaffian._method_log_z(edges, J, np.zeros(n), [], positions, 1.0, n, {})
    assert time.perf_counter() - start < 3.0
    assert np.isfinite(value) and value > n * np.log(2.0)


def test_planar_pfaffian_refuses_fields_and_missing_embeddings():
    n, edges, positions = _grid(3)
    with pytest.raises(ValueError, match="zero fields"):
        planar_pfaffian._method_log_z(edges, np.ones(len(edges)), np.ones(n), [], positions, 1.0, n, {})
    with pytest.raises(ValueError, match="embedding"):
        planar_pfaffian._method_log_z(edges, np.ones(len(edges)), np.zeros(n), [], None, 1.0, n, {})


def test_tensor_contraction_on_random_regular_graphs_beyond_enumeration():
    """n = 24 against the row transfer (itself tested against enumeration) on 3-regular glasses."""
    rng = np.random.default_rng(13)
    for seed in range(3):
        g = nx.random_regular_graph(3, 24, seed=seed)
        edges = np.array(g.edges())
        J = rng.choice([-1.0, 1.0], len(edges))
        ref = row_transfer._method_log_z(edges, J, np.zeros(24), [], None, 1.1, 24, {"order": "reverse_cuthill_mckee"})
        for engine in tensor_contraction.OPTION_SPACE["engine"]:
            got = tensor_contraction._method_log_z(edges, J, np.zeros(24), [], None, 1.1, 24, {"engine": engine})
            assert abs(got - ref) < 1e-9 * abs(ref)


def _sweep_families():
    """(name, template, edges, J, h, rank_one) on 12-16 spins: every template on a model it takes."""
    rng = np.random.default_rng(21)
    L = 4
    r, c = np.divmod(np.arange(16), L)
    torus = np.concatenate([np.stack([np.arange(16), r * L + (c + 1) % L], 1), np.stack([np.arange(16), ((r + 1) % L) * L + c], 1)])
    ring = np.stack([np.arange(12), (np.arange(12) + 1) % 12], 1)
    tree = np.array([[i, (i - 1) // 2] for i in range(1, 12)])
    none = np.zeros((0, 2), dtype=np.int64)
    return [
        ("torus", row_transfer, torus, rng.choice([-1.0, 1.0], 32), rng.uniform(-0.3, 0.3, 16), []),
        ("ring", chain, ring, rng.uniform(-1.5, 1.5, 12), rng.uniform(-1.0, 1.0, 12), []),
        ("tree", tensor_contraction, tree, rng.uniform(-1.5, 1.5, 11), rng.uniform(-1.0, 1.0, 12), []),
        ("ring", tensor_contraction, ring, rng.choice([-1.0, 1.0], 12), rng.uniform(-1.0, 1.0, 12), []),
        ("mattis", gauge_magnetisation, none, np.zeros(0), np.full(12, 0.2), [(rng.choice([-1.0, 1.0], 12), 0.3)]),
        ("ring", enumeration, ring, rng.uniform(-1.5, 1.5, 12), rng.uniform(-1.0, 1.0, 12), []),
    ]


@pytest.mark.parametrize("scale", [1e-160, 1.0, 1e3])
@pytest.mark.parametrize("family", range(6), ids=lambda i: f"{_sweep_families()[i][1].NAME}-{_sweep_families()[i][0]}")
def test_templates_are_exact_at_every_temperature(family, scale):
    """beta from 0 to 1000 and couplings from 1e-160 to 1e3, fields included, every option, against
    enumeration (linear 2 x 2 products and renormalised contractions gave NaN at beta |J| = 1000)."""
    name, tpl, edges, J, h, blocks = _sweep_families()[family]
    n = 16 if name == "torus" else 12
    J, h, blocks = scale * J, scale * h, [(u, scale * a) for u, a in blocks]
    options = [dict(zip(tpl.OPTION_SPACE, v)) for v in itertools.product(*tpl.OPTION_SPACE.values())]
    for beta in (0.0, 1e-12, 0.44, 1.0, 8.0, 50.0, 200.0, 1000.0):
        ref = naive_log_z(_model(n, beta, edges, J, h, blocks))
        for opts in options:
            got = tpl._method_log_z(edges, J, h, blocks, None, beta, n, opts)
            assert abs(got - ref) <= 1e-10 * max(1.0, abs(ref)), (beta, opts, got, ref)


@pytest.mark.parametrize("beta", [40.0, 1179.0])
def test_planar_pfaffian_sweeps_a_narrow_gaussian_glass_exactly_when_cold(beta):
    """A frustrated 8 x 8 Gaussian glass has no ground-state line (no common unit) and, colder than
    beta|J| ~ 25, no vouched elimination: the program sweeps it exactly on log weights (frontier 8),
    checked against the transfer-matrix oracle. Before, it raised, and a user's Gaussian grid task was
    rejected at its n = 16 low-temperature check."""
    from evaluators.oracles.transfer_matrix import transfer_matrix_log_z

    rng = np.random.default_rng(12)
    n, edges, positions = _grid(8)
    J = rng.normal(size=len(edges))
    got = planar_pfaffian._method_log_z(edges, J, np.zeros(n), [], positions, beta, n, {})
    assert got == pytest.approx(transfer_matrix_log_z(_model(n, beta, edges, J)), rel=1e-13)


def test_planar_pfaffian_sweeps_a_gaussian_glass_wider_than_16_when_the_work_is_bounded():
    """The cap is on the sweep's work (spins x 2^width <= 2^27), not its width alone: a 17 x 17
    Gaussian glass (frontier 17, 289 x 2^17 states) at beta|J| ~ 3000 is swept exactly, checked against
    the transfer-matrix oracle. A 16-spin width cap refused it (and a user's 32 x 32 brick-wall glass,
    frontier 17, at its n = 1024 cold rung)."""
    from evaluators.oracles.transfer_matrix import transfer_matrix_log_z

    rng = np.random.default_rng(17)
    n, edges, positions = _grid(17)
    J = rng.normal(size=len(edges))
    beta = 1000.0
    got = planar_pfaffian._method_log_z(edges, J, np.zeros(n), [], positions, beta, n, {})
    assert got == pytest.approx(transfer_matrix_log_z(_model(n, beta, edges, J)), rel=1e-13)


def test_planar_pfaffian_refuses_a_wide_gaussian_glass_when_cold_naming_every_limit(monkeypatch):
    from search.structural.templates import cold_decimal

    monkeypatch.setattr(cold_decimal, "CD_MAX_SECONDS", 0.0)   # the decimal route refuses up front
    rng = np.random.default_rng(13)
    n, edges, positions = _grid(20)
    J = rng.normal(size=len(edges))
    with pytest.raises(ArithmeticError) as info:
        planar_pfaffian._method_log_z(edges, J, np.zeros(n), [], positions, 1000.0, n, {})
    text = str(info.value)
    assert "not integer multiples of one unit" in text and "the exact sweep's frontier is 20 spins (400 spins x 2^20 states > 2^27)" in text
    assert "the decimal elimination of its" in text


def test_planar_pfaffian_eliminates_a_cold_gaussian_glass_in_decimal_when_too_wide_to_sweep(monkeypatch):
    """Past the sweep's cap (set to 2^10 here so a 12 x 12 grid is too wide), a Gaussian glass at
    beta|J| = 300 goes through the decimal elimination (cold_decimal), checked against the transfer
    matrix, as is a Gaussian glass on a Delaunay triangulation of 150 points with a tenth of its edges
    dropped at beta|J| = 800 (degrees up to ~9: split into gadget chains); and a 12 x 12 +-J grid with
    continuous fields on its top row (a ghost spin above it) at beta|J| = 44, which has no ground-state
    line either (its bounded elimination may vouch first: any route must be exact)."""
    from evaluators.oracles.transfer_matrix import transfer_matrix_log_z
    from search.structural.templates import cold_decimal, cold_sweep

    monkeypatch.setattr(cold_sweep, "COLD_SWEEP_MAX_WORK", 1 << 10)
    runs = []
    decimal_run = cold_decimal._cd_log_abs_pfaffian
    monkeypatch.setattr(cold_decimal, "_cd_log_abs_pfaffian", lambda *a: runs.append(a[-1]) or decimal_run(*a))
    rng = np.random.default_rng(14)
    n, edges, positions = _grid(12)
    J = rng.normal(size=len(edges))
    beta = 300.0 / np.abs(J).max()
    got = planar_pfaffian._method_log_z(edges, J, np.zeros(n), [], positions, beta, n, {})
    assert got == pytest.approx(transfer_matrix_log_z(_model(n, beta, edges, J)), rel=1e-13)
    assert len(runs) >= 2 and runs[1] > runs[0]                  # two precisions, the second finer
    positions3, edges3 = _delaunay(rng, 150, 0.1)    # an irregular planar graph: degrees up to ~9, bridges
    J3 = rng.normal(size=len(edges3))
    beta = 800.0 / np.abs(J3).max()
    got = planar_pfaffian._method_log_z(edges3, J3, np.zeros(150), [], positions3, beta, 150, {})
    assert got == pytest.approx(transfer_matrix_log_z(_model(150, beta, edges3, J3)), rel=1e-13)
    assert len(runs) >= 4
    J = rng.choice([-1.0, 1.0], size=len(edges))
    h = rng.uniform(-1.0, 1.0, 12)
    ghost = np.stack([np.arange(12), np.full(12, n)], 1)            # above the top row
    edges2, J2 = np.concatenate([edges, ghost]), np.concatenate([J, h])
    positions2 = np.concatenate([positions, [[5.5, 3.0]]])        # rows run down from y = 0
    beta = 44.0
    got = planar_pfaffian._method_log_z(edges2, J2, np.zeros(n + 1), [], positions2, beta, n + 1, {})
    assert got == pytest.approx(transfer_matrix_log_z(_model(n + 1, beta, edges2, J2)), rel=1e-13)
