"""The elimination solver (search/derivation/solvers/elimination.py, issue 31 item 4): its rendered
text against brute force on random hypergraph models (three-spin terms, fields, trees, stars,
cacti, ladders) from beta = 1e-3 to 1e3, both table paths and the peeling forced on small models;
the exact oracle at sizes brute force cannot reach; what the view measures and what it claims; and
a user's three-spin chain derived to it and accepted beyond its probe sizes."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from evaluators.oracles.brute import brute_log_z
from evaluators.oracles.registry import exact_log_z
from evaluators.sandbox.policy import static_check
from evaluators.verify import VerifyOptions, verify
from search.derivation import derive
from search.derivation.proposer import to_candidate
from search.derivation.runtime import _rt_merge
from search.derivation.solvers import SOLVERS, elimination
from search.derivation.view import to_ising, view_of
from tasks.registry import register_task_file

ROOT = Path(__file__).resolve().parent.parent
BETAS = (1e-3, 0.1, 1.0, 10.0, 1e3)


def _model(n, parts, beta=1.0, rank_one=()):
    """A runtime model from [(idx (m, k), w (m,))] in energy units at inverse temperature beta."""
    terms = _rt_merge([(np.asarray(i, dtype=np.int64), beta * np.asarray(w, dtype=np.float64)) for i, w in parts])
    return {"n": n, "beta": beta, "terms": terms, "rank_one": [(np.asarray(u, float), beta * a) for u, a in rank_one],
            "log_shift": 0.0, "energy_shift": 0.0, "positions": None, "coords": None, "statistic": "log_z"}


def _edges_model(n, edges, rng, beta, extra=()):
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    parts = [(np.arange(n)[:, None], rng.normal(size=n)), (edges, rng.normal(size=len(edges)))] + list(extra)
    return _model(n, parts, beta)


def tree(n, rng):
    return np.stack([(rng.random(n - 1) * np.arange(1, n)).astype(np.int64), np.arange(1, n)], 1)


def star(n, rng=None):
    return np.stack([np.zeros(n - 1, np.int64), np.arange(1, n)], 1)


def cactus(n, rng):
    """Triangles and squares glued at single spins in a random tree pattern (about n spins)."""
    edges, m = [], 1
    while m < n:
        a, k = int(rng.integers(m)), int(rng.integers(3, 5))
        ring = [a] + list(range(m, m + k - 1))
        edges += [(ring[j], ring[(j + 1) % k]) for j in range(k)]
        m += k - 1
    return np.array(edges)


def ladder(n, rng=None):
    L = n // 2
    return np.array([(i, i + 1) for i in range(L - 1)] + [(L + i, L + i + 1) for i in range(L - 1)]
                    + [(i, L + i) for i in range(L)])


def hypergraph_models(rng, beta):
    """Small random models of each kind (brute force reaches them)."""
    out = []
    for n in (6, 11, 15):
        i = np.arange(n - 2)
        out.append(_model(n, [(np.stack([i, i + 1, i + 2], 1), rng.normal(size=n - 2)),
                              (np.arange(n)[:, None], rng.normal(size=n))], beta))                # three-spin chain
        idx = np.array([rng.choice(n, int(rng.integers(2, 5)), replace=False) for _ in range(n // 2)], dtype=object)
        parts = [(np.array([t for t in idx if len(t) == k]), None) for k in (2, 3, 4)]
        parts = [(p, rng.normal(size=len(p))) for p, _ in parts if len(p)]
        out.append(_model(n, parts + [(np.arange(n)[:, None], rng.normal(size=n))], beta))         # 2-4 spin terms
        for shape in (tree, star, cactus, ladder):
            edges = shape(n, rng)
            m = int(edges.max()) + 1
            out.append(_edges_model(m, edges, rng, beta))
    # a rank-one block on few spins, expanded into pairs
    out.append(_model(7, [(np.arange(7)[:, None], rng.normal(size=7))], beta, rank_one=[(rng.normal(size=7), 0.4)]))
    return out


def _rendered(**constants):
    """The solver's program text executed in a fresh namespace (its constants overridable)."""
    text = SOLVERS["elimination"].source({})
    assert static_check(text) == []                  # what the sandbox would refuse, refused here
    space: dict = {}
    exec(compile(text, "<elimination solver>", "exec"), space)   # noqa: S102 - the solver's own text
    space.update(constants)
    return space


