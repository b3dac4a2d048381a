"""The site-by-site transfer matrix against naive enumeration (and the chain oracle at large n)."""

import networkx as nx
import numpy as np
import pytest

from evaluators.oracles.base import NotApplicable, TooLarge
from evaluators.oracles.closed_forms import chain_log_z
from evaluators.oracles.naive import naive_log_z
from evaluators.oracles.transfer_matrix import (
    frontier_width,
    sweep_order,
    transfer_matrix_applies,
    transfer_matrix_log_z,
)
from tasks.catalog import p01_chain, p02_chain_fields, p03_torus, p04_planar_glass, p05_mattis, p06_regular_glass
from tasks.model import IsingModel, Lattice

RTOL = 1e-9
BETAS = (0.0, 0.1, 0.44, 1.0, 2.5, 8.0)


def close(a: float, b: float, rtol: float = RTOL) -> bool:
    return abs(a - b) <= rtol * max(1.0, abs(b))


def grid_edges(rows: int, cols: int, periodic_rows: bool = False, periodic_cols: bool = False) -> np.ndarray:
    r, c = np.divmod(np.arange(rows * cols), cols)
    site = np.arange(rows * cols)
    right = (c + 1 < cols) | periodic_cols
    down = (r + 1 < rows) | periodic_rows
    e = [np.stack([site[right], (r * cols + (c + 1) % cols)[right]], 1),
         np.stack([site[down], (((r + 1) % rows) * cols + c)[down]], 1)]
    return np.concatenate(e)


def random_grid(rng, rows, cols, pr=False, pc=False, fields=True, hint=True, beta=None):
    e = grid_edges(rows, cols, pr, pc)
    n = rows * cols
    return IsingModel.from_arrays(
        n, rng.choice(BETAS) if beta is None else beta, e, rng.uniform(-2, 2, len(e)),
        rng.uniform(-1.5, 1.5, n) if fields else None, constant=float(rng.normal()),
        lattice=Lattice(rows, cols, pr, pc) if hint else None)


def test_chains_open_and_periodic_random_couplings_and_fields():
    rng = np.random.default_rng(11)
    for trial in range(40):
        n = int(rng.integers(1, 17))
        periodic = n >= 3 and trial % 2 == 1
        perm = rng.permutation(n)              # scrambled labels: the order must be found
        i = np.arange(n - 1 + periodic)
        e = perm[np.stack([i, (i + 1) % n], 1)]
        m = IsingModel.from_arrays(n, rng.choice(BETAS), e, rng.normal(0, 1.5, len(e)),
                                   rng.normal(size=n) if trial % 3 else None)
        assert frontier_width(m) <= 2
        assert close(transfer_matrix_log_z(m), naive_log_z(m))


@pytest.mark.parametrize("rows,cols,pr,pc", [
    (2, 8, False, False), (3, 6, False, False), (4, 4, False, False), (4, 5, False, False),
    (3, 6, False, True), (4, 4, True, False), (5, 3, True, False), (2, 9, False, True),
])
def test_strips_and_cylinders_with_fields(rows, cols, pr, pc):
    rng = np.random.default_rng(rows * 100 + cols + 7 * pr + 13 * pc)
    for trial in range(4 if rows * cols <= 16 else 2):          # n = 18-20 enumerations are slow
        m = random_grid(rng, rows, cols, pr, pc, hint=trial % 2 == 0)
        assert close(transfer_matrix_log_z(m), naive_log_z(m))


@pytest.mark.parametrize("rows,cols", [(3, 3), (4, 4), (3, 5), (4, 5), (5, 3)])
def test_tori_random_couplings_and_fields(rows, cols):
    rng = np.random.default_rng(rows * 10 + cols)
    for trial in (0, 1, 2, 3) if rows * cols <= 16 else (1, 3):
        m = random_grid(rng, rows, cols, True, True, fields=trial != 0, hint=trial != 3)
        assert frontier_width(m) <= 2 * min(rows, cols)
        assert close(transfer_matrix_log_z(m), naive_log_z(m))


@pytest.mark.parametrize("task", [p01_chain.TASK, p02_chain_fields.TASK, p03_torus.TASK,
                                  p04_planar_glass.TASK, p05_mattis.TASK, p06_regular_glass.TASK])
def test_probe_instances(task):
    for n in task.probe_sizes:
        for sample in range(3):
            m = task.to_model(task.probe_params(n, seed=5, sample=sample), n)
            for beta in (m.beta, 8.0):
                mb = m.with_beta(beta)
                assert close(transfer_matrix_log_z(mb), naive_log_z(mb)), (task.id, n, sample, beta)


