"""The tensor-network oracle's path search: in a process pool, serially where a pool cannot be had
or breaks, and the searched trees' contractions against the transfer matrix."""

import multiprocessing
import sys
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool

import networkx as nx
import numpy as np
import pytest

from evaluators.oracles.contraction import path_search as ps
from evaluators.oracles.contraction.executor_rates import ExecutorRates, current, using
from evaluators.oracles import tensor_network as tn
from evaluators.oracles.contraction.log_contraction import contract_log
from evaluators.oracles.transfer_matrix import transfer_matrix_log_z
from tasks.model import IsingModel


def _glass(n, seed, beta=1.0):
    rng = np.random.default_rng(seed)
    g = nx.random_regular_graph(3, n, seed=seed)
    edges = np.array(sorted(tuple(sorted(e)) for e in g.edges()))
    return IsingModel.from_arrays(n, beta, edges, rng.normal(size=len(edges)), rng.normal(scale=0.5, size=n))


#: an executor predicted to take a second per flop: every search runs to its trial limit
SLOW = ExecutorRates(1.0, 64.0)


def _searched_log_z(model, max_width=8, max_trials=10):
    net = tn.build_network(model)
    tree = ps.search_tree(net.inputs, [a.shape for a in net.arrays], max_width, current(), max_trials=max_trials)
    assert tree.contraction_width() <= max_width
    return net.log_offset + contract_log(tree, net.arrays)


@pytest.fixture
def eager_pool(monkeypatch):
    """Every search goes to the pool after two trials and runs 10 (the predicted contraction is
    made slow), and each pool made is recorded."""
    made = []
    make = ps._pool

    def recording(workers):
        pool = make(workers)
        made.append(pool)
        return pool

    monkeypatch.setattr(ps, "POOL_WORTH_S", 0.0)
    monkeypatch.setattr(ps, "PROBE_TRIALS", 2)
    monkeypatch.setattr(ps, "MAX_SEARCH_TRIALS", 10)
    monkeypatch.setattr(ps, "_pool", recording)
    with using(SLOW):       # the rates the oracle's searches are given, as a run gives its evaluators
        yield made


def test_search_in_the_pool_against_the_transfer_matrix(eager_pool):
    model = _glass(40, 1)
    assert abs(_searched_log_z(model) - transfer_matrix_log_z(model)) <= 1e-9 * abs(transfer_matrix_log_z(model))
    assert len(eager_pool) == 1 and eager_pool[0] is not None
    with pytest.raises(RuntimeError):  # shut down when the search ended: no processes left behind
        eager_pool[0].submit(abs, -1)


class _BrokenPool:
    _max_workers = 2

    def submit(self, *args, **kwargs):
        raise BrokenProcessPool("a worker died")

    def shutdown(self, **kwargs):
        pass


def test_a_broken_pool_falls_back_to_this_process(monkeypatch, eager_pool):
    monkeypatch.setattr(ps, "_pool", lambda workers: _BrokenPool())
    model = _glass(36, 2)
    assert abs(_searched_log_z(model) - transfer_matrix_log_z(model)) <= 1e-9 * abs(transfer_matrix_log_z(model))


def _search_in_child(queue):
    model = _glass(36, 3)
    queue.put((_searched_log_z(model), ps._pool(2)))


def test_a_daemonic_process_searches_without_a_pool(eager_pool):
    """Daemonic processes may not have children: the search runs in the process itself."""
    ctx = multiprocessing.get_context("fork")  # the monkeypatched module goes along
    queue = ctx.Queue()
    child = ctx.Process(target=_search_in_child, args=(queue,), daemon=True)
    child.start()
    value, pool = queue.get(timeout=120)
    child.join(timeout=30)
    assert child.exitcode == 0 and pool is None
    model = _glass(36, 3)
    assert abs(value - transfer_matrix_log_z(model)) <= 1e-9 * abs(transfer_matrix_log_z(model))


def test_auto_paths_search_when_greedy_is_costly(monkeypatch, eager_pool):
    """optimize="auto" with every greedy path deemed costly: searched (in the pool), reconfigured,
    sliced to the budget, and the same log Z at two betas from one search (the cached tree)."""
    monkeypatch.setattr(tn, "GREEDY_ENOUGH_FLOPS", 0.0)
    tn._TREE_CACHE.clear()
    base = _glass(44, 4)
    for beta in (0.3, 2.0):
        model = base.with_beta(beta)
        got = tn.tensor_network_log_z(model, max_width=7)
        assert abs(got - transfer_matrix_log_z(model)) <= 1e-9 * abs(transfer_matrix_log_z(model)), beta
    assert len(eager_pool) == 1
    assert tn.contraction_width(base, max_width=7) <= 7


def test_predicted_seconds_weighs_writes():
    costs = ExecutorRates(1e-10, 3e-8)
    assert ps.predicted_seconds(2e10, 0.0, costs) == pytest.approx(2.0)
    assert ps.predicted_seconds(1e10, 1e8 / 3, costs) == pytest.approx(2.0)
    assert ps.predicted_seconds(1e10, 0.0, ExecutorRates(1e-9, 1e-9)) == pytest.approx(10.0)


