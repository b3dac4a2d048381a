"""The tensor-network oracle's path search: cotengra's HyperOptimizer, on every core when it is long,
and the best few trees it found refined by subtree reconfiguration.

Trees are scored by flops plus F x entries written, and the search stops once it has run
``SEARCH_FRACTION`` of the time its best tree is predicted to take to contract
(``predicted_seconds``), both by the executor rates the caller passes (``costs``: this machine's,
learned from the oracle's own contractions and recorded by the run that uses them,
:mod:`evaluators.oracles.contraction.executor_rates`; ``DEFAULT_RATES`` when none are given: this
module never reads a machine's records or a setting of its own), but not before
``MIN_TRIALS`` trials, and at the latest after ``MAX_SEARCH_S`` seconds or ``max_trials`` trials. Why a fraction: if the best tree's contraction time C falls with
the search time S as S^-a, search plus contraction is least at S = a C; on P06 n = 250 seed 1 three
times the trials (48 -> 150) halved the best cost (a ~ 0.6), seed 5 sits near its floor after a
few dozen (a ~ 0). It starts in this
process, one trial at a time; when the first ``PROBE_TRIALS`` trials leave more than
``POOL_WORTH_S`` of search to go, it goes on in a pool of ``SEARCH_WORKERS`` processes (spawned, so
nothing of this process - Ray's threads, BLAS's - is forked; shut down when the search ends), the
same optimizer carrying its hyper-parameter model across. The trials are independent, so two
workers run twice the trials in the same time. No pool where one cannot be had (a daemonic
process may not have children) or when it breaks: the search goes on here (as when a spawned
worker cannot start: a script run as ``__main__`` without the ``if __name__ == "__main__"`` guard
is re-run by spawned children, which multiprocessing refuses).

The trials go through :class:`_TrialPool` (cotengra's ``parallel=`` accepts any executor): it keeps
the ``REFINE_CANDIDATES`` best distinct trees (cotengra keeps one), which are refined at the end,
side by side in the pool when there is one, and the best refined tree is the answer. A trial's
tree is sliced to the memory budget once (``TRIAL_SLICE_REPEATS``: cotengra's best of 16 took as
long as building the tree); the candidates are sliced again, the best of 16, before refinement.
"""

from __future__ import annotations

import itertools
import multiprocessing
import time
import warnings
from concurrent.futures import Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

import cotengra as ctg

from evaluators.oracles.contraction.executor_rates import DEFAULT_RATES, ExecutorRates

SEARCH_WORKERS = 2  # processes the trials run in (the cores here)
MAX_SEARCH_TRIALS = 512
PROBE_TRIALS = 8  # trials run here before deciding whether the rest is worth a pool
MIN_TRIALS = 8  # whatever the first trials predict: P06 n = 200 stopped after a 2.3e10-flop first find when
# 2.5e9 was a few trials away (the prediction assumes an idle machine; on a loaded one contraction is slower).
# 16 cost n = 150 5 s of search at load 8 (0.3 s a trial) for a contraction of 0.05 s
SEARCH_FRACTION = 0.5  # stop at this fraction of the best tree's predicted contraction time (module docstring)
MAX_SEARCH_S = 30.0  # a hard cap: what a contraction of 1e12 flops (MAX_FLOPS, ~50-100 s) is worth at that fraction
REFINE_CANDIDATES = 2  # best distinct trees refined at the end: one per pool worker
# a trial's tree is sliced to the budget once (cotengra's default: the best of 16 randomised slicings). At
# P06 n = 250 the 16 took 0.12-0.37 s a trial, as long as building the tree (0.1-0.5 s); one slicing costs
# 0.02 s and 0-10% more than the best of 16, the same for every trial, so it ranks trials as well. The
# candidates kept for refinement are sliced again with the 16 (``resliced``)
TRIAL_SLICE_REPEATS = 1
CANDIDATE_SLICE_REPEATS = 16
POOL_WORTH_S = 12.0  # a search predicted to last longer goes to the pool (starting it: 0.5 s idle, seconds at load 8)
_CHUNK_PER_WORKER = 6  # trials per worker between two checks of the stopping rule
_WAIT_S = 0.005  # how long a look at an unfinished trial blocks (cotengra's own loop spins)


def predicted_seconds(flops: float, writes: float, costs: ExecutorRates = DEFAULT_RATES) -> float:
    """Seconds the executor is expected to take on a tree with these costs (all slices)."""
    return costs.predicted_seconds(flops, writes)


