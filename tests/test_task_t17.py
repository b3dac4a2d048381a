"""T17, the +-J glass on the Delaunay triangulation of random points: the sampler's edges against an
empty-circumcircle search, the IR against the card's formula, the planar oracle against enumeration,
a tensor network and the Kac-Ward determinant, malformed parameters, the reader, class admissibility,
and reference candidates (right and wrong) through the verifier and ``evolve verify``."""

import itertools
import json
import math

import numpy as np
import pytest
from scipy.special import logsumexp

from conftest import FIXTURES
from evaluators.checks.classes import admissible
from evaluators.checks.judgement import JudgeBudget
from evaluators.oracles.naive import naive_log_z
from evaluators.oracles.planar import planar_log_z
from evaluators.oracles.registry import exact_log_z, oracle_for
from evaluators.submission import Submission
from evaluators.verify import VerifyOptions, verify
from search.structural import StructuralProposer
from search.structural.readers import read, reader_disagreement, reader_source
from tasks.base import CLASS_LABELS
from tasks.family import family_structure
from tasks.registry import get_task

TASK = get_task("T17")
REFERENCE = "t17_planar_pfaffian.py"
CLAIMS = json.loads((FIXTURES / "t17.json").read_text())
PROBES_ONLY = VerifyOptions(samples=1, ladder=False, judge=False)


# -- independent references ---------------------------------------------------------------------------

def empty_circle_edges(points: np.ndarray) -> set[tuple[int, int]]:
    """Edges of every triangle whose circumcircle holds no other point (the Delaunay triangulation of
    points in general position), by trying all triples: O(n^4), no scipy."""
    n = len(points)
    found = set()
    for i, j, k in itertools.combinations(range(n), 3):
        a, b, c = points[i], points[j], points[k]
        d = 2.0 * (a[0] * (b[1] - c[1]) + b[0] * (c[1] - a[1]) + c[0] * (a[1] - b[1]))
        if abs(d) < 1e-14:
            continue
        sq = [p @ p for p in (a, b, c)]
        ux = (sq[0] * (b[1] - c[1]) + sq[1] * (c[1] - a[1]) + sq[2] * (a[1] - b[1])) / d
        uy = (sq[0] * (c[0] - b[0]) + sq[1] * (a[0] - c[0]) + sq[2] * (b[0] - a[0])) / d
        centre = np.array([ux, uy])
        r2 = (a - centre) @ (a - centre)
        others = np.delete(points, [i, j, k], axis=0)
        if np.all(np.sum((others - centre) ** 2, axis=1) > r2 * (1 + 1e-12)):
            found |= {(i, j), (i, k), (j, k)}
    return found


def card_log_z(params: dict, n: int) -> float:
    """log of the paraphrased card's Z: sum over x in {-1,+1}^n of exp(beta sum_e J[e] x_i x_j)."""
    X = 1.0 - 2.0 * ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1)
    exponent = np.zeros(len(X))
    for (i, j), Je in zip(params["edges"], params["J"]):
        exponent += params["beta"] * Je * X[:, i] * X[:, j]
    return float(logsumexp(exponent))


# -- the task card ------------------------------------------------------------------------------------

#: canonical model names the paraphrase must not use (the rule of tests/test_tasks_v1.py)
MODEL_NAMES = ("ising", "spin", "glass", "hamiltonian", "ferromagnet", "torus", "mattis", "curie", "weiss",
               "pfaffian", "lattice gas", "chemical", "plaquette", "triangular", "tree", "mean-field", "occupation")


def test_t17_is_a_complete_v1_task():
    assert TASK.tier == 1 and "StatMechBench-v1" in TASK.citation
    assert TASK.gold.tractable_class == "pfaffian" and TASK.gold.complexity == "O(n^1.5)"
    assert max(TASK.probe_sizes) <= 16 and min(TASK.ladder_sizes) > max(TASK.probe_sizes)
    for n in (3, *TASK.probe_sizes, *TASK.ladder_sizes):
        TASK.check_size(n)
    with pytest.raises(ValueError, match="at least 3"):
        TASK.check_size(2)


