"""Exact log Z of a sparse model by tensor-network contraction (cotengra path, numpy arrays).

Conventions as in :mod:`tasks.model`: H(s) = -(constant + sum_k w_k prod s_i), couplings in
energy units, log Z natural, at ``model.beta``.

The network: every spin is one hyper-index (shared by all tensors that touch it, summed once);
a pair coupling J is the 2 x 2 tensor exp(beta (J s s' - |J|)), a field h the vector
exp(beta (h s - |h|)), a k-spin term the 2^k tensor exp(beta (w prod s - |w|)) (k <= 12). Index
value 0 means s = +1, 1 means s = -1. The subtracted beta |w| go back into log Z, so every entry
is in (0, 1] and nothing overflows at any beta; ``strip_exponent=True`` keeps the intermediates
in range. All entries are positive, so there is no cancellation. Spins in no term contribute
log 2 each. Rank-one blocks are expanded into their all-to-all couplings (``model.couplings``),
whose width is about n, so they are only practical for small n.

The cost is 2^width for the largest intermediate tensor; ``contraction_width`` reports it
(log2 of its size) and ``tensor_network_log_z`` raises TooLarge beyond ``max_width``. Paths:
cotengra's greedy path is milliseconds and good enough for random 3-regular graphs to about
n = 100-120; from n of about 120 (or when greedy is wider than 20) a HyperOptimizer search runs,
bounded by the cost of the path it finds (kahypar partitions when that package is installed).
Measured on 2 cores, P06 at beta = 1, no kahypar: n = 100 in 0.1 s (width 14-17), n = 150 in
0.5-2 s (21-22), n = 170-190 in 5-55 s (24-28), n = 200 mostly width 29-30 > 28 (TooLarge).
"""

from __future__ import annotations

import math
import warnings
from collections import OrderedDict
from dataclasses import dataclass

import cotengra as ctg
import numpy as np

from evaluators.oracles.base import NotApplicable, TooLarge
from tasks.model import IsingModel

DEFAULT_MAX_WIDTH = 28  # 2^28 float64 = 2 GiB per intermediate: about the limit here
MAX_TERM_ORDER = 12  # a k-spin term becomes a 2^k tensor
MAX_BETA_W = 350.0  # exp(-2 * 350) ~ 1e-304: the smallest tensor entry must stay a normal float64
HYPER_FROM_N = 120  # below this the greedy path is as good and costs milliseconds
HOPELESS_GAP = 8  # greedy wider than max_width by more than this: no search can bring it in
_SPINS = np.array([1.0, -1.0])  # index value 0 -> s = +1, 1 -> s = -1


@dataclass(frozen=True)
class _Network:
    inputs: list[tuple[str, ...]]
    arrays: list[np.ndarray]
    log_offset: float  # beta * (constant + sum |w|) + (isolated spins) * log 2


def tensor_network_applies(model: IsingModel) -> str | None:
    """None when the model can be written as a network here (cheap: no path search)."""
    if model.max_order > MAX_TERM_ORDER:
        return f"a {model.max_order}-spin term would be a 2^{model.max_order} tensor (limit {MAX_TERM_ORDER})"
    if model.rank_one and model.n > 2 * DEFAULT_MAX_WIDTH:
        return f"rank-one blocks couple all {model.n} spins to each other: contraction width about n"
    strongest = abs(model.beta) * max(float(np.abs(model.weights).max(initial=0.0)),
                                      max((abs(a) * float(np.max(np.abs(u))) ** 2 for u, a in model.rank_one), default=0.0))
    if strongest > MAX_BETA_W:
        return (f"beta * |w| = {strongest:.0f} > {MAX_BETA_W}: tensor entries exp(-2 beta |w|) would underflow "
                "float64, so low-energy states would be lost")
    return None


def _term_tensor(order: int, beta_w: float) -> np.ndarray:
    """exp(beta w (prod s - 1) * sign) over 2^order spin values: exp(beta (w prod s - |w|))."""
    prod = _SPINS
    for _ in range(order - 1):
        prod = np.multiply.outer(prod, _SPINS)
    return np.exp(beta_w * prod - abs(beta_w))


