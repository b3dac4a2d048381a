"""Exact log Z of a sparse model by tensor-network contraction (cotengra paths, numpy arrays).

Conventions as in :mod:`tasks.model`: H(s) = -(constant + sum_k w_k prod s_i), couplings in
energy units, log Z natural, at ``model.beta``.

The network: every spin is one hyper-index (shared by all tensors that touch it, summed once);
a pair coupling J is the 2 x 2 tensor exp(beta (J s s' - |J|)), a field h the vector
exp(beta (h s - |h|)), a k-spin term the 2^k tensor exp(beta (w prod s - |w|)) (k <= 12). Index
value 0 means s = +1, 1 means s = -1. The subtracted beta |w| go back into log Z, so every entry
is in (0, 1] and nothing overflows. The tensors are built as logs and contracted by
:func:`evaluators.oracles.contraction.log_contraction.contract_log`: in float64 with every intermediate
checked for underflow, and in logs where that check fails (cold), so the result is exact at
every beta. All entries are positive, so there is no cancellation. Spins in no term contribute
log 2 each. When every term has an even number of spins (no fields), Z is even under the global
flip, so one spin is fixed to +1 and log 2 added: half the work. Rank-one blocks are expanded
into their all-to-all couplings (``model.couplings``), whose width is about n, so they are only
practical for small n.

Paths ("auto"): cotengra's greedy path first (milliseconds; the Rust ``cotengrust`` version
when installed); when it would cost more than ``GREEDY_ENOUGH_FLOPS`` a hyper-optimised search
(:mod:`evaluators.oracles.contraction.path_search`: KaHyPar hypergraph partitions when ``kahypar`` is
installed, on both cores when it is long) runs until it has spent half as long as its best path
is predicted to take to contract (30 s at most), scoring paths by flops plus F x memory writes
(F and the prediction from the executor rates the caller gives, else those of the enclosing
``executor_rates.using`` scope, which a run opens with the rates it learned once and recorded:
:mod:`evaluators.oracles.contraction.executor_rates`), and its best two trees are refined by
subtree reconfiguration. Slicing keeps the largest intermediate within the memory budget (2^``max_width`` floats, 2^24 = 128 MiB by
default): the sliced indices are summed outside, at the price of some repeated work. The
contraction is our own executor (:mod:`evaluators.oracles.contraction.linear_contraction`: blocked permutes
of the 2 x ... x 2 axes, one BLAS thread, slices side by side in threads, each thread reusing its
buffers from slice to slice; see :mod:`evaluators.oracles.contraction.log_contraction` for the
cold route). A path whose cost exceeds ``MAX_FLOPS`` raises TooLarge. (cotengra's
``sort_contraction_indices`` measured no faster: 16.0 against 16.4 s CPU on a 1.1e11-flop path.)
Measured on 2 shared cores, P06 at beta = 1 (``evolve perf tn``): see docs/performance.md.
"""

from __future__ import annotations

import math
import warnings
from collections import OrderedDict
from dataclasses import dataclass

import cotengra as ctg
import numpy as np

from evaluators.oracles.base import NotApplicable, TooLarge
from evaluators.oracles.contraction.binary_permute import TILED, PermuteKernel
from evaluators.oracles.contraction.executor_rates import ExecutorRates, current, record_contraction
from evaluators.oracles.contraction.log_contraction import SLICE_WORKERS, contract_log
from evaluators.oracles.budget import affordable, remaining, total
from evaluators.oracles.contraction.path_search import (MAX_SEARCH_S, combo_cost, predicted_seconds, resliced, search_tree,
                                                        within_budget)
from tasks.model import IsingModel