def test_paraphrase_follows_the_rewrite_rules():
    text = TASK.paraphrased.lower()
    assert not [w for w in MODEL_NAMES if w in text] and not [c for c in CLASS_LABELS if c in text]
    assert "x" in text and " s_i" not in text and "s[" not in text
    assert "z(" in text and "exp(" in text and "2^n" in text
    for key in TASK.probe_params(8, 0, 0):
        assert key in TASK.paraphrased and key in TASK.canonical


def test_sampler_draws_the_delaunay_triangulation_of_its_points():
    for n in (3, 8, 12):
        for seed in range(3):
            p = TASK.probe_params(n, seed, 0)
            points, edges = np.array(p["points"]), [tuple(e) for e in p["edges"]]
            assert points.shape == (n, 2) and np.all((points >= 0) & (points < 1))
            assert edges == sorted(edges) and all(i < j for i, j in edges)
            assert set(edges) == empty_circle_edges(points)
            assert len(p["J"]) == len(edges) and set(p["J"]) <= {-1.0, 1.0}
    a = TASK.probe_params(16, 5, 1)
    assert a == TASK.probe_params(16, 5, 1) and a != TASK.probe_params(16, 6, 1)
    assert json.loads(json.dumps(a)) == a


def test_ir_matches_the_card_formula():
    for n in (3, *TASK.probe_sizes):
        for k in range(2):
            params = TASK.probe_params(n, seed=3, sample=k)
            model = TASK.to_model(params, n)
            assert np.array_equal(model.positions, params["points"])
            assert naive_log_z(model) == pytest.approx(card_log_z(params, n), rel=1e-12)


# -- exact oracles ------------------------------------------------------------------------------------

def test_planar_oracle_matches_enumeration_down_to_low_temperature():
    """beta * |J| = 6 runs the double-double elimination."""
    for n, seeds in ((8, 3), (12, 3), (16, 3), (20, 1)):
        for seed in range(seeds):
            params = TASK.probe_params(n, seed=seed, sample=0)
            for beta in (params["beta"], 6.0):
                model = TASK.to_model({**params, "beta": beta}, n)
                assert abs(exact_log_z(model, "planar").log_z - naive_log_z(model)) < 1e-9


def test_ladder_oracle_against_a_tensor_network_and_the_kac_ward_determinant():
    for n in (64, 100):
        model = TASK.to_model(TASK.probe_params(n, 0, 1), n)
        result = exact_log_z(model)
        assert result.method == "planar"
        assert result.log_z == pytest.approx(exact_log_z(model, "tensor_network").log_z, rel=1e-11)
    for n in TASK.ladder_sizes[1:3]:                # high temperature, where Kac-Ward keeps its digits
        model = TASK.to_model({**TASK.probe_params(n, 0, 1), "beta": 0.8}, n)
        assert exact_log_z(model).log_z == pytest.approx(planar_log_z(model, "high_t"), rel=1e-11)


def test_every_ladder_size_is_planar_and_quick():
    exact_log_z(TASK.to_model(TASK.probe_params(64, 0, 1), 64))        # numba compilation off the clock
    for n in TASK.ladder_sizes:
        model = TASK.to_model(TASK.probe_params(n, 0, 0), n)
        assert oracle_for(model) == "planar"
        result = exact_log_z(model)
        assert math.isfinite(result.log_z) and result.seconds < 5.0, (n, result)


def test_gauge_and_beta_zero_leave_log_z_as_they_must():
    rng = np.random.default_rng(1)
    for n, exact in ((12, naive_log_z), (256, lambda m: exact_log_z(m).log_z)):
        params = TASK.probe_params(n, seed=8, sample=0)
        gauged = TASK.gauge(params, rng.choice([-1, 1], size=n))
        assert gauged["J"] != params["J"] and gauged["edges"] == params["edges"]
        assert exact(TASK.to_model(gauged, n)) == pytest.approx(exact(TASK.to_model(params, n)), rel=1e-11)
        assert exact(TASK.to_model(TASK.with_beta(params, 0.0), n)) == pytest.approx(n * math.log(2), rel=1e-12)
    assert TASK.flip_fields(params) is None