@pytest.mark.parametrize("beta", BETAS)
def test_rendered_solver_against_brute_force(beta):
    """As rendered; with every step on numpy tables; with both (wide steps' tables feeding narrow
    ones); with peeling rounds of a single spin."""
    rng = np.random.default_rng(int(1e3 * beta) % 9973 + 1)
    variants = [_rendered(), _rendered(SMALL_STEP_SPINS=0), _rendered(SMALL_STEP_SPINS=2),
                _rendered(PEEL_BATCH_MIN=1)]
    for model in hypergraph_models(rng, beta):
        want = brute_log_z(to_ising(model))
        for space in variants:
            got = space["_sol_elim"](model, {})
            assert abs(got - want) <= 1e-11 * max(1.0, abs(want)), (model["n"], beta, got, want)


@pytest.mark.parametrize("beta", (1e-3, 1.0, 1e3))
def test_large_models_against_the_exact_oracle(beta):
    """Trees, stars and cacti peel in vectorised rounds; the three-spin chain and the ladder are
    eliminated step by step: each against the elimination oracle (numba, its own order)."""
    rng = np.random.default_rng(17)
    solve = _rendered()["_sol_elim"]
    i = np.arange(4998)
    three = _model(5000, [(np.stack([i, i + 1, i + 2], 1), rng.normal(size=4998)),
                          (np.arange(5000)[:, None], rng.normal(size=5000))], beta)
    models = [three] + [_edges_model(int(e.max()) + 1, e, rng, beta) for e in
                        (tree(20000, rng), star(20000), cactus(5000, rng), ladder(4000))]
    for model in models:
        ising = to_ising(model)
        want = exact_log_z(ising).log_z
        assert abs(solve(model, {}) - want) <= 1e-11 * abs(want)


def test_widths_the_view_measures_and_what_is_claimed():
    rng = np.random.default_rng(3)
    sizes = (12, 100, 1000)
    i = [np.arange(n - 2) for n in sizes]
    threes = [_model(n, [(np.stack([a, a + 1, a + 2], 1), rng.normal(size=n - 2)),
                         (np.arange(n)[:, None], rng.normal(size=n))]) for n, a in zip(sizes, i)]
    view = view_of("X", sizes, threes, False)
    assert view.elimination_widths == (2, 2, 2) and view.elimination_reason is None
    assert elimination.applies(view) is None
    labels, complexity, why, _ = elimination.claims(view, {})
    assert labels == ("treewidth_bounded",) and complexity == "O(n)" and "width 2 at every size" in why

    grids = {}                                       # L x L grids: the width grows as L
    for L in (3, 5, 7, 10):
        r, c = np.divmod(np.arange(L * L), L)
        e = np.concatenate([np.stack([r * L + c, r * L + c + 1], 1)[c < L - 1],
                            np.stack([r * L + c, (r + 1) * L + c], 1)[r < L - 1]])
        grids[L] = _edges_model(L * L, e, rng, 1.0)
    view = view_of("X", (9, 25, 49), [grids[3], grids[5], grids[7]], False)
    assert view.elimination_widths == (3, 5, 8)
    assert elimination.applies(view).startswith("the elimination width grows with the size (3 at n = 9, 5 at n = 25")
    view = view_of("X", (100,), [grids[10]], False)
    assert "no greedy elimination order of width <= 12" in elimination.applies(view)

    wide = _model(40, [(np.arange(40)[:, None], rng.normal(size=40))], rank_one=[(rng.normal(size=40), 0.1)])
    view = view_of("X", (40,), [wide], False)
    assert "rank-one block couples all 40 spins" in elimination.applies(view)


@pytest.fixture
def three_spin_task():
    """The user task file, registered for this test only (other tests count the registered tasks)."""
    from tasks import registry

    before = set(registry._user)
    task = register_task_file(ROOT / "examples/tasks/three_spin_chain.py")
    yield task
    if task.id not in before:
        registry._user.pop(task.id, None)


def test_a_three_spin_chain_is_derived_to_elimination_and_accepted_beyond_its_probes(three_spin_task, sandbox):
    task = three_spin_task
    d = derive(task, sandbox=sandbox)
    assert d.program is not None, d.error
    assert (d.chain, d.tractable_class, d.complexity_O) == ("read_formula -> elimination", "treewidth_bounded", "O(n)")
    assert "width 2 at every size" in d.justification
    short = copy.copy(task)
    short.ladder_sizes = task.ladder_sizes[:2]                  # n = 300 and 3000
    v = verify(short, to_candidate(d, "t", task.id).to_submission(), VerifyOptions(samples=2), sandbox)
    assert v.verdict == "accept", v.feedback
    assert v.numerical.largest_n_verified == 3000 > max(task.probe_sizes)
    assert v.complexity.honest is True
