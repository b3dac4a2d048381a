"""Structure from the graph, not a drawing (issue 31): a planar drawing computed from the interaction
graph's own embedding, parity-constrained sums mapped to the faces of their constraint graph, and the
exact constrained-sum reference; each against an independent value (enumeration of every assignment)."""

import itertools
import math
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from scipy.special import logsumexp

from evaluators.checks.classes import admissible
from evaluators.oracles.brute import brute_log_z
from evaluators.oracles.constrained_sum import constrained_log_value
from search.derivation import derive
from search.derivation.actions import face_dual, planar_drawing
from search.derivation.runtime import _rt_merge
from search.derivation.view import to_ising
from tasks.family import family_structure
from tasks.parity_dual import _fd_model
from tasks.registry import get_task, register_task_file
from tasks.rotation_system import drawing_is_planar


def _pair_model(n, edges, K):
    parts = [(np.asarray(edges, dtype=np.int64).reshape(-1, 2), np.asarray(K, dtype=np.float64))]
    return {"n": n, "beta": 1.0, "terms": _rt_merge(parts), "rank_one": [], "log_shift": 0.0, "energy_shift": 0.0,
            "positions": None, "coords": None, "statistic": "log_z"}


@pytest.mark.parametrize("seed", range(4))
def test_planar_drawing_draws_a_relabelled_grid_and_keeps_z(seed):
    rng = np.random.default_rng(seed)
    L = int(rng.integers(3, 9))
    g = nx.convert_node_labels_to_integers(nx.grid_2d_graph(L, L))
    perm = rng.permutation(L * L)                     # the spins numbered at random: no drawing to infer
    edges = np.array([(perm[a], perm[b]) for a, b in g.edges()])
    model = _pair_model(L * L, edges, rng.choice([-1.0, 1.0], len(edges)))
    drawn = planar_drawing.ENTRY(model, {})
    assert drawn["positions"].shape == (L * L, 2)
    assert drawing_is_planar(L * L, edges, drawn["positions"])           # Euler's formula on its rotation
    if L <= 4:
        assert brute_log_z(to_ising(drawn)) == pytest.approx(brute_log_z(to_ising(model)), rel=1e-13)


def test_planar_drawing_refuses_a_graph_that_is_not_planar():
    k33 = np.array([(a, b) for a in range(3) for b in range(3, 6)])
    with pytest.raises(ValueError, match="not planar"):
        planar_drawing.ENTRY(_pair_model(6, k33, np.ones(9)), {})


# -- parity-constrained sums -------------------------------------------------------------------------

def _problem(n_vars, fields, constant, rows, families=None):
    """A compiled reader's "constrained" dict: fields h_b on s_b = 2 x_b - 1 and rows (vars, rhs); rows are
    grouped into families (lists of row indices; default one family)."""
    families = families or [list(range(len(rows)))]
    cons = []
    for fam in families:
        row_of = np.concatenate([np.full(len(rows[r][0]), k) for k, r in enumerate(fam)]).astype(np.int64)
        var = np.concatenate([np.asarray(rows[r][0], dtype=np.int64) for r in fam])
        rhs = np.array([rows[r][1] for r in fam], dtype=np.int64)
        cons.append({"row_of": row_of, "var": var, "rhs": rhs, "coords": np.zeros((len(fam), 0), dtype=np.int64)})
    idx = np.arange(n_vars).reshape(-1, 1)
    return {"kind": "constrained", "n": n_vars, "n_vars": n_vars, "terms": [(idx, np.asarray(fields, float))],
            "constant": float(constant), "constraints": cons}


def _enumerated(problem) -> float:
    """log of the sum by listing every assignment of the variables (the definition)."""
    N = problem["n_vars"]
    h = np.zeros(N)
    for idx, w in problem["terms"]:
        np.add.at(h, idx[:, 0], w)
    vals = []
    for x in itertools.product((0, 1), repeat=N):
        x = np.array(x)
        if all(int(x[c["var"][c["row_of"] == r]].sum()) % 2 == int(c["rhs"][r]) % 2
               for c in problem["constraints"] for r in range(len(c["rhs"]))):
            vals.append(problem["constant"] + float(h @ (2 * x - 1)))
    return float(logsumexp(vals)) if vals else -math.inf


def _dual_value(model) -> float:
    """log Z of the dual model with its shift (the IR's constant is the shift)."""
    if model["n"] == 0 or not model["terms"]:
        return model["log_shift"] + model["n"] * math.log(2.0)
    return brute_log_z(to_ising(model))


