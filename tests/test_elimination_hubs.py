"""Variable elimination on stars and hubs (issue 31, item 8): the greedy orders with hub lists in a
hash table are the orders of the plain definition, and log Z with fields agrees with brute force
at small n and with closed forms (leaves summed out by hand, in logs) at large n, from beta = 1e-3
to 1e3. How fast it is: tests/benchmarks/elimination_hubs.py (not timed here)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from evaluators.oracles.brute import brute_log_z
from evaluators.oracles.elimination import elimination_log_z
from evaluators.oracles.elimination_order import MARK_MAX_DEGREE, MIN_DEGREE, MIN_FILL, greedy_order, interaction_graph
from evaluators.oracles.registry import exact_log_z, oracle_for
from tasks.model import IsingModel

BETAS = (1e-3, 0.1, 1.0, 10.0, 1e3)


def _model(n, edges, beta, rng):
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    return IsingModel.from_arrays(n, beta, edges, rng.normal(size=len(edges)), rng.normal(size=n))


def star(n):
    return [(0, k) for k in range(1, n)]


def hubs(n, n_hubs):
    return [(h, (h + 1) % n_hubs) for h in range(n_hubs)] + [(k % n_hubs, k) for k in range(n_hubs, n)]


def wheel(n):
    return [(0, k) for k in range(1, n)] + [(k, k % (n - 1) + 1) for k in range(1, n)]


def double_hub(n):
    return [(0, 1)] + [(h, k) for k in range(2, n) for h in (0, 1)]


def _log2cosh(x):
    a = np.abs(x)
    return a + np.log1p(np.exp(-2.0 * a))


def hubs_closed_form(model: IsingModel, n_hubs: int) -> float:
    """log Z when spins 0 .. n_hubs-1 are the only ones coupled to more than one spin and every other
    spin couples to hubs alone: each leaf summed out by hand, log 2cosh(beta(sum_h J_hk s_h + h_k)),
    then the 2^n_hubs hub states summed by log-sum-exp."""
    edges, J = model.couplings
    h = model.fields
    b = model.beta
    terms = []
    for s in itertools.product((1.0, -1.0), repeat=n_hubs):
        s = np.array(s)
        hub_hub = (edges[:, 1] < n_hubs)
        x = b * float(np.sum(J[hub_hub] * s[edges[hub_hub, 0]] * s[edges[hub_hub, 1]]) + np.dot(h[:n_hubs], s))
        local = b * h.copy()
        leaf = ~hub_hub
        np.add.at(local, edges[leaf, 1], b * J[leaf] * s[edges[leaf, 0]])
        terms.append(x + float(np.sum(_log2cosh(local[n_hubs:]))))
    top = max(terms)
    return top + math.log(sum(math.exp(t - top) for t in terms))


def reference_order(n, edges, criterion, max_width):
    """The greedy order by its definition: at each step the spin of least (score, degree, index),
    score = degree (min-degree) or missing edges among its neighbours (min-fill; a spin with more
    than min(max_width + 1, 256) neighbours scores 10^6 + degree)."""
    nbrs = [set() for _ in range(n)]
    for a, b in edges:
        nbrs[a].add(b)
        nbrs[b].add(a)
    limit = min(max_width + 1, 256)
    live, order, clique = set(range(n)), [], []

    def key(v):
        d = len(nbrs[v])
        if criterion == MIN_DEGREE:
            score = d
        elif d > limit:
            score = 1_000_000 + d
        else:
            ns = list(nbrs[v])
            score = sum(1 for i in range(d) for j in range(i + 1, d) if ns[j] not in nbrs[ns[i]])
        return score, min(d, 4095), v

    while live:
        v = min(live, key=key)
        ns = list(nbrs[v])
        if len(ns) > max_width:
            return order, clique, -1
        order.append(v)
        clique.append(len(ns) + 1)
        for a in ns:
            nbrs[a].discard(v)
            nbrs[a].update(x for x in ns if x != a)
        live.discard(v)
    return order, clique, max(clique) - 1


def _hub_graphs(rng):
    n = 240
    sparse = [(int(a), int(b)) for a, b in rng.integers(2, n, size=(160, 2)) if a != b]
    two_hubs = sparse + [(h, int(k)) for h in (0, 1) for k in rng.choice(np.arange(2, n), n // 2, replace=False)]
    return {"star": (200, star(200)), "wheel": (150, wheel(150)), "double hub": (150, double_hub(150)),
            "4 hubs": (300, hubs(300, 4)), "two hubs over a sparse graph": (n, two_hubs)}


@pytest.mark.parametrize("criterion", [MIN_DEGREE, MIN_FILL])
def test_orders_with_hashed_hubs_are_the_definition(criterion):
    """Hubs of more than MARK_MAX_DEGREE neighbours go through the hash table (look-ups, swaps,
    rehashing as fill edges join them): the order, the cliques and the width are the definition's."""
    rng = np.random.default_rng(3)
    for name, (n, edges) in _hub_graphs(rng).items():
        model = IsingModel.from_arrays(n, 1.0, edges, 1.0)
        indptr, indices = interaction_graph(model)
        assert np.diff(indptr).max() > MARK_MAX_DEGREE, name
        for max_width in (1 << 30, 12, 3):
            order, clique, width = greedy_order(indptr, indices, criterion, max_width)
            ref_order, ref_clique, ref_width = reference_order(n, model.couplings[0].tolist(), criterion, max_width)
            assert order.tolist() == ref_order and clique.tolist() == ref_clique and width == ref_width, \
                (name, max_width)


@pytest.mark.parametrize("beta", BETAS)
def test_stars_hubs_and_wheels_against_brute_force(beta):
    rng = np.random.default_rng(int(beta * 1000) + 7)
    for edges in (star(16), hubs(16, 3), hubs(18, 5), wheel(15), double_hub(16)):
        n = max(max(e) for e in edges) + 1
        model = _model(n, edges, beta, rng)
        want = brute_log_z(model)
        assert abs(elimination_log_z(model) - want) <= 1e-12 * max(1.0, abs(want))


@pytest.mark.parametrize("beta", BETAS)
def test_large_star_and_hubs_against_their_closed_forms(beta):
    """n = 20000: the star (one hub), 8 hubs in a ring and two joined hubs shared by every leaf."""
    rng = np.random.default_rng(11)
    n = 20000
    for edges, n_hubs in ((star(n), 1), (hubs(n, 8), 8), (double_hub(n), 2)):
        model = _model(n, edges, beta, rng)
        want = hubs_closed_form(model, n_hubs)
        assert abs(elimination_log_z(model) - want) <= 1e-12 * max(1.0, abs(want)), (n_hubs, beta)


def test_registry_chooses_elimination_for_stars_and_hubs_with_fields():
    rng = np.random.default_rng(5)
    n = 20000
    for edges, n_hubs in ((star(n), 1), (hubs(n, 8), 8), (wheel(2000), None), (double_hub(n), 2)):
        m = max(max(e) for e in edges) + 1
        model = _model(m, edges, 0.7, rng)
        assert oracle_for(model) == "elimination"
        if n_hubs is not None:
            result = exact_log_z(model)
            assert result.method == "elimination"
            assert abs(result.log_z - hubs_closed_form(model, n_hubs)) <= 1e-12 * abs(result.log_z)