# memory budget: largest intermediate 2^24 float64 = 128 MiB (a few live at once per slice worker). Slicing the
# spins of these networks costs almost nothing (P06 n = 250, seeds 1 and 5: 2^32 -> 2^26 for +0.3% flops, 2^26 ->
# 2^24 for +0.6%), while intermediates of 2^26 cost more to page in than to compute (see Buffers in
# linear_contraction): seed 5's tree took 101-117 s at 2^26 and 38-49 s at 2^24 with pooled buffers (load 3-5)
DEFAULT_MAX_WIDTH = 24
RANK_ONE_MAX_N = 52  # rank-one blocks of more spins: all-to-all couplings, contraction width about n
MAX_FLOPS = 1e12  # about a minute at the 1-2e10 flop/s the executor reaches on two cores here: beyond, TooLarge
# a greedy path this costly: TooLarge at once (the 32 x 32 triangular antiferromagnet's 1e22 took a 65 s search to be
# refused). Searches gain up to ~1e5: P06 n = 250's greedy paths, sliced to 2^24, cost 8e13 .. 3.7e16 (seeds 0-5), and
# every seed is searched within MAX_FLOPS
HOPELESS_FLOPS = 1e6 * MAX_FLOPS
GREEDY_ENOUGH_FLOPS = 1e8  # a greedy path this cheap contracts in well under a second: no search
SPLIT_FLOPS = 1e8  # a cheaper contraction is not worth splitting into slices for the threads
# greedy wider than the budget by more than this: TooLarge without a search. P06 n = 250 has greedy
# widths 35-43 (seeds 0-5) that searches bring to 31-32 unsliced in 18-58 s; n = 300 has 46-49
HOPELESS_GAP = 20
MAX_TERM_ORDER = 12  # a k-spin term becomes a 2^k tensor
_SPINS = np.array([1.0, -1.0])  # index value 0 -> s = +1, 1 -> s = -1


@dataclass(frozen=True)
class SpinNetwork:
    """A model as tensors: their index labels, their log weights, and the log of what was factored out."""

    inputs: list[tuple[str, ...]]
    arrays: list[np.ndarray]  # log weights, each tensor's largest 0
    log_offset: float  # beta * (constant + sum |w|) + (isolated spins) * log 2


def tensor_network_applies(model: IsingModel) -> str | None:
    """None when the model can be written as a network here (cheap: no path search)."""
    if model.max_order > MAX_TERM_ORDER:
        return f"a {model.max_order}-spin term would be a 2^{model.max_order} tensor (limit {MAX_TERM_ORDER})"
    if model.rank_one and model.n > RANK_ONE_MAX_N:
        return f"rank-one blocks couple all {model.n} spins to each other: contraction width about n"
    return None


def _term_tensor(order: int, beta_w: float) -> np.ndarray:
    """Log weights beta (w prod s - |w|) over the 2^order spin values."""
    prod = _SPINS
    for _ in range(order - 1):
        prod = np.multiply.outer(prod, _SPINS)
    return beta_w * prod - abs(beta_w)


def build_network(model: IsingModel) -> SpinNetwork:
    """The model's spins as a network of log-weight tensors (one per coupling term, one spin
    fixed by the global flip when the model allows it): NotApplicable when the oracle does not
    apply (:func:`tensor_network_applies`)."""
    reason = tensor_network_applies(model)
    if reason:
        raise NotApplicable(reason)
    beta = float(model.beta)
    sym = [ctg.get_symbol(i) for i in range(model.n)]
    inputs: list[tuple[str, ...]] = []
    arrays: list[np.ndarray] = []
    offset = beta * float(model.constant)
    edges, J = model.couplings
    if len(J):
        bj = beta * J
        diag, off = bj - np.abs(bj), -bj - np.abs(bj)
        mats = np.stack([np.stack([diag, off], -1), np.stack([off, diag], -1)], -2)  # (m, 2, 2)
        arrays += list(mats)
        inputs += [(sym[a], sym[b]) for a, b in edges.tolist()]
        offset += float(np.abs(bj).sum())
    h = model.fields
    for i in np.flatnonzero(h).tolist():
        bh = beta * h[i]
        arrays.append(bh * _SPINS - abs(bh))
        inputs.append((sym[i],))
        offset += abs(bh)
    for t, w in model.higher_order:
        if w == 0.0:
            continue
        arrays.append(_term_tensor(len(t), beta * w))
        inputs.append(tuple(sym[i] for i in t))
        offset += abs(beta * w)
    used = {ix for inp in inputs for ix in inp}
    offset += (model.n - len(used)) * math.log(2.0)
    if inputs and all(len(inp) % 2 == 0 for inp in inputs):
        inputs, arrays = _fix_one_spin(inputs, arrays)
        offset += math.log(2.0)
    return SpinNetwork(inputs, arrays, offset)