def _code_on(graph: nx.Graph, rng, extra_rows: int, dangling: int):
    """Variables on the edges of ``graph`` (vertex conditions), ``dangling`` more edges with one end only,
    and ``extra_rows`` conditions on random sets of variables; syndromes of a random error, so the sum is
    not empty."""
    edges = list(graph.edges())
    ends = [(a, b) for a, b in edges] + [(int(rng.integers(graph.number_of_nodes())), None) for _ in range(dangling)]
    N = len(ends)
    error = (rng.random(N) < 0.3).astype(int)
    rows = []
    for v in range(graph.number_of_nodes()):
        members = [b for b, (a, c) in enumerate(ends) if v in (a, c)]
        rows.append((members, int(error[members].sum()) % 2))
    vertex_rows = list(range(len(rows)))
    for _ in range(extra_rows):
        members = sorted(rng.choice(N, size=int(rng.integers(1, N + 1)), replace=False).tolist())
        rows.append((members, int(error[members].sum()) % 2))
    p = rng.uniform(1e-3, 0.4, N)
    h = -0.5 * (np.log1p(-p) - np.log(p))             # p^x (1-p)^(1-x) = sqrt(p(1-p)) exp(h (2x - 1))
    const = float(0.5 * np.sum(np.log(p) + np.log1p(-p)))
    return _problem(N, h, const, rows, [vertex_rows, list(range(len(vertex_rows), len(rows)))] if extra_rows else None)


@pytest.mark.parametrize("seed", range(10))
def test_face_dual_equals_the_enumerated_sum_on_planar_codes(seed):
    """Rings, paths, small grids and random planar graphs, with dangling edges (a virtual boundary vertex)
    and extra conditions (logical classes): the dual model's log Z plus its shift is the sum itself."""
    rng = np.random.default_rng(seed)
    graph = [nx.cycle_graph(int(rng.integers(3, 9))), nx.path_graph(int(rng.integers(2, 8))),
             nx.convert_node_labels_to_integers(nx.grid_2d_graph(2, int(rng.integers(2, 4)))),
             nx.convert_node_labels_to_integers(nx.random_labeled_tree(int(rng.integers(3, 8)), seed=seed))][seed % 4]
    problem = _code_on(graph, rng, extra_rows=int(rng.integers(0, 3)), dangling=int(rng.integers(0, 3)))
    if problem["n_vars"] > 16:
        pytest.skip("too many variables to enumerate")
    want = _enumerated(problem)
    got = _dual_value(_fd_model(problem))
    assert got == pytest.approx(want, rel=1e-11, abs=1e-11)
    assert face_dual.ENTRY(problem, {})["n"] == _fd_model(problem)["n"]


def test_face_dual_refuses_conditions_whose_graph_is_not_planar():
    k5 = nx.complete_graph(5)
    problem = _code_on(k5, np.random.default_rng(0), extra_rows=0, dangling=0)
    with pytest.raises(ValueError, match="not planar"):
        _fd_model(problem)


def test_face_dual_refuses_conditions_no_assignment_satisfies():
    ring = _problem(3, [0.1, 0.2, 0.3], 0.0, [([0, 1], 0), ([1, 2], 0), ([2, 0], 1)])
    assert _enumerated(ring) == -math.inf
    with pytest.raises(ValueError, match="no assignment"):
        _fd_model(ring)


@pytest.mark.parametrize("seed", range(8))
def test_the_constrained_sum_reference_equals_enumeration_at_tiny_and_large_weights(seed):
    """Any conditions (long rows become XOR chains; graphs need not be planar), probabilities down to 1e-300."""
    rng = np.random.default_rng(100 + seed)
    graph = nx.gnm_random_graph(6, int(rng.integers(5, 11)), seed=seed)
    problem = _code_on(graph, rng, extra_rows=int(rng.integers(0, 3)), dangling=int(rng.integers(0, 3)))
    if seed % 2:
        problem["terms"][0] = (problem["terms"][0][0], problem["terms"][0][1] * 300.0)   # p about 1e-260
    assert constrained_log_value(problem) == pytest.approx(_enumerated(problem), rel=1e-12, abs=1e-12)


# -- fields on one face: the ghost spin keeps the graph planar ------------------------------------------

BOUNDARY_FIELDS = Path(__file__).parent / "fixtures" / "user_tasks" / "boundary_field_grid.py"


def test_fields_on_one_face_admit_the_pfaffian_and_fields_everywhere_do_not():
    task = register_task_file(BOUNDARY_FIELDS)
    family = family_structure(task)
    assert family.has_fields and family.ghost_planar is True
    assert admissible("pfaffian", family)[0]
    t16 = family_structure(get_task("T16"))              # a field on every site of a grid: the apex is not planar
    assert t16.has_fields and t16.ghost_planar is False and not admissible("pfaffian", t16)[0]


def test_a_grid_with_boundary_fields_is_derived_through_the_ghost_spin_and_drawn_again(sandbox):
    d = derive(register_task_file(BOUNDARY_FIELDS), sandbox=sandbox)
    assert d.chain == "read_formula -> ghost_spin -> planar_drawing -> planar_pfaffian"
    assert d.tractable_class == "pfaffian" and all(s.check.passed for s in d.steps)