def test_random_graphs_with_higher_order_terms():
    rng = np.random.default_rng(3)
    for trial in range(25):
        n = int(rng.integers(2, 15))
        g = nx.gnp_random_graph(n, rng.uniform(0.1, 0.6), seed=int(rng.integers(1 << 30)))
        terms = [tuple(e) for e in g.edges()] + [(i,) for i in range(n) if rng.random() < 0.6]
        if trial % 2 and n >= 4:  # plaquette-like 3- and 4-spin terms
            terms += [tuple(rng.choice(n, size=int(rng.integers(3, 5)), replace=False)) for _ in range(3)]
        w = rng.normal(0, 1.2, len(terms))
        m = IsingModel(n=n, terms=tuple(terms), weights=w, beta=float(rng.choice(BETAS)))
        assert close(transfer_matrix_log_z(m), naive_log_z(m))


def test_any_order_gives_the_same_answer():
    rng = np.random.default_rng(8)
    m = random_grid(rng, 3, 4, True, False, beta=1.3)
    ref = naive_log_z(m)
    for _ in range(5):
        assert close(transfer_matrix_log_z(m, order=rng.permutation(m.n)), ref)
    with pytest.raises(ValueError):
        transfer_matrix_log_z(m, order=np.zeros(m.n, dtype=int))


def test_beta_zero_is_n_log_2_and_isolated_spins():
    rng = np.random.default_rng(2)
    m = random_grid(rng, 3, 4, beta=0.0)
    assert close(transfer_matrix_log_z(m), m.n * np.log(2.0))
    m = IsingModel.from_arrays(5, 0.7, [(0, 1)], 1.0, [0.0, 0.0, 0.3, 0.0, -1.0])
    assert close(transfer_matrix_log_z(m), naive_log_z(m))


def test_frontier_width_of_lattices():
    rng = np.random.default_rng(0)
    assert frontier_width(random_grid(rng, 12, 12)) == 12
    assert frontier_width(random_grid(rng, 5, 30, hint=True)) == 5          # sweeps the short way
    assert frontier_width(random_grid(rng, 5, 30, hint=False)) <= 6
    assert frontier_width(random_grid(rng, 10, 10, True, True)) <= 20
    chain = p01_chain.TASK.to_model({"beta": 1.0, "J": 1.0}, 50)
    assert frontier_width(chain) == 1
    order = sweep_order(chain)
    assert sorted(order.tolist()) == list(range(50))


def test_too_large_reports_the_width():
    rng = np.random.default_rng(0)
    m = random_grid(rng, 10, 10, fields=False)
    assert transfer_matrix_applies(m, max_width=8) is not None
    with pytest.raises(TooLarge, match="width 10"):
        transfer_matrix_log_z(m, max_width=8)
    assert transfer_matrix_applies(m) is None
    u = np.ones(200)
    mattis = IsingModel(n=200, terms=(), weights=np.zeros(0), beta=1.0, rank_one=((u, 1.0),))
    assert transfer_matrix_applies(mattis) is not None
    with pytest.raises(NotApplicable):
        transfer_matrix_log_z(mattis)


def test_long_strip_with_fields_matches_chain_oracle():
    """1 x 2000 and scrambled labels: many steps, checked against the 2x2 chain method."""
    rng = np.random.default_rng(4)
    n = 2000
    perm = rng.permutation(n)
    i = np.arange(n)
    for periodic in (False, True):
        e = perm[np.stack([i, (i + 1) % n], 1)[: n - 1 + periodic]]
        m = IsingModel.from_arrays(n, 2.0, e, rng.normal(size=len(e)), rng.normal(size=n))
        assert close(transfer_matrix_log_z(m), chain_log_z(m), 1e-11)


def test_grid_is_invariant_under_relabelling():
    """A 12 x 12 open glass with fields: row-major sweep vs the transposed labelling."""
    rng = np.random.default_rng(6)
    L = 12
    m = random_grid(rng, L, L, beta=1.0)
    perm = np.arange(L * L).reshape(L, L).T.ravel()          # new label of old spin i is perm[i]
    terms = tuple(tuple(int(perm[i]) for i in t) for t in m.terms)
    mt = IsingModel(n=m.n, terms=terms, weights=m.weights, beta=m.beta, constant=m.constant)
    assert close(transfer_matrix_log_z(m), transfer_matrix_log_z(mt), 1e-12)


@pytest.mark.slow
def test_open_grid_20():
    rng = np.random.default_rng(9)
    m = random_grid(rng, 20, 20, beta=1.0)
    assert frontier_width(m) == 20
    a = transfer_matrix_log_z(m)
    b = transfer_matrix_log_z(m, order=np.arange(400).reshape(20, 20).T.ravel())
    assert close(a, b, 1e-12)