def _fix_one_spin(inputs, arrays):
    """Every term even in the spins: Z is invariant under flipping all of them, so Z = 2 Z(s = +1)
    for any one spin (taken where it removes most: the spin in most tensors)."""
    count: dict[str, int] = {}
    for inp in inputs:
        for ix in inp:
            count[ix] = count.get(ix, 0) + 1
    fixed = max(count, key=count.get)
    new_inputs, new_arrays = [], []
    for inp, arr in zip(inputs, arrays):
        if fixed in inp:
            axis = inp.index(fixed)
            arr = np.take(arr, 0, axis=axis)
            inp = inp[:axis] + inp[axis + 1:]
        new_inputs.append(inp)
        new_arrays.append(arr)
    return new_inputs, new_arrays


_TREE_CACHE: OrderedDict = OrderedDict()  # (network structure, optimize, max_width) -> tree; beta-independent
_TREE_CACHE_SIZE = 16


def _for_workers(tree):
    """A tree costing more than ``SPLIT_FLOPS`` with fewer slices than ``SLICE_WORKERS`` sliced
    into that many, so its slices contract side by side: P06 n = 200, 2.7e9 flops, one slice in
    1.6 s, two in 0.85 s for 0.1% more flops."""
    if tree.nslices >= SLICE_WORKERS or tree.contraction_cost() <= SPLIT_FLOPS:
        return tree
    return tree.slice(target_slices=SLICE_WORKERS)


def contraction_tree(net: SpinNetwork, optimize, max_width: float, rates: ExecutorRates | None = None,
                     cached: bool = True):
    """A contraction tree (cotengra) of ``net`` within the memory budget 2^max_width; with
    optimize="auto", greedy first and a search, scored by ``rates``, when greedy would be slow.
    Trees for string ``optimize`` are cached by network structure (and the rates they were
    searched by), so a model at another beta (or ``contraction_width`` followed by
    ``tensor_network_log_z``) reuses the path; ``cached=False`` neither reads nor fills the cache
    (a benchmark timing the search). ``rates``: None for those of the enclosing
    ``executor_rates.using`` scope. None when the network has no tensors."""
    rates = rates or current()
    if not net.inputs:
        return None
    shapes = [a.shape for a in net.arrays]
    key = (tuple(net.inputs), tuple(shapes), optimize, max_width, rates) if isinstance(optimize, str) and cached \
        else None
    if key is not None and key in _TREE_CACHE:
        _TREE_CACHE.move_to_end(key)
        return _TREE_CACHE[key]

    def tree_for(opt):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ctg.array_contract_tree(net.inputs, output=(), shapes=shapes, optimize=opt)
        if tree.contraction_width() > max_width + HOPELESS_GAP:
            raise TooLarge(f"contraction width {tree.contraction_width():.0f} on the {opt} path: beyond what "
                           f"slicing to 2^{max_width} or a path search can bring within reach")
        # an optimizer object's trials may have been sliced once (``path_search.hyper_optimizer``)
        return within_budget(tree, max_width) if isinstance(opt, str) else resliced(tree, max_width, rates)

    if optimize != "auto":
        tree = tree_for(optimize)
    else:
        tree = tree_for("greedy")
        if tree.contraction_cost() > HOPELESS_FLOPS:
            raise TooLarge(f"the greedy contraction path costs {tree.contraction_cost():.2e} operations (width "
                           f"{tree.contraction_width():.0f} sliced to 2^{max_width:g}): no path search brings that within "
                           f"{MAX_FLOPS:.0e} (searches gain up to ~1e5 here)")
        if tree.contraction_cost() > GREEDY_ENOUGH_FLOPS:
            left = remaining()
            hurried = left / 3.0 < MAX_SEARCH_S       # a budget that cuts the search short: not cached
            searched = search_tree(net.inputs, shapes, max_width, rates,
                                   hard_stop_s=left / 3.0 if hurried else None)
            key = None if hurried else key
            if combo_cost(searched, rates) < combo_cost(tree, rates):
                tree = searched
    tree = _for_workers(tree)
    if key is not None:
        _TREE_CACHE[key] = tree
        while len(_TREE_CACHE) > _TREE_CACHE_SIZE:
            _TREE_CACHE.popitem(last=False)
    return tree


