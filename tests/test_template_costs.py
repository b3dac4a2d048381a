"""The structural templates' own bookkeeping: near-linear work, the same values, honest claims.

The elimination orders of ``tensor_contraction`` come from a heap with lazy updates and its
bucket pass indexes each factor by its first-eliminated spin; ``row_transfer``'s "column_major"
is the lattice's column order only on a lattice. Work is counted (list reads, membership tests),
never timed; values are checked against enumeration and closed forms at hot and cold beta; each
plan's claim is checked against the width of the order it actually uses.
"""

import numpy as np
import pytest
from numpy._core import einsumfunc

from evaluators.oracles.naive import naive_log_z
from search.structural import StructuralProposer
from search.structural.proposer import make_plan
from search.structural.readers import normal_form, read
from search.structural.templates import elimination_order, row_transfer, tensor_contraction
from tasks.model import IsingModel
from tasks.registry import get_task

PROPOSER = StructuralProposer(seed=0)
TC_ORDERS = tensor_contraction.OPTION_SPACE["order"]
RT_ORDERS = row_transfer.OPTION_SPACE["order"]


class CountingList(list):
    """A list that counts element reads."""

    reads = 0

    def __getitem__(self, i):
        CountingList.reads += 1
        return super().__getitem__(i)


class CountingSpins(tuple):
    """A factor's spin tuple that counts how often it is scanned or searched."""

    touches = 0

    def __iter__(self):
        CountingSpins.touches += 1
        return super().__iter__()

    def __contains__(self, x):
        CountingSpins.touches += 1
        return super().__contains__(x)


def _chain(n):
    return np.stack([np.arange(n - 1), np.arange(1, n)], 1).astype(np.int64)


def _open_chain_log_z(beta, J):
    """Zero-field open chain: Z = 2 prod_i 2 cosh(beta J_i), in logs (stable at any beta)."""
    x = np.abs(beta * np.asarray(J))
    return np.log(2.0) + float(np.sum(x + np.log1p(np.exp(-2.0 * x))))


@pytest.mark.parametrize("how", ["min_fill", "min_degree"])
def test_greedy_order_on_a_chain_of_20000_spins_is_width_one_in_linear_work(how):
    n = 20000
    nbrs = [set() for _ in range(n)]
    for a, b in _chain(n).tolist():
        nbrs[a].add(b)
        nbrs[b].add(a)
    tie = CountingList(range(n))
    CountingList.reads = 0
    order, width = elimination_order._greedy_order(n, nbrs, how, tie)
    assert width == 1 and sorted(order) == list(range(n))
    # one key per spin plus one per neighbour of each eliminated spin; a scan of every remaining
    # spin per step (the old min over them) would read the tie-break n^2 / 2 = 2e8 times
    assert CountingList.reads <= 4 * n, CountingList.reads


def test_bucket_pass_touches_each_factor_a_bounded_number_of_times():
    n = 5000
    edges = _chain(n)
    rng = np.random.default_rng(0)
    J, h = rng.normal(size=n - 1), rng.normal(size=n)
    stacked = tensor_contraction._factor_tables(edges, J, h, 0.7)
    scopes, tables, lows = tensor_contraction._oriented(edges, list(range(n)), stacked)
    scopes = [CountingSpins(sc) for sc in scopes]
    CountingSpins.touches = 0
    got = tensor_contraction._buckets(tables, lows, elimination_order._bucket_plan(scopes, n), stacked[3], False)
    # placing a factor, collecting its bucket's spins, its einsum operand: a few touches each;
    # rescanning every factor at every spin (an old pass) would be ~ n * m = 4e7
    assert CountingSpins.touches <= 8 * len(scopes), CountingSpins.touches
    ref = tensor_contraction._method_log_z(edges, J, h, [], None, 0.7, n, {"order": "natural"})
    assert got == pytest.approx(ref, rel=1e-12)