# -- malformed parameters -----------------------------------------------------------------------------

SQUARE = [[0.0, 0.0], [1.0, 0.1], [0.9, 1.0], [0.1, 0.8]]       # Delaunay: the four sides and diagonal 1-3
GOOD = {"beta": 1.0, "points": SQUARE, "edges": [[0, 1], [0, 3], [1, 2], [1, 3], [2, 3]],
        "J": [1.0, -1.0, 1.0, 1.0, -1.0]}


def test_the_malformed_cases_start_from_a_valid_instance():
    assert TASK.to_model(GOOD, 4).couplings[0].tolist() == GOOD["edges"]


@pytest.mark.parametrize("override,n,match", [
    ({"edges": None}, 4, "missing parameter 'edges'"),
    ({"edges": [[0, 1], [0, 3], [1, 1], [1, 3], [2, 3]]}, 4, "self loop"),
    ({"edges": [[0, 1], [0, 3], [1, 3], [3, 1], [2, 3]]}, 4, "twice"),
    ({"edges": [[0, 1], [0, 4], [1, 2], [1, 3], [2, 3]]}, 4, "in \\[0, 4\\)"),
    ({"edges": [[0, 1], [0, 2.5], [1, 2], [1, 3], [2, 3]]}, 4, "integers"),
    ({"edges": [0, 1, 2]}, 4, "pairs"),
    ({"edges": [[0, 1], [0, 3], [1, 2], [0, 2], [2, 3]]}, 4, "\\[0, 2\\] is not an edge of the Delaunay"),
    ({"J": [1.0, -1.0, 1.0, 1.0, 0.5]}, 4, "-1 or \\+1"),
    ({"J": [1.0, -1.0, 1.0, 1.0]}, 4, "shape"),
    ({"points": SQUARE[:3]}, 4, "shape"),
    ({"beta": "cold"}, 4, "number"),
    ({"points": [[0.0, 0.0], [0.5, 0.5], [1.0, 1.0]], "edges": [[0, 1], [1, 2]], "J": [1.0, 1.0]}, 3,
     "no Delaunay triangulation"),
    ({}, 2, "at least 3"),
])
def test_malformed_parameters_raise_clear_errors(override, n, match):
    params = {k: v for k, v in {**GOOD, **override}.items() if v is not None}
    with pytest.raises(ValueError, match=match):
        TASK.to_model(params, n)


# -- reader and classes ---------------------------------------------------------------------------------

def test_reader_agrees_with_to_model_and_is_caught_when_it_does_not():
    rng = np.random.default_rng(0)
    for n in (3, 16, 300):
        params = TASK.sample_params(rng, n)
        assert reader_disagreement(TASK, params, n) is None
        assert np.array_equal(read(TASK, params, n)[4], params["points"])

    class Broken(type(TASK)):
        reader_source = reader_source(TASK).replace("return edges, J, h,", "return edges, -J, h,")
    assert reader_disagreement(Broken(), TASK.sample_params(rng, 16), 16) == "coupling values differ"


def test_pfaffian_is_admissible_and_no_efficient_known_is_not():
    family = family_structure(TASK)
    assert family.planar is True and not family.has_fields and family.disorder == "frustrated"
    assert admissible("pfaffian", family)[0] and admissible("free_fermion", family)[0]
    assert not admissible("no_efficient_known", family)[0]
    assert not admissible("gauge", family)[0]            # frustrated: no gauge removes the signs


# -- candidates through the verifier --------------------------------------------------------------------

def submission(code: str | None = None, **override) -> Submission:
    claims = {k: v for k, v in CLAIMS[REFERENCE].items() if k != "task"}
    code = (FIXTURES / REFERENCE).read_text() if code is None else code
    return Submission.from_response({**claims, **override, "code": code})


