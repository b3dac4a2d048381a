"""Every task's sampler and IR against a naive enumeration of its task card's own formula."""

import itertools
import math

import numpy as np
import pytest

from evaluators.oracles.naive import naive_log_z
from tasks.base import CLASS_LABELS
from tasks.registry import all_tasks, get_task


def card_exponent(task_id: str, params: dict, x: np.ndarray, n: int) -> float:
    """-beta H(x) written straight from the task card (paraphrased form), independent of the IR."""
    b = params["beta"]
    if task_id == "P01":
        return b * params["J"] * sum(x[i] * x[i + 1] for i in range(n - 1))
    if task_id == "P02":
        return b * params["J"] * sum(x[i] * x[i + 1] for i in range(n - 1)) + b * sum(
            params["h"][i] * x[i] for i in range(n)
        )
    if task_id == "P03":
        L = math.isqrt(n)
        g = x.reshape(L, L)
        pairs = set()
        for r in range(L):
            for c in range(L):
                for r2, c2 in (((r + 1) % L, c), (r, (c + 1) % L)):
                    pairs.add(tuple(sorted([(r, c), (r2, c2)])))
        assert len(pairs) == 2 * L * L
        return b * params["J"] * sum(g[a] * g[c] for a, c in pairs)
    if task_id == "P04":
        L = math.isqrt(n)
        g = x.reshape(L, L)
        Jh, Jv = params["Jh"], params["Jv"]
        e = sum(Jh[r][c] * g[r, c] * g[r, c + 1] for r in range(L) for c in range(L - 1))
        e += sum(Jv[r][c] * g[r, c] * g[r + 1, c] for r in range(L - 1) for c in range(L))
        return b * e
    if task_id == "P05":
        M = sum(params["xi"][i] * x[i] for i in range(n))
        return (b / 2) * (M * M - n)
    if task_id == "P06":
        return b * sum(J * x[i] * x[j] for (i, j), J in zip(params["edges"], params["J"]))
    raise KeyError(task_id)


V0_TASKS = [t for t in all_tasks() if t.id in ("P01", "P02", "P03", "P04", "P05", "P06")]


def card_log_z(task_id, params, n):
    vals = [card_exponent(task_id, params, np.array(x), n) for x in itertools.product([-1, 1], repeat=n)]
    m = max(vals)
    return m + math.log(sum(math.exp(v - m) for v in vals))


@pytest.mark.parametrize("task", V0_TASKS, ids=lambda t: t.id)
def test_ir_matches_task_card_formula(task):
    for n in task.probe_sizes:
        if n > 12:
            continue
        for k in range(2):
            params = task.probe_params(n, seed=3, sample=k)
            assert naive_log_z(task.to_model(params, n)) == pytest.approx(card_log_z(task.id, params, n), rel=1e-12)


@pytest.mark.parametrize("task", V0_TASKS, ids=lambda t: t.id)
def test_ir_matches_card_at_largest_probe(task):
    n = max(task.probe_sizes)
    params = task.probe_params(n, seed=11, sample=0)
    assert naive_log_z(task.to_model(params, n)) == pytest.approx(card_log_z(task.id, params, n), rel=1e-12)


@pytest.mark.parametrize("task", all_tasks(), ids=lambda t: t.id)
def test_sampler_is_deterministic_and_seed_dependent(task):
    n = task.probe_sizes[-1]
    a = task.probe_params(n, seed=5, sample=1)
    assert a == task.probe_params(n, seed=5, sample=1)
    assert a != task.probe_params(n, seed=6, sample=1)
    assert a != task.probe_params(n, seed=5, sample=2)


#: tasks whose quantity is Z itself (the Tier-2 tasks declare others, with no free temperature)
Z_TASKS = [t for t in all_tasks() if t.quantity.is_partition_function]


@pytest.mark.parametrize("task", Z_TASKS, ids=lambda t: t.id)
def test_sampler_covers_low_temperature(task):
    betas = [task.probe_params(task.probe_sizes[0], seed=s, sample=0)["beta"] for s in range(200)]
    assert min(betas) < 0.3 and max(betas) > 1.0