def test_greedy_restarts_stop_at_width_one_and_small_buckets_search_no_path(monkeypatch):
    """A width-1 order cannot be beaten, so a chain's order is searched once (a grid's four
    times); buckets over few spins are summed by one direct einsum, no path search (einsum_path
    was two thirds of a chain's bucket pass)."""
    runs = []
    real = elimination_order._greedy_order
    monkeypatch.setattr(elimination_order, "_greedy_order", lambda *a: runs.append(1) or real(*a))
    elimination_order._elimination_order(3000, _chain(3000), "min_degree")
    assert len(runs) == 1
    idx = np.arange(36).reshape(6, 6)
    grid = np.concatenate([np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
                           np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1)])
    runs.clear()
    elimination_order._elimination_order(36, grid, "min_fill")
    assert len(runs) == 4
    paths = []
    real_path = einsumfunc.einsum_path          # what numpy.einsum(..., optimize=...) calls
    monkeypatch.setattr(einsumfunc, "einsum_path", lambda *a, **k: paths.append(1) or real_path(*a, **k))
    n = 400
    J = np.random.default_rng(1).normal(size=n - 1)
    got = tensor_contraction._method_log_z(_chain(n), J, np.zeros(n), [], None, 0.9, n, {"order": "natural"})
    assert not paths
    assert got == pytest.approx(_open_chain_log_z(0.9, J), rel=1e-12)


def test_dry_run_width_equals_the_greedy_width():
    rng = np.random.default_rng(4)
    for _ in range(30):
        n = int(rng.integers(5, 60))
        e = rng.integers(0, n, size=(int(rng.integers(n, 3 * n)), 2))
        e = e[e[:, 0] != e[:, 1]]
        edges, _ = tensor_contraction._merged_couplings(e, np.ones(len(e)), [], n)
        nbrs = [set() for _ in range(n)]
        for a, b in edges.tolist():
            nbrs[a].add(b)
            nbrs[b].add(a)
        order, width = elimination_order._greedy_order(n, nbrs, "min_fill", list(range(n)))
        assert elimination_order._widest_factor([set(x) for x in edges.tolist()], order) == width


def test_capped_greedy_order_refuses_a_wide_grid_early():
    L = 40                                     # treewidth 40 > MAX_FACTOR_SPINS = 26
    idx = np.arange(L * L).reshape(L, L)
    edges = np.concatenate([np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
                            np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1)])
    order = elimination_order._elimination_order(L * L, edges, "min_fill", cap=tensor_contraction.MAX_FACTOR_SPINS)
    assert len(order) < L * L
    with pytest.raises(MemoryError):
        tensor_contraction._method_log_z(edges, np.ones(len(edges)), np.zeros(L * L), [], None, 1.0, L * L, {})


@pytest.mark.parametrize("scale", [0.05, 1.0, 50.0], ids=["hot", "beta|J|=1", "cold_beta|J|=50"])
def test_every_order_is_exact_against_enumeration(scale):
    rng = np.random.default_rng(11)
    for trial in range(25):
        n = int(rng.integers(2, 15))
        e = rng.integers(0, n, size=(int(rng.integers(0, 3 * n)), 2))
        e = e[e[:, 0] != e[:, 1]]
        J = rng.choice([-1.0, 1.0], size=len(e)) * rng.uniform(0.5, 1.0, size=len(e))
        h = rng.normal(size=n) * (trial % 2)
        ref = naive_log_z(IsingModel.from_arrays(n, scale, e, J, h))
        for how in TC_ORDERS:
            got = tensor_contraction._method_log_z(e, J, h, [], None, scale, n, {"order": how, "engine": "bucket"})
            assert got == pytest.approx(ref, rel=1e-10, abs=1e-9), ("tensor", how, trial)
        for how in RT_ORDERS:
            got = row_transfer._method_log_z(e, J, h, [], None, scale, n, {"order": how})
            assert got == pytest.approx(ref, rel=1e-10, abs=1e-9), ("row", how, trial)


@pytest.mark.parametrize("beta", [0.05, 1.0, 50.0])
def test_long_chain_matches_the_closed_form_for_every_order(beta):
    n = 2000
    rng = np.random.default_rng(2)
    J = rng.choice([-1.0, 1.0], size=n - 1)
    edges, h = _chain(n), np.zeros(n)
    ref = _open_chain_log_z(beta, J)
    for how in TC_ORDERS:
        got = tensor_contraction._method_log_z(edges, J, h, [], None, beta, n, {"order": how})
        assert got == pytest.approx(ref, rel=1e-12), how
    for how in RT_ORDERS:
        got = row_transfer._method_log_z(edges, J, h, [], None, beta, n, {"order": how})
        assert got == pytest.approx(ref, rel=1e-12), how