def test_reference_candidate_passes_the_full_cascade(sandbox):
    assert CLAIMS[REFERENCE]["task"] == "T17" and CLAIMS[REFERENCE]["tractable_class"] == TASK.gold.tractable_class
    v = verify(TASK, submission(), VerifyOptions(samples=2), sandbox)
    assert v.verdict == "accept", v.feedback
    assert v.numerical.max_rel_err < 1e-9 and v.numerical.largest_n_verified >= 1024
    # the cold draw at n = 2048 (double-double elimination) may run out of the rung's 20 s when loaded
    assert v.numerical.frontier is None or (v.numerical.frontier.kind == "time" and v.numerical.frontier.n == 2048)
    assert v.class_.consistent is True and v.complexity.honest is not False
    assert v.physics.passed is True and "gauge_invariance" in {c.name for c in v.physics.checks}


def test_a_formula_that_ignores_frustration_is_rejected(sandbox):
    """|J| on every bond: the unfrustrated (gauge-equivalent to ferromagnetic) model, a larger Z."""
    code = (FIXTURES / REFERENCE).read_text()
    old = 'J = np.asarray(params["J"], dtype=np.float64).reshape(-1)'
    assert code.count(old) == 1
    v = verify(TASK, submission(code.replace(old, f"J = np.abs({old[4:]})")), PROBES_ONLY, sandbox)
    assert v.verdict == "reject" and v.numerical.failed > 0, v.feedback
    assert "your computed Z disagrees with brute force" in v.feedback


BRUTE_FORCE = '''\
import math
import numpy as np


def log_Z(params, n):
    edges = np.asarray(params["edges"], dtype=np.int64)
    J = np.asarray(params["J"], dtype=float)
    spins = 1 - 2 * ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1)
    x = float(params["beta"]) * ((spins[:, edges[:, 0]] * spins[:, edges[:, 1]]) @ J)
    m = x.max()
    return float(m + math.log(np.exp(x - m).sum()))


def Z_efficient(params, n):
    return math.exp(log_Z(params, n))
'''


def test_brute_force_claiming_a_pfaffian_is_rejected(sandbox):
    """Right numbers, wrong claims: enumeration of 2^n states is neither O(n^3) nor a Pfaffian."""
    sub = submission(BRUTE_FORCE, complexity_O="O(n^3)")
    quick_timing = JudgeBudget(timing_total_s=3.0, timing_call_s=2.0)     # the code itself shows the 2^n loop
    v = verify(TASK, sub, VerifyOptions(samples=1, ladder=False, judge_budget=quick_timing), sandbox)
    assert v.numerical.passed and v.verdict == "reject", v.feedback
    assert v.complexity.honest is False and "exponential" in v.complexity.measured
    assert v.class_.consistent is False and any("method" in r for r in v.class_.reasons)


def test_the_structural_proposer_writes_an_accepted_pfaffian_program(sandbox):
    cand = StructuralProposer(0).propose(TASK)
    assert cand.prompt_meta["plan"]["template"] == "planar_pfaffian"
    assert cand.tractable_class == TASK.gold.tractable_class
    v = verify(TASK, cand.to_submission(), PROBES_ONLY, sandbox)
    assert v.verdict == "accept", v.feedback


@pytest.mark.slow   # the same cascade as test_reference_candidate_passes_the_full_cascade, through the CLI
def test_evolve_verify_accepts_the_reference(tmp_path, capsys):
    from evolve.cli import main

    claims = {k: v for k, v in CLAIMS[REFERENCE].items() if k != "task"}
    path = tmp_path / "t17.json"
    path.write_text(json.dumps({**claims, "code": (FIXTURES / REFERENCE).read_text()}))
    assert main(["verify", "--task", "T17", str(path), "--json", "--samples", "1"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["verdict"] == "accept" and verdict["numerical"]["largest_n_verified"] == max(TASK.ladder_sizes)
