"""Every exact oracle over the whole physical range, each against a second method or a closed form.

beta runs over 0, 1e-12, the critical point, 1, 8, 50, 200 and 1000, couplings from 1e-160 to 1e3.
References that hold at any temperature:

- small models (n <= 16): the log-sum-exp of exp(-beta E) over every configuration (each term
  <= 1 relative to the ground state, so it is exact at every beta), and, once the first excitation
  weighs less than 1e-300 of the ground state, the closed form -beta E0 + log(degeneracy);
- grids beyond enumeration: the ground-state energy and its degeneracy from a row-by-row min-sum
  recursion that counts minimisers (integer energies, exact), and the other oracles;
- tori: Kaufman against the transfer matrix, and the closed limits N log 2 and -beta E0 + log 2;
- the Nishimori tasks: the raw double sum over bonds and spins against the identities, p from
  0.45 down to 1e-300; T18: the chain enumeration against the dual random-bond oracle.

The planar oracle's cold cases (beta |J| >= 12 up to 1e6) go through its certified elimination or
its ground-state line (:mod:`evaluators.oracles.planar_cold`); the tensor network's through its
log-space contraction.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pytest

from evaluators.oracles.naive import all_spins
from evaluators.oracles.registry import METHODS, exact_log_z
from tasks import nishimori as nl
from tasks import toric_code as tc
from tasks.base import coupling_scale
from tasks.catalog.p03_torus import ONSAGER_KC, torus_edges
from tasks.lattices import open_grid_edges
from tasks.model import IsingModel, Lattice
from tasks.registry import get_task

BETAS = (0.0, 1e-12, ONSAGER_KC, 1.0, 8.0, 50.0, 200.0, 1000.0)
SCALES = (1e-160, 1.0, 1e3)          # tiny, ordinary and huge couplings
#: log Z agrees to this relative tolerance (plus 1e-12 absolute): far inside the verifier's 1e-6
RTOL = 1e-10


def grid_edges(L: int) -> np.ndarray:
    right, down = open_grid_edges(L, L)
    return np.concatenate([right, down])


def _fixed(seed: int, f):
    return f(np.random.default_rng(seed))


#: small families (n <= 16): name -> function of the coupling scale giving a model at beta = 1
FAMILIES = {
    "open_chain": lambda s: IsingModel.from_arrays(
        12, 1.0, np.stack([np.arange(11), np.arange(1, 12)], 1), s * _fixed(1, lambda r: r.uniform(-1.5, 1.5, 11))),
    "ring_with_fields": lambda s: IsingModel.from_arrays(
        12, 1.0, np.stack([np.arange(12), (np.arange(12) + 1) % 12], 1), s * _fixed(2, lambda r: r.uniform(-1.5, 1.5, 12)),
        s * _fixed(3, lambda r: r.uniform(-1.0, 1.0, 12))),
    "torus_ferromagnet": lambda s: IsingModel.from_arrays(16, 1.0, torus_edges(4), s, lattice=Lattice(4, 4, True, True)),
    "torus_antiferromagnet": lambda s: IsingModel.from_arrays(16, 1.0, torus_edges(4), -s, lattice=Lattice(4, 4, True, True)),
    "pm_j_grid": lambda s: IsingModel.from_arrays(
        16, 1.0, grid_edges(4), s * _fixed(4, lambda r: r.choice([-1.0, 1.0], 24)), lattice=Lattice(4, 4)),
    "mattis_with_fields": lambda s: IsingModel(
        14, tuple((i,) for i in range(14)), s * _fixed(5, lambda r: r.uniform(-1.0, 1.0, 14)), 1.0,
        rank_one=((_fixed(6, lambda r: r.choice([-1.0, 1.0], 14)), 0.3 * s),)),
    "curie_weiss": lambda s: IsingModel(14, tuple((i,) for i in range(14)), np.full(14, 0.2 * s), 1.0,
                                        rank_one=((np.ones(14), 0.3 * s),)),
    "three_regular_with_plaquettes": lambda s: IsingModel(
        12, tuple(map(tuple, _fixed(7, lambda r: np.array([[i, (i + 1) % 12] for i in range(12)]
                                                           + [[i, i + 6] for i in range(6)])).tolist())) + ((0, 3, 6, 9),),
        s * np.r_[_fixed(8, lambda r: r.choice([-1.0, 1.0], 18)), 0.7], 1.0),
}


@lru_cache(maxsize=None)
def energies(family: str, scale: float) -> np.ndarray:
    model = FAMILIES[family](scale)
    return np.concatenate([model.energy(all_spins(model.n, a, min(2 ** model.n, a + (1 << 14))))
                           for a in range(0, 2 ** model.n, 1 << 14)])


def reference_log_z(family: str, scale: float, beta: float) -> float:
    """log-sum-exp over all states; the ground-state closed form once excitations are negligible."""
    E = energies(family, scale)
    x = -beta * E
    top = x.max()
    enumerated = float(top + np.log(np.exp(x - top).sum()))
    e0 = float(E.min())
    tol = 1e-9 * max(abs(e0), 1e-300)
    ground = E <= e0 + tol
    gap = float(E[~ground].min() - e0) if np.any(~ground) else math.inf
    if beta * gap > 700.0 + len(E).bit_length():   # every excitation below 1e-300 of the ground states
        closed = -beta * e0 + math.log(int(ground.sum()))
        assert abs(closed - enumerated) <= 1e-12 * max(1.0, abs(closed))
        return closed
    return enumerated


def _cases():
    for family in FAMILIES:
        for scale in SCALES:
            base = FAMILIES[family](scale)
            for beta in BETAS:
                model = base.with_beta(beta)
                for method in METHODS:
                    if METHODS[method].applies(model) is not None:
                        continue
                    yield pytest.param(family, scale, beta, method, id=f"{family}-J{scale:g}-beta{beta:g}-{method}")


@pytest.mark.parametrize("family,scale,beta,method", list(_cases()))
def test_every_oracle_at_every_temperature_on_small_models(family, scale, beta, method):
    model = FAMILIES[family](scale).with_beta(beta)
    ref = reference_log_z(family, scale, beta)
    got = exact_log_z(model, method).log_z
    assert abs(got - ref) <= RTOL * max(1.0, abs(ref)), (got, ref)


def test_every_method_is_swept():
    """Each registered method applies to some family here (a new oracle must join the sweep)."""
    swept = {method for *_, method in (p.values for p in _cases())}
    assert swept == set(METHODS), set(METHODS) - swept


# -- beyond enumeration -------------------------------------------------------------------------


def ground_state_and_degeneracy(L: int, J: np.ndarray) -> tuple[float, int]:
    """Exact E0 and number of ground states of an open L x L grid with integer couplings ``J``
    (in ``grid_edges`` order), by a row-by-row min-sum recursion that counts minimisers."""
    right, down = open_grid_edges(L, L)
    Jr, Jd = J[:len(right)].reshape(L, L - 1), J[len(right):].reshape(L - 1, L)
    S = 1 - 2 * ((np.arange(1 << L)[:, None] >> np.arange(L)) & 1)
    row_e = [-(S[:, :-1] * S[:, 1:]) @ Jr[r] for r in range(L)]
    E, count = row_e[0].astype(np.int64), np.ones(1 << L, dtype=object)
    for r in range(1, L):
        tot = E[:, None] - (S * Jd[r - 1]) @ S.T                    # previous row x this row
        best = tot.min(axis=0)
        count = np.array([count[tot[:, c] == best[c]].sum() for c in range(1 << L)], dtype=object)
        E = best + row_e[r]
    e0 = E.min()
    return float(e0), int(count[E == e0].sum())


PM_J_L = 8
PM_J_COUPLINGS = np.random.default_rng(11).choice([-1.0, 1.0], 2 * PM_J_L * (PM_J_L - 1))


@pytest.mark.parametrize("beta", [200.0, 1000.0, 1e5])
def test_transfer_matrix_is_the_ground_state_limit_on_a_frustrated_grid(beta):
    """Cold (every excitation, 4|J| at least, weighs < 1e-300): log Z = -beta E0 + log g0 exactly."""
    e0, g0 = ground_state_and_degeneracy(PM_J_L, PM_J_COUPLINGS)
    model = IsingModel.from_arrays(PM_J_L ** 2, beta, grid_edges(PM_J_L), PM_J_COUPLINGS, lattice=Lattice(PM_J_L, PM_J_L))
    ref = -beta * e0 + math.log(g0)
    assert g0 > 2                                          # frustrated: a degenerate ground state
    assert exact_log_z(model, "transfer_matrix").log_z == pytest.approx(ref, rel=1e-13, abs=1e-9)


@pytest.mark.parametrize("beta,method", [pytest.param(b, m, id=f"beta{b:g}-{m}")
                                         for b in BETAS for m in ("planar", "tensor_network")])
def test_planar_and_tensor_network_against_the_transfer_matrix_on_a_frustrated_grid(beta, method):
    model = IsingModel.from_arrays(PM_J_L ** 2, beta, grid_edges(PM_J_L), PM_J_COUPLINGS, lattice=Lattice(PM_J_L, PM_J_L))
    if METHODS[method].applies(model) is not None:
        pytest.skip(f"{method} declines beta = {beta}: {METHODS[method].applies(model)}")
    ref = exact_log_z(model, "transfer_matrix").log_z
    assert exact_log_z(model, method).log_z == pytest.approx(ref, rel=RTOL, abs=1e-12)


def test_registry_hands_a_non_finite_answer_over_to_the_next_method():
    """Unforced, a method that cannot represent the case (planar gave -inf at beta |J| = 200 on
    P04) is passed over and the next applicable one answers; forced, it is refused by name."""
    task = get_task("P04")
    params = {**task.probe_params(64, 0, 0), "beta": 200.0}
    model = task.to_model(params, 64)
    e0, g0 = ground_state_and_degeneracy(8, np.concatenate([np.ravel(params["Jh"]), np.ravel(params["Jv"])]))
    result = exact_log_z(model)
    assert math.isfinite(result.log_z)
    assert result.log_z == pytest.approx(-200.0 * e0 + math.log(g0), rel=1e-13)


@pytest.mark.parametrize("L", [6, 10])
@pytest.mark.parametrize("K", [1e-160, 1e-12, ONSAGER_KC, 1.0, 8.0, 50.0, 200.0, 1000.0, -0.3, -200.0])
def test_kaufman_against_the_transfer_matrix_at_every_temperature(L, K):
    model = IsingModel.from_arrays(L * L, 1.0, torus_edges(L), K, lattice=Lattice(L, L, True, True))
    a, b = exact_log_z(model, "kaufman").log_z, exact_log_z(model, "transfer_matrix").log_z
    assert a == pytest.approx(b, rel=RTOL, abs=1e-12)


@pytest.mark.parametrize("L", [64, 256])
@pytest.mark.parametrize("J,beta", [(1e-160, 1.0), (1.0, 1e-12), (1.0, 200.0), (1.0, 1000.0), (1e3, 1000.0), (-1.0, 1000.0)])
def test_kaufman_limits_on_large_tori(L, J, beta):
    """High temperature: log Z = N log 2 + 2N log cosh K (+ O(N K^4)); cold: -beta E0 + log 2,
    E0 = -2N|J| (the first excitation costs 8|J|)."""
    n = L * L
    model = IsingModel.from_arrays(n, beta, torus_edges(L), J, lattice=Lattice(L, L, True, True))
    K = beta * J
    ref = 2 * n * abs(K) + math.log(2.0) if abs(K) > 100 else n * math.log(2.0) + 2 * n * math.log(math.cosh(K))
    assert exact_log_z(model, "kaufman").log_z == pytest.approx(ref, rel=1e-13, abs=1e-9)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("beta", BETAS)
def test_long_chain_closed_form_against_the_transfer_sweep(scale, beta):
    """n = 20000: the zero-field forest product and the 2x2 transfer sweep agree everywhere."""
    n = 20_000
    J = scale * np.random.default_rng(12).uniform(-1.5, 1.5, n - 1)
    model = IsingModel.from_arrays(n, beta, np.stack([np.arange(n - 1), np.arange(1, n)], 1), J)
    a, b = exact_log_z(model, "forest").log_z, exact_log_z(model, "chain").log_z
    assert a == pytest.approx(b, rel=1e-12, abs=1e-9)


# -- Tier-2 quantities: the identities hold for any p ----------------------------------------------

P_SWEEP = (0.45, nl.P_CRITICAL, 1e-3, 1e-12, 1e-17, 1e-160, 1e-300)


@pytest.mark.parametrize("p", P_SWEEP)
def test_nishimori_raw_double_sum_against_the_identities_for_any_p(p):
    J = 1.3
    for beta in (0.0, 0.7, 8.0, 1000.0):
        energy, log_ratio = nl.disorder_log_sums(torus_edges(3), 9, p, J, beta)
        assert energy == pytest.approx(nl.mean_energy(18, p, J), rel=1e-10)
        assert log_ratio == pytest.approx(nl.log_partition_ratio(18, p, J, beta), rel=1e-12, abs=1e-10)


@pytest.mark.parametrize("p", P_SWEEP)
def test_nishimori_beta_keeps_p(p):
    """tanh(beta_N J) = 1 - 2p, read back as p = exp(-2 beta_N J) / (1 + exp(-2 beta_N J))."""
    b = nl.nishimori_beta(p, 1.0)
    assert math.isfinite(b) and b > 0
    assert math.exp(-2 * b) / (1 + math.exp(-2 * b)) == pytest.approx(p, rel=1e-12)


@pytest.mark.parametrize("task_id", ["T19", "T20"])
@pytest.mark.parametrize("p", [1e-12, 1e-17, 1e-160])
def test_t19_t20_references_for_tiny_p(task_id, p):
    task = get_task(task_id)
    params = {"p": p, "J": 1.1, "beta": 0.9} if task_id == "T20" else {"p": p, "J": 1.1}
    small, _ = task.own_reference(params, 9, "brute")
    large, _ = task.own_reference(params, 10_000, None)
    if task_id == "T19":
        assert small == pytest.approx(nl.mean_energy(18, p, 1.1), rel=1e-12)
        assert large == pytest.approx(-2e4 * 1.1 * (1 - 2 * p), rel=1e-15)
    else:
        assert small == pytest.approx(nl.log_partition_ratio(18, p, 1.1, 0.9), rel=1e-12)
        assert math.isfinite(large) and large < -700        # Z(beta)/Z(beta_N) is far below 1e-300


@pytest.mark.parametrize("p", [0.45, nl.P_CRITICAL, 1e-3, 1e-12, 1e-17, 1e-160])
def test_t18_dual_random_bond_oracle_against_chain_enumeration_for_any_p(p):
    task = get_task("T18")
    rng = np.random.default_rng(13)
    L = 3
    errors = (rng.random(2 * L * L) < 0.2).astype(np.int64)
    syndrome = tc.syndrome(L, errors)
    truth = tc.class_log_probabilities(L, p, syndrome.astype(np.int8))
    for a in (0, 1):
        for b in (0, 1):
            params = {"p": p, "syndrome": syndrome.tolist(), "homology": [a, b]}
            for method in ("brute", "transfer_matrix"):
                got = exact_log_z(task.to_model(params, L * L), method).log_z
                assert got == pytest.approx(truth[a, b], rel=1e-12, abs=1e-9), (a, b, method)


@pytest.mark.parametrize("p", [1e-12, 1e-160])
def test_t18_empty_syndrome_goes_through_kaufman_for_tiny_p(p):
    """Issue 13: T18 with p = 1e-160 reached Kaufman's NaN (no syndrome, class (0, 0): a uniform torus
    at K = 184). The unforced oracle now agrees with the chain enumeration."""
    task = get_task("T18")
    L = 4
    params = {"p": p, "syndrome": np.zeros((L, L), dtype=int).tolist(), "homology": [0, 0]}
    model = task.to_model(params, L * L)
    assert METHODS["kaufman"].applies(model) is None
    truth = tc.class_log_probabilities(L, p, np.zeros((L, L), dtype=np.int8))[0, 0]
    assert exact_log_z(model).log_z == pytest.approx(truth, rel=1e-12)
    assert exact_log_z(model, "kaufman").log_z == pytest.approx(truth, rel=1e-12)