def test_column_major_is_the_lattice_column_order_only_on_a_lattice():
    L = 6
    idx = np.arange(L * L).reshape(L, L)
    grid = np.concatenate([np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
                           np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1)])
    assert row_transfer._lattice_side(L * L, grid) == L
    assert list(row_transfer._sweep_order(L * L, grid, "column_major")) == list(idx.T.ravel())
    chain = _chain(10000)                                   # n = 100^2, but not a lattice
    assert row_transfer._lattice_side(10000, chain) == 0
    order = row_transfer._sweep_order(10000, chain, "column_major")
    assert row_transfer._frontier_width(10000, chain, order) == 1


def _claimed_width(claims, factor_spins=False):
    """The width a bounded ("O(n)") claim states: row_transfer's 'a frontier of at most W spins',
    tensor_contraction's 'every intermediate factor over at most W + 1 spins'."""
    stated = int(claims.justification.split("at most ")[1].split()[0])
    return stated - 1 if factor_spins else stated


def _reader_edges(task, n):
    out = read(task, task.probe_params(n, 0, 0), n)
    return normal_form(n, out[0], out[1], out[2], [])[0], out[4]


@pytest.mark.parametrize("task_id, n", [("P01", 100000), ("T08", 3000)])
def test_bounded_claims_hold_on_the_ladder(task_id, n):
    """A plan that claims O(n) keeps the width it states on a ladder model (P01: ten times beyond
    the sizes the claim measured); a plan that does not, really grows."""
    task = get_task(task_id)
    view = PROPOSER.view(task)
    edges, positions = _reader_edges(task, n)
    for how in RT_ORDERS:
        claims = make_plan(view, "row_transfer", {"order": how}).claims
        frontier = row_transfer._frontier_width(n, edges, row_transfer._sweep_order(n, edges, how, positions))
        if claims.complexity_O == "O(n)":
            assert frontier <= _claimed_width(claims), (how, frontier, claims.justification)
        else:
            assert claims.tractable_class == "no_efficient_known" and frontier > 100, (how, frontier)
    for how in TC_ORDERS:
        if n > 20000 and how in ("min_fill", "min_degree"):
            continue                                        # seconds of greedy search at n = 10^5
        claims = make_plan(view, "tensor_contraction", {"order": how}).claims
        order = elimination_order._elimination_order(n, edges, how, cap=tensor_contraction.MAX_FACTOR_SPINS)
        width = (elimination_order._widest_factor([set(x) for x in edges.tolist()], order) if len(order) == n
                 else tensor_contraction.MAX_FACTOR_SPINS + 1)
        if claims.complexity_O == "O(n)":
            assert width <= _claimed_width(claims, factor_spins=True), (how, width, claims.justification)
        else:
            assert claims.tractable_class == "no_efficient_known" and width > 26, (how, width)


def test_p01_every_order_claims_linear_and_p04_no_elimination_claims_linear():
    p01, p04 = PROPOSER.view(get_task("P01")), PROPOSER.view(get_task("P04"))
    for how in RT_ORDERS:
        assert make_plan(p01, "row_transfer", {"order": how}).claims.complexity_O == "O(n)"
    for how in TC_ORDERS:
        assert make_plan(p01, "tensor_contraction", {"order": how}).claims.complexity_O == "O(n)"
        # the greedy orders pass MAX_FACTOR_SPINS by n = 1024: a capped width is never read as bounded
        assert make_plan(p04, "tensor_contraction", {"order": how}).claims.complexity_O == "O(L^2 2^(L))", how


def test_row_transfer_refuses_a_wide_frontier_before_any_work():
    """A 32 x 32 grid's sweeps leave a frontier of 32 > MAX_FRONTIER spins: refused from the order's
    frontier alone (the sweep used to fill 2^27 states, seconds of work, before refusing)."""
    L = 32
    idx = np.arange(L * L).reshape(L, L)
    edges = np.concatenate([np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
                            np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1)])
    calls = []

    def sweep(*args):
        calls.append(args)
        raise AssertionError("the sweep ran")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(row_transfer, "_sweep", sweep)
        for how in RT_ORDERS:
            with pytest.raises(MemoryError):
                row_transfer._method_log_z(edges, np.ones(len(edges)), np.zeros(L * L), [], None, 1.0, L * L,
                                           {"order": how})
    assert calls == []