def _build(model: IsingModel) -> _Network:
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
        diag, off = np.exp(bj - np.abs(bj)), np.exp(-bj - np.abs(bj))
        mats = np.stack([np.stack([diag, off], -1), np.stack([off, diag], -1)], -2)  # (m, 2, 2)
        arrays += list(mats)
        inputs += [(sym[a], sym[b]) for a, b in edges.tolist()]
        offset += float(np.abs(bj).sum())
    h = model.fields
    for i in np.flatnonzero(h).tolist():
        bh = beta * h[i]
        arrays.append(np.exp(bh * _SPINS - abs(bh)))
        inputs.append((sym[i],))
        offset += abs(bh)
    for t, w in model.higher_order:
        if w == 0.0:
            continue
        arrays.append(_term_tensor(len(t), beta * w))
        inputs.append(tuple(sym[i] for i in t))
        offset += abs(beta * w)
    strengths = [abs(beta) * float(np.abs(J).max(initial=0.0)), abs(beta) * float(np.abs(h).max(initial=0.0))]
    strongest = max(strengths + [abs(beta * w) for _, w in model.higher_order])
    if not strongest <= MAX_BETA_W:  # merged repeated terms can exceed what applies() saw
        raise NotApplicable(f"beta * |w| = {strongest:.0f} > {MAX_BETA_W}: tensor entries would underflow float64")
    used = {ix for inp in inputs for ix in inp}
    offset += (model.n - len(used)) * math.log(2.0)
    return _Network(inputs, arrays, offset)


def _path_search_methods() -> tuple[str, ...]:
    """kahypar partitions give about 2 fewer width at n = 200 when installed; else cotengra's own."""
    try:
        import kahypar  # noqa: F401
    except ImportError:
        return ("random-greedy", "labels")
    return ("kahypar", "random-greedy")


def _hyper_optimizer() -> ctg.HyperOptimizer:
    """A path search that stops once it has run a quarter of the time its best path would take to
    contract (at about 1e9 flops/s), or after 128 trials: cheap where the contraction is cheap."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ctg.HyperOptimizer(methods=_path_search_methods(), max_repeats=128, max_time="rate:4e9",
                                  minimize="combo", optlib="sses", parallel=False, progbar=False,
                                  reconf_opts={"subtree_size": 4, "maxiter": "auto", "maxiter_auto_cap": 128})


_TREE_CACHE: OrderedDict = OrderedDict()  # (network structure, optimize) -> tree; beta-independent
_TREE_CACHE_SIZE = 16


def _tree(net: _Network, n: int, optimize, max_width: float):
    """A contraction tree; with optimize="auto", greedy first and a search when it matters.
    Trees for string ``optimize`` are cached by network structure, so a model at another beta
    (or ``contraction_width`` followed by ``tensor_network_log_z``) reuses the path."""
    if not net.inputs:
        return None
    shapes = [a.shape for a in net.arrays]
    key = (tuple(net.inputs), tuple(shapes), optimize, max_width) if isinstance(optimize, str) else None
    if key is not None and key in _TREE_CACHE:
        _TREE_CACHE.move_to_end(key)
        return _TREE_CACHE[key]

    def tree_for(opt):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ctg.array_contract_tree(net.inputs, output=(), shapes=shapes, optimize=opt)

    if optimize != "auto":
        tree = tree_for(optimize)
    else:
        tree = tree_for("greedy")
        width = tree.contraction_width()
        worth_it = width <= max_width + HOPELESS_GAP  # searches gain 2-6 over greedy, not more
        if worth_it and (n >= HYPER_FROM_N or width > min(max_width, 20)):
            searched = tree_for(_hyper_optimizer())
            if searched.contraction_width() < tree.contraction_width():
                tree = searched
    if key is not None:
        _TREE_CACHE[key] = tree
        while len(_TREE_CACHE) > _TREE_CACHE_SIZE:
            _TREE_CACHE.popitem(last=False)
    return tree


def contraction_width(model: IsingModel, optimize="auto", max_width: float = DEFAULT_MAX_WIDTH) -> float:
    """log2 of the largest intermediate tensor on the path ``optimize`` finds (0 for no tensors)."""
    net = _build(model)
    tree = _tree(net, model.n, optimize, max_width)
    return 0.0 if tree is None else float(tree.contraction_width())


def tensor_network_log_z(model: IsingModel, max_width: float = DEFAULT_MAX_WIDTH, optimize="auto") -> float:
    """Natural log Z at model.beta by contracting the network.

    optimize: "auto" (greedy below n = HYPER_FROM_N and when greedy is narrow enough, else a
    HyperOptimizer search), or anything cotengra accepts ("greedy", an optimizer object, ...).
    Raises TooLarge when the path's width exceeds ``max_width`` (log2 of the largest tensor).
    """
    net = _build(model)
    tree = _tree(net, model.n, optimize, max_width)
    if tree is None:
        return net.log_offset
    width = float(tree.contraction_width())
    if width > max_width:
        raise TooLarge(f"contraction width {width:.1f} exceeds max_width {max_width} (2^width floats per tensor)")
    mantissa, exponent10 = tree.contract(net.arrays, strip_exponent=True)
    mantissa = float(np.asarray(mantissa))
    if not mantissa > 0.0:
        raise ArithmeticError(f"contraction gave a non-positive mantissa {mantissa}")
    return net.log_offset + math.log(mantissa) + float(exponent10) * math.log(10.0)