def _methods() -> list[str]:
    """KaHyPar partitions give far cheaper paths on expanders (random regular graphs): measured at
    P06 n = 200, 8 s of search, the agglomerative driver ran 37-59 trials and found 2-4e9 flops,
    the recursive one 5-8 trials and 3e9-2.5e10. Without the package, cotengra's greedy and
    label-propagation drivers."""
    try:
        import kahypar  # noqa: F401  (an optional dependency: only whether it imports matters)
    except ImportError:
        return ["random-greedy", "labels"]
    return ["kahypar-agglom"]


def hyper_optimizer(max_width: float, costs: ExecutorRates = DEFAULT_RATES, max_trials: int = MAX_SEARCH_TRIALS,
                    methods: tuple[str, ...] | None = None) -> ctg.HyperOptimizer:
    """A serial optimizer scored by ``costs.minimize`` with every trial
    sliced to 2^max_width floats (one slicing, ``TRIAL_SLICE_REPEATS``), stopping (used alone, as
    ``optimize=``) after four times its best tree's predicted seconds of flops (cotengra's
    ``rate:`` counts flops alone) or ``max_trials`` trials; :func:`search_tree` drives it by its
    own rule instead. No
    per-trial subtree reconfiguration (cotengra's default when no slicing options are given): it
    cost 1-2 s per trial at n = 200-250, 8x fewer trials, for no better best tree; the search
    refines its best few trees instead."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ctg.HyperOptimizer(methods=list(methods or _methods()), max_repeats=max_trials,
                                  max_time=f"rate:{costs.flops_per_second / 4:g}", minimize=costs.minimize,
                                  parallel=False,
                                  progbar=False, slicing_opts={"target_size": 2 ** int(max_width),
                                                               "max_repeats": TRIAL_SLICE_REPEATS})


def combo_cost(tree, costs: ExecutorRates = DEFAULT_RATES) -> float:
    """The search's score of a tree: flops + F x entries written (F: ``costs``' combo factor)."""
    return float(tree.combo_cost(factor=costs.combo_factor))


def within_budget(tree, max_width: float):
    """The tree sliced (sliced indices summed outside the contraction) until its largest
    intermediate has at most 2^max_width entries; unchanged when it already fits."""
    if tree.contraction_width() <= max_width:
        return tree
    return tree.slice(target_size=2 ** int(max_width))


def resliced(tree, max_width: float, costs: ExecutorRates = DEFAULT_RATES):
    """The tree with its slicing chosen again, as the best of ``CANDIDATE_SLICE_REPEATS`` randomised
    slicings to 2^max_width floats (a search trial's tree was sliced once), when that lowers its
    cost (by ``costs``)."""
    tree = within_budget(tree, max_width)
    if not tree.sliced_inds:
        return tree
    again = tree.slice(target_size=2 ** int(max_width), max_repeats=CANDIDATE_SLICE_REPEATS, reslice=True)
    return again if combo_cost(again, costs) < combo_cost(tree, costs) else tree


def refined(tree, max_width: float, costs: ExecutorRates = DEFAULT_RATES):
    """The tree resliced (:func:`resliced`) and after cotengra's subtree reconfiguration (each
    subtree of up to 8 tensors re-pathed optimally, slices kept), within the budget, when that
    lowers its cost (0.6-3.6 s a tree at P06 n = 250), both scored by ``costs`` (passed to a pool
    worker with the tree)."""
    tree = resliced(tree, max_width, costs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        better = within_budget(tree.subtree_reconfigure(minimize=costs.minimize), max_width)
    return better if combo_cost(better, costs) < combo_cost(tree, costs) else tree


class _TrialFuture:
    """A trial's future for cotengra's loop, which asks ``done()`` of each pending trial in turn and
    sleeps 1 us between rounds: here ``done()`` blocks up to ``_WAIT_S`` instead (the loop cost the
    parent 7 s of CPU in a 26 s search on two workers, measured), and each result is shown to the
    pool's record of the best trees."""

    def __init__(self, future: Future, record) -> None:
        self._future, self._record = future, record

    def done(self) -> bool:
        wait([self._future], timeout=_WAIT_S)
        return self._future.done()

    def result(self):
        trial = self._future.result()
        self._record(trial)
        return trial

    def cancel(self) -> bool:
        return self._future.cancel()


