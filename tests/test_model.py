"""The model IR: energies, merged views, rank-one blocks, validation."""

import numpy as np
import pytest

from evaluators.oracles.naive import all_spins, naive_log_z
from tasks.model import IsingModel, Lattice


def test_energy_follows_the_sign_convention():
    # H = -(c + J s0 s1 + h s2 + K s0 s1 s2)
    m = IsingModel(n=3, terms=((0, 1), (2,), (0, 1, 2)), weights=np.array([0.5, -0.25, 2.0]), beta=1.0, constant=1.5)
    s = np.array([1, -1, -1])
    assert m.energy(s) == pytest.approx(-(1.5 + 0.5 * -1 + -0.25 * -1 + 2.0 * 1))


def test_repeated_pairs_merge_and_cancel():
    m = IsingModel(n=3, terms=((0, 1), (1, 0), (1, 2), (2, 1)), weights=np.array([1.0, 0.5, 1.0, -1.0]), beta=1.0)
    edges, J = m.couplings
    assert edges.tolist() == [[0, 1]] and J.tolist() == [1.5]


def test_rank_one_block_equals_its_expansion():
    rng = np.random.default_rng(0)
    n = 7
    u = rng.choice([-1.0, 1.0], n)
    compact = IsingModel(n=n, terms=((2,),), weights=np.array([0.3]), beta=0.8, rank_one=((u, 0.7),))
    i, j = np.triu_indices(n, 1)
    expanded = IsingModel.from_arrays(n, 0.8, np.stack([i, j], 1), 0.7 * u[i] * u[j], h=np.eye(n)[2] * 0.3)
    s = all_spins(n)
    assert np.allclose(compact.energy(s), expanded.energy(s))
    assert naive_log_z(compact) == pytest.approx(naive_log_z(expanded), rel=1e-13)
    assert compact.couplings[0].shape == (21, 2)
    assert compact.energy_bound() <= compact.energy(s).min()


def test_graph_view_carries_couplings_fields_and_k_spin_cliques():
    m = IsingModel(n=4, terms=((0, 1), (3,), (1, 2, 3)), weights=np.array([2.0, 0.5, 1.0]), beta=1.0)
    g = m.graph()
    assert g.number_of_nodes() == 4 and g.nodes[3]["h"] == 0.5
    assert g.edges[0, 1]["J"] == 2.0 and g.has_edge(1, 3) and g.edges[2, 3]["J"] == 0.0


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(n=2, terms=((0, 2),), weights=[1.0]), "bad term"),
        (dict(n=2, terms=((0, 0),), weights=[1.0]), "bad term"),
        (dict(n=2, terms=((0, 1),), weights=[1.0, 2.0]), "weights"),
        (dict(n=2, terms=((0, 1),), weights=[np.nan]), "finite"),
        (dict(n=0, terms=(), weights=[]), "at least one spin"),
        (dict(n=3, terms=(), weights=[], lattice=Lattice(2, 2)), "lattice"),
    ],
)
def test_invalid_models_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        IsingModel(beta=1.0, **kwargs)


def test_integer_energies_and_bound():
    m = IsingModel.from_arrays(3, 2.0, [[0, 1], [1, 2]], [1, -1], h=[0, 2, 0])
    assert m.integer_energies() and m.energy_bound() == -4
    assert not m.with_weights(m.weights * 0.5).integer_energies()


def test_open_lattice_embedding_and_torus_has_none():
    assert Lattice(2, 3).positions().tolist() == [[0, 0], [1, 0], [2, 0], [0, -1], [1, -1], [2, -1]]
    m = IsingModel.from_arrays(4, 1.0, [[0, 1]], [1.0], lattice=Lattice(2, 2, True, True))
    assert m.embedding() is None and m.lattice.torus