def _search_in_a_ray_worker():
    """Runs in a Ray worker: a search made to go to its pool, and whether it got one."""
    made = []
    make = ps._pool
    ps.POOL_WORTH_S, ps.PROBE_TRIALS, ps.MAX_SEARCH_TRIALS = 0.0, 2, 10
    ps._pool = lambda workers: made.append(make(workers)) or made[-1]
    with using(SLOW):
        return _searched_log_z(_glass(36, 6)), [pool is not None for pool in made]


@pytest.mark.slow
def test_the_search_gets_its_pool_inside_a_ray_worker():
    """Evaluators run in Ray workers (not daemonic): the spawned pool works there (Ray's start
    takes most of the 50-90 s this took on the loaded machine, hence slow)."""
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=1, include_dashboard=False, logging_level="ERROR")
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the tests are no package on the worker's path
    try:
        value, pools = ray.get(ray.remote(_search_in_a_ray_worker).remote(), timeout=240)
    finally:
        if started:
            ray.shutdown()
    assert pools == [True]
    ref = transfer_matrix_log_z(_glass(36, 6))
    assert abs(value - ref) <= 1e-9 * abs(ref)


def test_the_trial_pool_keeps_the_best_distinct_trees():
    """cotengra keeps one tree; the pool records the ``keep`` best by score, an equal score once."""
    trials = ps._TrialPool(keep=2)
    for score, name in ((5.0, "a"), (3.0, "b"), (3.0, "b again"), (4.0, "c"), (9.0, "d")):
        assert trials.submit(lambda s=score, t=name: {"score": s, "tree": t}).result()["tree"] == name
    assert [tree for _, _, tree in trials.best] == ["b", "c"]


def test_a_pending_trial_is_not_done_until_it_finishes():
    """The trial future waits briefly instead of spinning, and reports a pending trial as such."""
    seen = []
    pending = Future()
    future = ps._TrialFuture(pending, seen.append)
    assert not future.done()
    pending.set_result({"score": 1.0, "tree": "t"})
    assert future.done() and future.result()["tree"] == "t" and seen == [{"score": 1.0, "tree": "t"}]


def test_the_search_returns_the_best_of_its_refined_candidates(monkeypatch):
    """The best REFINE_CANDIDATES trees of the search are each refined, the cheapest refined one is
    returned, and its contraction gives the transfer matrix's log Z."""
    refined = []
    refine = ps.refined

    def recording(tree, max_width, costs=None):
        refined.append(refine(tree, max_width, costs))
        return refined[-1]

    monkeypatch.setattr(ps, "refined", recording)
    monkeypatch.setattr(ps, "MIN_TRIALS", 12)
    model = _glass(40, 7)
    net = tn.build_network(model)
    tree = ps.search_tree(net.inputs, [a.shape for a in net.arrays], 8, max_trials=12, workers=1)
    assert len(refined) == ps.REFINE_CANDIDATES
    assert ps.combo_cost(tree) == min(ps.combo_cost(t) for t in refined)
    assert tree.contraction_width() <= 8
    ref = transfer_matrix_log_z(model)
    assert abs(net.log_offset + contract_log(tree, net.arrays) - ref) <= 1e-9 * abs(ref)


def test_the_hard_cap_stops_a_search_its_prediction_would_let_run(monkeypatch):
    """With the contraction predicted to take ages (1 s a flop), only the cap stops the search:
    at MIN_TRIALS when the cap is 0, at max_trials without it."""
    monkeypatch.setattr(ps, "MIN_TRIALS", 3)
    monkeypatch.setattr(ps, "PROBE_TRIALS", 3)
    net = tn.build_network(_glass(30, 8))
    counted = []
    make = ps.hyper_optimizer
    monkeypatch.setattr(ps, "hyper_optimizer", lambda *a, **k: counted.append(make(*a, **k)) or counted[-1])
    for cap, trials in ((0.0, 3), (1e9, 9)):
        monkeypatch.setattr(ps, "MAX_SEARCH_S", cap)
        ps.search_tree(net.inputs, [a.shape for a in net.arrays], 8, SLOW, max_trials=9, workers=1)
        assert len(counted[-1].scores) == trials, cap


def test_trials_slice_once_and_the_candidates_are_resliced_no_worse():
    """A trial's tree is sliced once (``TRIAL_SLICE_REPEATS``); ``resliced`` picks the best of 16
    slicings: within the budget, never costlier, cheaper on a slicing chosen at random (a high
    temperature), and the same log Z as the transfer matrix."""
    assert ps.hyper_optimizer(8).slicing_opts == {"target_size": 2 ** 8, "max_repeats": ps.TRIAL_SLICE_REPEATS}
    model = _glass(60, 3)
    net = tn.build_network(model)
    tree = tn.contraction_tree(net, "greedy", 40)
    ref = transfer_matrix_log_z(model)
    cheaper = 0
    for seed in range(6):
        rough = tree.slice(target_size=2 ** 8, max_repeats=1, temperature=1.0, seed=seed)
        again = ps.resliced(rough, 8)
        assert again.contraction_width() <= 8 and ps.combo_cost(again) <= ps.combo_cost(rough)
        cheaper += ps.combo_cost(again) < ps.combo_cost(rough)
        assert abs(net.log_offset + contract_log(again, net.arrays) - ref) <= 1e-9 * abs(ref)
    assert cheaper >= 3, cheaper
    assert ps.resliced(tree, 40).nslices == 1  # within the budget: left unsliced