def contraction_width(model: IsingModel, optimize="auto", max_width: float = DEFAULT_MAX_WIDTH,
                      rates: ExecutorRates | None = None) -> float:
    """log2 of the largest intermediate tensor on the path ``optimize`` finds, after slicing to
    the memory budget 2^max_width (0 for no tensors); ``rates`` as in :func:`tensor_network_log_z`."""
    net = build_network(model)
    tree = contraction_tree(net, optimize, max_width, rates)
    return 0.0 if tree is None else float(tree.contraction_width())


def contraction_cost(model: IsingModel, optimize="auto", max_width: float = DEFAULT_MAX_WIDTH,
                     rates: ExecutorRates | None = None) -> float:
    """Scalar operations of the contraction (all slices) on the path ``optimize`` finds."""
    net = build_network(model)
    tree = contraction_tree(net, optimize, max_width, rates)
    return 0.0 if tree is None else float(tree.contraction_cost())


def tensor_network_log_z(model: IsingModel, max_width: float = DEFAULT_MAX_WIDTH, optimize="auto",
                         max_flops: float = MAX_FLOPS, rates: ExecutorRates | None = None) -> float:
    """Natural log Z at model.beta by contracting the network.

    optimize: "auto" (greedy, and a hyper-optimised search when greedy would cost more than
    GREEDY_ENOUGH_FLOPS), or anything cotengra accepts ("greedy", an optimizer object, ...).
    max_width: memory budget, log2 of the largest intermediate (paths are sliced to fit).
    Raises TooLarge when the path costs more than ``max_flops`` scalar operations.
    rates: the executor's costs the search scores paths by and the budget prices the contraction
    at (None: those of the enclosing ``executor_rates.using`` scope, the run's recorded rates).
    """
    rates = rates or current()
    net = build_network(model)
    tree = contraction_tree(net, optimize, max_width, rates)
    if tree is None:
        return net.log_offset
    cost = float(tree.contraction_cost())
    if cost > max_flops:
        hurried = f"; the path search had a third of the call's {total():.0f} s budget" \
            if total() / 3.0 < MAX_SEARCH_S else ""
        raise TooLarge(f"the best contraction path found costs {cost:.2e} operations (> {max_flops:.1e}; "
                       f"width {tree.contraction_width():.0f}, {tree.nslices} slices{hurried})")
    predicted = predicted_seconds(cost, float(tree.total_write()), rates)
    affordable(predicted, f"contracting the best path found ({cost:.2e} operations)")
    return net.log_offset + contract_recorded(tree, net.arrays, predicted)


def contract_recorded(tree, log_arrays: list[np.ndarray], predicted_s: float | None = None,
                      permute: PermuteKernel = TILED) -> float:
    """:func:`contract_log` along ``tree``; the linear route's wall time (the log route is another
    executor) recorded in this machine's executor costs, which the path search learns from.
    ``predicted_s``: the linear route's predicted seconds (the log route refuses when several times
    that does not fit the call's budget); ``permute``: the linear route's copy kernel."""
    seconds: list[float] = []
    value = contract_log(tree, log_arrays, linear_seconds=seconds, linear_predicted_s=predicted_s, permute=permute)
    if seconds:
        record_contraction(float(tree.contraction_cost()), float(tree.total_write()), seconds[0])
    return value
