"""The tensor-network oracle's path search: cotengra's HyperOptimizer, on every core when it is long.

The search stops once it has run about as long as its best tree would take to contract
(``predicted_seconds``: flops plus ``COMBO_FACTOR`` x entries written, at ``CONTRACT_RATE``), but
not before ``MIN_TRIALS`` trials, or after ``max_trials``. It starts in this process, one trial at
a time; when the first ``PROBE_TRIALS`` trials leave more than ``POOL_WORTH_S`` of search to go, it
goes on in a pool of ``SEARCH_WORKERS`` processes (spawned, so nothing of this process - Ray's
threads, BLAS's - is forked; shut down when the search ends), the same optimizer carrying its
hyper-parameter model across. The trials are independent, so two workers run twice the trials in
the same time. No pool where one cannot be had (a daemonic process may not have children) or when
it breaks: the search goes on here (as when a spawned worker cannot start: a script run as
``__main__`` without the ``if __name__ == "__main__"`` guard is re-run by spawned children, which
multiprocessing refuses).
"""

from __future__ import annotations

import multiprocessing
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import cotengra as ctg

SEARCH_WORKERS = 2  # processes the trials run in (the cores here)
COMBO_FACTOR = 64  # a written entry costs about as much as 64 flops in the executor (its blocked permutes)
SEARCH_MINIMIZE = f"combo-{COMBO_FACTOR}"  # paths scored by flops + COMBO_FACTOR x entries written
CONTRACT_RATE = 2e10  # flops + COMBO_FACTOR x writes per second of the executor with its two slice threads
MAX_SEARCH_TRIALS = 512
PROBE_TRIALS = 8  # trials run here before deciding whether the rest is worth a pool
MIN_TRIALS = 8  # whatever the first trials predict: P06 n = 200 stopped after a 2.3e10-flop first find when
# 2.5e9 was a few trials away (the prediction assumes an idle machine; on a loaded one contraction is slower).
# 16 cost n = 150 5 s of search at load 8 (0.3 s a trial) for a contraction of 0.05 s
POOL_WORTH_S = 12.0  # a search predicted to last longer goes to the pool (starting it: 0.5 s idle, seconds at load 8)
_CHUNK_PER_WORKER = 6  # trials per worker between two checks of the stopping rule


def predicted_seconds(flops: float, writes: float) -> float:
    """Seconds the executor is expected to take on a tree with these costs (all slices)."""
    return (flops + COMBO_FACTOR * writes) / CONTRACT_RATE


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


def hyper_optimizer(max_width: float, max_trials: int = MAX_SEARCH_TRIALS,
                    methods: tuple[str, ...] | None = None) -> ctg.HyperOptimizer:
    """A serial optimizer scored by ``SEARCH_MINIMIZE`` with every trial sliced to 2^max_width
    floats, stopping (used alone, as ``optimize=``) at best flops / (CONTRACT_RATE / 4) seconds
    or ``max_trials`` trials; :func:`search_tree` drives it by its own rule instead. No
    per-trial subtree reconfiguration (cotengra's default when no slicing options are given): it
    cost 1-2 s per trial at n = 200-250, 8x fewer trials, for no better best tree; the oracle
    refines the winner instead."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ctg.HyperOptimizer(methods=list(methods or _methods()), max_repeats=max_trials,
                                  max_time=f"rate:{CONTRACT_RATE / 4:g}", minimize=SEARCH_MINIMIZE, parallel=False,
                                  progbar=False, slicing_opts={"target_size": 2 ** int(max_width)})


def _best_seconds(opt: ctg.HyperOptimizer) -> float:
    tree = opt.tree
    return predicted_seconds(float(tree.contraction_cost()), float(tree.total_write()))


def _pool(workers: int) -> ProcessPoolExecutor | None:
    if workers < 2 or multiprocessing.current_process().daemon:
        return None
    try:
        return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    except (OSError, ValueError, RuntimeError):
        return None


def search_tree(inputs, shapes, max_width: float, max_trials: int | None = None,
                workers: int = SEARCH_WORKERS):
    """The best tree a hyper-optimised search finds for the network (``inputs``: index labels per
    tensor, ``shapes``: their shapes; scalar output), each trial sliced to 2^max_width floats, in at
    most ``max_trials`` trials (default ``MAX_SEARCH_TRIALS``)."""
    max_trials = max_trials or MAX_SEARCH_TRIALS
    opt = hyper_optimizer(max_width, max_trials)
    opt.max_time = None  # the stopping rule is ours, checked between rounds
    size_dict = {ix: d for inp, shape in zip(inputs, shapes) for ix, d in zip(inp, shape)}
    start = time.perf_counter()

    def run(trials: int):
        opt.max_repeats = min(trials, max_trials - len(opt.scores))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt.search(list(inputs), (), size_dict)

    def done() -> bool:
        if not opt.scores:
            return False
        if len(opt.scores) >= max_trials:
            return True
        return len(opt.scores) >= MIN_TRIALS and time.perf_counter() - start > _best_seconds(opt)

    while len(opt.scores) < PROBE_TRIALS and not done():
        run(1)
    pool = None if done() or _best_seconds(opt) - (time.perf_counter() - start) < POOL_WORTH_S else _pool(workers)
    try:
        if pool is not None:
            opt.parallel = pool
        while not done():
            run(_CHUNK_PER_WORKER * (workers if pool is not None else 1))
    except BrokenProcessPool:
        opt.parallel = False
        while not done():
            run(_CHUNK_PER_WORKER)
    finally:
        if pool is not None:
            opt.parallel = False
            pool.shutdown(cancel_futures=True)
    return opt.tree