class _TrialPool:
    """The executor the optimizer's trials go to: ``pool``'s processes, or this process when None
    (each trial run as it is submitted). Keeps the ``keep`` best distinct trees seen (by score)."""

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self.best: list[tuple[float, int, object]] = []  # (score, arrival, tree), best first
        self._arrival = itertools.count()
        self.use(None)

    def use(self, pool: ProcessPoolExecutor | None) -> None:
        """Trials from now on run in ``pool`` (None: here)."""
        self.pool = pool
        self._max_workers = pool._max_workers if pool is not None else 1  # read by cotengra for its pre-dispatch

    def submit(self, fn, *args, **kwargs) -> _TrialFuture:
        if self.pool is not None:
            return _TrialFuture(self.pool.submit(fn, *args, **kwargs), self._record)
        future = Future()
        future.set_result(fn(*args, **kwargs))
        return _TrialFuture(future, self._record)

    def _record(self, trial) -> None:
        score, tree = trial.get("score"), trial.get("tree")
        if tree is None or score is None or any(score == s for s, _, _ in self.best):  # equal scores: the same tree
            return
        self.best = sorted(self.best + [(score, next(self._arrival), tree)], key=lambda t: t[:2])[:self._keep]


def _pool(workers: int) -> ProcessPoolExecutor | None:
    if workers < 2 or multiprocessing.current_process().daemon:
        return None
    try:
        return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    except (OSError, ValueError, RuntimeError):
        return None


def _run_in(opt: ctg.HyperOptimizer, trials: _TrialPool, pool: ProcessPoolExecutor | None) -> None:
    trials.use(pool)
    opt.parallel = trials
    if pool is None:
        opt.pre_dispatch = 1  # one trial asked of the sampler at a time, as in a serial search


def _refine_all(trees: list, max_width: float, pool: ProcessPoolExecutor | None, costs: ExecutorRates) -> list:
    if pool is not None:
        try:
            return list(pool.map(refined, trees, [max_width] * len(trees), [costs] * len(trees)))
        except BrokenProcessPool:
            pass
    return [refined(tree, max_width, costs) for tree in trees]


def search_tree(inputs, shapes, max_width: float, costs: ExecutorRates = DEFAULT_RATES, max_trials: int | None = None,
                workers: int = SEARCH_WORKERS, hard_stop_s: float | None = None):
    """The best tree a hyper-optimised search finds for the network (``inputs``: index labels per
    tensor, ``shapes``: their shapes; scalar output), within the budget of 2^max_width floats per
    intermediate (sliced), in at most ``max_trials`` trials (default ``MAX_SEARCH_TRIALS``), its
    best ``REFINE_CANDIDATES`` trees refined (:func:`refined`) and the best of those returned.
    ``hard_stop_s``: from a caller's time budget, the search stops after this many seconds whatever
    its trials (the first trial always completes) and its trees are not refined."""
    max_trials = max_trials or MAX_SEARCH_TRIALS
    opt = hyper_optimizer(max_width, costs, max_trials)   # the whole search scores and stops by the same figures
    opt.max_time = None  # the stopping rule is ours, checked between rounds
    size_dict = {ix: d for inp, shape in zip(inputs, shapes) for ix, d in zip(inp, shape)}
    start = time.perf_counter()
    trials = _TrialPool(REFINE_CANDIDATES)
    _run_in(opt, trials, None)

    def run(count: int):
        opt.max_repeats = min(count, max_trials - len(opt.scores))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt.search(list(inputs), (), size_dict)

    def left_s() -> float:  # search time the stopping rule still allows
        tree = opt.tree
        allowed = SEARCH_FRACTION * predicted_seconds(float(tree.contraction_cost()), float(tree.total_write()), costs)
        return min(allowed, MAX_SEARCH_S) - (time.perf_counter() - start)

    def late() -> bool:  # past the caller's hard stop (a time budget): no more trials, no refinement
        return hard_stop_s is not None and time.perf_counter() - start >= hard_stop_s

    def done() -> bool:
        if not opt.scores:
            return False
        if len(opt.scores) >= max_trials or late():
            return True
        return len(opt.scores) >= MIN_TRIALS and left_s() < 0

    while len(opt.scores) < PROBE_TRIALS and not done():
        run(1)
    pool = None if done() or left_s() < POOL_WORTH_S else _pool(workers)
    try:
        _run_in(opt, trials, pool)
        try:
            while not done():
                run(_CHUNK_PER_WORKER * (workers if pool is not None else 1))
        except BrokenProcessPool:
            _run_in(opt, trials, None)
            while not done():
                run(_CHUNK_PER_WORKER)
        best = [tree for _, _, tree in trials.best] or [opt.tree]
        candidates = best if late() else _refine_all(best, max_width, trials.pool, costs)
    finally:
        opt.parallel = False
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return min(candidates, key=lambda tree: combo_cost(tree, costs))