def test_parameter_shapes_follow_the_task_cards():
    p = get_task("P04").probe_params(16, 0, 0)
    assert np.shape(p["Jh"]) == (4, 3) and np.shape(p["Jv"]) == (3, 4)
    assert set(np.ravel(p["Jh"])) <= {-1.0, 1.0}
    p = get_task("P02").probe_params(10, 0, 0)
    assert len(p["h"]) == 10
    p = get_task("P05").probe_params(12, 0, 0)
    assert len(p["xi"]) == 12 and set(p["xi"]) <= {-1.0, 1.0}
    p = get_task("P06").probe_params(10, 0, 0)
    degrees = np.bincount(np.ravel(p["edges"]), minlength=10)
    assert np.all(degrees == 3) and len(p["J"]) == 15
    assert set(get_task("P01").probe_params(6, 0, 0)) == {"beta", "J"}


def test_jh_jv_orientation():
    """Jh[r][c] couples (r,c)-(r,c+1) and Jv[r][c] couples (r,c)-(r+1,c): only one bond is antiferro."""
    L, n = 3, 9
    Jh = [[1.0, 1.0], [1.0, -1.0], [1.0, 1.0]]  # (1,1)-(1,2) is antiferro
    Jv = [[1.0] * 3, [1.0] * 3]
    model = get_task("P04").to_model({"beta": 1.0, "Jh": Jh, "Jv": Jv}, n)
    edges, J = model.couplings
    anti = [tuple(e) for e, j in zip(edges.tolist(), J) if j < 0]
    assert anti == [(1 * L + 1, 1 * L + 2)]


@pytest.mark.parametrize(
    "task_id,params,n,match",
    [
        ("P01", {"beta": 1.0}, 6, "missing parameter 'J'"),
        ("P02", {"beta": 1.0, "J": 1.0, "h": [0.1] * 5}, 6, "shape"),
        ("P03", {"beta": 1.0, "J": 1.0}, 10, "L\\*L"),
        ("P04", {"beta": 1.0, "Jh": [[1, 1]] * 3, "Jv": [[1, 1, 0.5]] * 2}, 9, "-1 or \\+1"),
        ("P05", {"beta": "hot", "xi": [1] * 6}, 6, "number"),
        ("P06", {"beta": 1.0, "edges": [[0, 9]], "J": [1]}, 8, "vertices"),
        ("P06", {"beta": 1.0}, 7, "even"),
    ],
)
def test_malformed_parameters_raise_clear_errors(task_id, params, n, match):
    with pytest.raises(ValueError, match=match):
        get_task(task_id).to_model(params, n)


def test_every_task_is_complete():
    for t in all_tasks():
        assert t.gold.tractable_class in CLASS_LABELS
        assert t.canonical.strip() and t.paraphrased.strip() and t.probe_sizes
        assert t.gold.tractable_class not in t.paraphrased  # labels are kept from proposers
        assert t.ladder_sizes and min(t.ladder_sizes) > max(t.probe_sizes)


def test_unknown_task_lists_known_ones():
    with pytest.raises(KeyError, match="P01, P02"):
        get_task("P99")


@pytest.mark.parametrize("task", Z_TASKS, ids=lambda t: t.id)
def test_declared_symmetries_leave_log_z_unchanged(task):
    n = task.probe_sizes[0]
    params = task.probe_params(n, seed=8, sample=0)
    ref = naive_log_z(task.to_model(params, n))
    rng = np.random.default_rng(1)
    flipped = task.flip_fields(params)
    if flipped is not None:
        assert flipped != params
        assert naive_log_z(task.to_model(flipped, n)) == pytest.approx(ref, rel=1e-12)
    gauged = task.gauge(params, rng.choice([-1, 1], size=n))
    if gauged is not None:
        assert gauged != params
        assert naive_log_z(task.to_model(gauged, n)) == pytest.approx(ref, rel=1e-12)
    hotter = task.with_beta(params, 0.0)
    assert naive_log_z(task.to_model(hotter, n)) == pytest.approx(n * math.log(2), rel=1e-12)
