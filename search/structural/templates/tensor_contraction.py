"""Tensor-network contraction: bucket (variable) elimination, or one numpy.einsum call.

Each coupling is a 2 x 2 factor exp(beta J s s' - beta |J|), each field a 2-vector
exp(beta h s - beta |h|) (offsets added back to log Z); spin i is the index shared by its factors.
``bucket``: spins are summed out one at a time along an elimination order (greedy min-fill or
min-degree, the narrowest of four seeded tie-breaks; natural; reverse Cuthill-McKee); the factors
holding the spin are multiplied and the spin summed out straight onto their other spins (no
intermediate beyond 2^w: one direct einsum on a bucket of at most SMALL_BUCKET_SPINS spins, one
``numpy.einsum(..., optimize="greedy")`` per value of the spin on a wider one), factors rescaled
to max 1 when bounds carried with them say a product could leave the float range. Which factors meet in which bucket depends on the order alone: one symbolic
pass (``_bucket_plan``, on spins relabelled by elimination position) settles it and the widest
factor before any arithmetic, and the linear and log-weight passes follow it (per-spin Python
overhead is what a chain of 10^5 spins pays for).
Cost O(n 2^w) for the induced width w of the order: polynomial for bounded treewidth, exponential
in sqrt(n) on grids, exponential in n on expanders such as random regular graphs (w ~ n/6).
``einsum``: the whole network along ``numpy.einsum_path(..., optimize="greedy")``, contracted pair by
pair with renormalisation (numpy allows at most 52 index labels, so larger models use buckets).

Low temperature. Renormalising keeps each factor's largest entry at 1, not its smallest: at
beta |J| = 1000 products of entries exp(-2 beta |J|) underflow and the result was NaN. Before each
product the contraction bounds its smallest entry; if it could fall below 1e-280, the model is
contracted again by buckets on log weights (each bucket a log-sum-exp over its spin), which is
exact at every temperature.
"""

from __future__ import annotations

import sys

import math

import numpy as np

from search.structural.templates import (Claims, elimination_order, lattice_exponent, measured_widths, render,
                                         small_arrays, register)
from search.structural.templates.elimination_order import _bucket_plan, _elimination_order, _positions, _widest_factor
from search.structural.templates.small_arrays import _extremes, _largest
from tasks.family import width_growth

NAME = "tensor_contraction"
#: the order in which the structural proposer tries templates when no plan is preferred by structure
ORDER = 50
OPTION_SPACE = {
    "order": ("min_fill", "min_degree", "natural", "reverse_cuthill_mckee"),
    "engine": ("bucket", "einsum"),
}
IMPORTS = """\
import math

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import reverse_cuthill_mckee
"""
#: a factor over more spins than this does not fit in memory
MAX_FACTOR_SPINS = 26
#: buckets over at most this many spins are summed by one direct einsum loop (no path search)
SMALL_BUCKET_SPINS = 12
#: numpy.einsum's index alphabet
EINSUM_LABELS = 52
EINSUM_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _merged_couplings(edges, J, rank_one, n):
    """Merged pair couplings (i < j) with rank-one blocks expanded (dense: only for small n)."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    J = np.asarray(J, dtype=np.float64).reshape(-1)
    for u, a in rank_one:
        u = np.asarray(u, dtype=np.float64)
        i, j = np.triu_indices(n, 1)
        edges = np.concatenate([edges, np.stack([i, j], 1)])
        J = np.concatenate([J, a * u[i] * u[j]])
    lo, hi = np.minimum(edges[:, 0], edges[:, 1]), np.maximum(edges[:, 0], edges[:, 1])
    key, inv = np.unique(lo * n + hi, return_inverse=True)
    Jm = np.bincount(inv.ravel(), weights=J, minlength=len(key))
    keep = Jm != 0.0
    return np.stack([key[keep] // n, key[keep] % n], 1), Jm[keep]


def _sum_out(ops, scopes, keep):
    """The sum over spin k of the product of ``ops`` (factors over ``scopes``, sorted tuples of
    elimination positions, each starting with k), as an array over ``keep`` (sorted).
    A small bucket is one direct einsum with k summed (optimize=False: a loop over the bucket's
    spins, no intermediate, no path search); a wide one is one greedy einsum per value of k, each
    straight onto the kept spins, so no intermediate exceeds 2^len(keep) entries (the joint factor
    with k, twice as large, is never formed)."""
    if len(keep) <= SMALL_BUCKET_SPINS:
        letter = dict(zip(keep, "bcdefghijklmnopqrstuvwxyz"))      # and "a" for k
        spec = ",".join(["a" + "".join([letter[u] for u in sc[1:]]) for sc in scopes])
        return np.einsum(spec + "->" + "".join([letter[u] for u in keep]), *ops)
    at = {u: j for j, u in enumerate(keep)}
    total = None
    for value in (0, 1):
        args = []
        for sc, t in zip(scopes, ops):
            args += [t[value], [at[u] for u in sc[1:]]]
        args.append(list(range(len(keep))))
        part = np.einsum(*args, optimize="greedy")
        if total is None:
            total = part
        else:
            total += part
        del part
    return total


def _labels(scope):
    """A factor's einsum subscripts when each spin at elimination position u is letter u mod 52:
    distinct within any bucket whose spins span fewer than 52 positions (checked per bucket)."""
    return "".join([EINSUM_LETTERS[u % EINSUM_LABELS] for u in scope])


def _factor_tables(edges, J, h, beta, log_domain=False):
    """The network's tables, stacked: (pairs, fields, singles, log offset) with pairs[e] the 2 x 2
    factor of coupling e over edges[e], singles[j] the 2-vector of the field on spin fields[j], their
    entries' logs when ``log_domain``; the log offset is taken out of them (largest entry 1)."""
    s = np.array([1.0, -1.0])
    K = beta * np.asarray(J, dtype=np.float64)
    H = beta * np.asarray(h, dtype=np.float64)
    fields = np.flatnonzero(H)
    pairs = K[:, None, None] * np.outer(s, s) - np.abs(K)[:, None, None]
    singles = H[fields][:, None] * s - np.abs(H[fields])[:, None]
    if not log_domain:
        pairs, singles = np.exp(pairs), np.exp(singles)
    return pairs, fields, singles, float(np.sum(np.abs(K)) + np.sum(np.abs(H)))


def _factors(edges, J, h, beta, log_domain=False):
    """The network: a list of (spins tuple, array: its entries' logs when ``log_domain``) and the log
    offset taken out of them."""
    pairs, fields, singles, offset = _factor_tables(edges, J, h, beta, log_domain)
    factors = [((a, b), t) for (a, b), t in zip(edges.tolist(), pairs)]
    factors += [((i,), t) for i, t in zip(fields.tolist(), singles)]
    return factors, offset


def _oriented(edges, pos, stacked):
    """(scopes, tables, lows): the factors of ``_factor_tables`` (``stacked``) with their spins as
    elimination positions in increasing order, each pair's table transposed where its edge runs
    against the order, so a factor's first axis is the spin whose bucket it waits in; lows[i] is
    factor i's smallest entry, kept with it (the linear pass's underflow bound)."""
    pairs, fields, singles, _ = stacked
    pos = np.asarray(pos, dtype=np.int64)
    ends = pos[edges].reshape(-1, 2)
    swap = ends[:, 0] > ends[:, 1]
    if swap.any():
        pairs = pairs.copy()
        pairs[swap] = pairs[swap].transpose(0, 2, 1)
    scopes = list(zip(ends.min(axis=1).tolist(), ends.max(axis=1).tolist()))
    scopes += [(u,) for u in pos[fields].tolist()]
    lows = pairs.reshape(-1, 4).min(axis=1).tolist() + singles.min(axis=1).tolist()
    return scopes, list(pairs) + list(singles), lows


def _contract_network(factors):
    """(value / exp(log scale), log scale) of the whole network, following numpy.einsum_path's greedy
    pairwise path; each intermediate is renormalised to max 1. None when a product could underflow."""
    spins = sorted({v for vs, _ in factors for v in vs})
    label = {v: i for i, v in enumerate(spins)}
    ops = [t for _, t in factors]
    labs = [[label[v] for v in vs] for vs, _ in factors]
    args = []
    for t, lab in zip(ops, labs):
        args += [t, lab]
    path = np.einsum_path(*args, [], optimize="greedy")[0][1:]
    log_scale = 0.0
    for step in path:
        picked = [(ops.pop(i), labs.pop(i)) for i in sorted(step, reverse=True)]
        t, lab = picked[0]
        for k in range(1, max(len(picked), 2)):
            needed = {x for other in labs for x in other} | {x for _, other in picked[k + 1:] for x in other}
            if k < len(picked):
                t2, lab2 = picked[k]
                if float(np.min(t)) * float(np.min(t2)) < 1e-280:
                    return None
                out = sorted((set(lab) | set(lab2)) & needed)
                t, lab = np.einsum(t, lab, t2, lab2, out), out
            else:
                out = sorted(set(lab) & needed)
                t, lab = np.einsum(t, lab, out), out
            top = float(np.max(t))
            log_scale += np.log(top)
            t = t / top
        ops.append(t)
        labs.append(lab)
    rest = 1.0
    for t in ops:
        rest *= float(np.sum(t))
    return rest, log_scale


def _method_log_z(edges, J, h, rank_one, positions, beta, n, options):
    """Natural log Z by contracting the tensor network of the model (on log weights when cold)."""
    edges, J = _merged_couplings(edges, J, rank_one, n)
    stacked = _factor_tables(edges, J, h, beta)
    log_scale = stacked[3]
    touched = len(np.union1d(edges.ravel(), stacked[1]))
    log_scale += (n - touched) * np.log(2.0)               # spins in no factor: a factor 2 each
    if not len(edges) and not len(stacked[1]):
        return log_scale
    if options.get("engine") == "einsum" and touched <= EINSUM_LABELS:
        contracted = _contract_network(_factors(edges, J, h, beta)[0])
        if contracted is not None:
            return log_scale + contracted[1] + float(np.log(contracted[0]))
    order = _elimination_order(n, edges, options.get("order", "min_fill"), cap=MAX_FACTOR_SPINS)
    if len(order) < n:
        raise MemoryError(f"the greedy elimination order makes a factor over more than {MAX_FACTOR_SPINS} spins")
    pos = _positions(order, n)
    scopes, tables, lows = _oriented(edges, pos, stacked)
    plan = _bucket_plan(scopes, n)                         # before any work: its widest factor
    if plan[2] > MAX_FACTOR_SPINS:
        raise MemoryError(f"the elimination order makes a factor over {plan[2]} spins (2^{plan[2]} entries)")
    base = log_scale
    for log_domain in (False, True):
        if log_domain:
            tables = _oriented(edges, pos, _factor_tables(edges, J, h, beta, log_domain=True))[1]
        result = _buckets(tables, lows, plan, base, log_domain)
        if result is not None:
            return result
    raise ArithmeticError("unreachable: the log-weight contraction cannot underflow")


def _buckets(tables, lows, plan, log_scale, log_domain):
    """Bucket elimination along ``plan`` (``_bucket_plan`` of the factors' oriented scopes) on the
    factors' ``tables`` (oriented, with their smallest entries ``lows``); None from the linear pass
    when a product could underflow. Linear: each factor carries bounds on its smallest and
    largest entries, and is rescaled to max 1 only when its bucket's product could leave
    [1e-280, 1e280] by those bounds (on a chain, about one bucket in several hundred: a rescaling
    costs two reductions and a division, a third of a bucket's time). If the product's smallest
    entry over its largest could fall below 1e-280 the caller contracts again on log weights,
    where a bucket is a log-sum-exp over its spin."""
    steps, scopes, _ = plan
    tables, lows = list(tables), list(lows)
    highs = [1.0] * len(tables)                             # the given factors' largest entries
    labels = None if log_domain else [_labels(sc) for sc in scopes]
    scalars = []                                            # factors over no spin left
    for k, ids, keep in steps:
        ops = [tables[i] for i in ids]
        for i in ids:
            tables[i] = None                                # consumed: its memory goes with it
        if log_domain:
            full = (k,) + keep
            acc = None
            for i, t in zip(ids, ops):
                sc = scopes[i]
                if len(sc) < len(full):
                    t = np.reshape(t, [2 if u in sc else 1 for u in full])
                acc = t if acc is None else acc + t
            t = np.logaddexp(acc[0], acc[1])
            top = _largest(t)
            log_scale += top
            made = t - top
        else:
            ratio, low, high = _bounds(ids, lows, highs)
            if ratio < 1e-280 or low < 1e-280 or high > 1e280:
                # rescale this bucket's factors to a largest entry of 1 (exact extremes) only when
                # their carried bounds say the product could leave [1e-280, 1e280]; the give-up
                # test then sees each factor's exact smallest entry, as if every factor had been
                # rescaled when made (the bound is below the exact value, so it never gives up sooner)
                for j, i in enumerate(ids):
                    top, least = _extremes(ops[j])
                    ops[j] = ops[j] / top
                    log_scale += math.log(top)
                    lows[i], highs[i] = least / top, 1.0
                ratio, low, high = _bounds(ids, lows, highs)
                if ratio < 1e-280:
                    return None
            if len(keep) <= SMALL_BUCKET_SPINS and (not keep or keep[-1] - k < EINSUM_LABELS):
                # the spec of one direct einsum with k summed, as in _sum_out, without building it
                t = np.einsum(",".join([labels[i] for i in ids]) + "->" + labels[len(tables)], *ops)
            else:
                t = _sum_out(ops, [scopes[i] for i in ids], keep)
            made = t                                        # a sum of two products over spin k:
            lows.append(2.0 * low)                          # its entries lie in [2 low, 2 high]
            highs.append(2.0 * high)
        tables.append(made)
        if not keep:
            scalars.append(made)
    if log_domain:
        return log_scale + float(sum(float(t) for t in scalars))
    return log_scale + float(sum(math.log(float(t)) for t in scalars))


def _bounds(ids, lows, highs):
    """For the product of factors ``ids``: a lower bound on its smallest entry over its largest,
    and bounds on its smallest and largest entries (from each factor's carried bounds)."""
    ratio, low, high = 1.0, 1.0, 1.0
    for i in ids:
        ratio *= lows[i] / highs[i]
        low *= lows[i]
        high *= highs[i]
    return ratio, low, high


FUNCTIONS = (_merged_couplings, *elimination_order.FUNCTIONS, *small_arrays.FUNCTIONS, _sum_out, _labels,
             _factor_tables, _factors, _oriented, _contract_network, _method_log_z, _buckets, _bounds)


def source(options: dict) -> str:
    return render(IMPORTS + f"\nMAX_FACTOR_SPINS = {MAX_FACTOR_SPINS}\nSMALL_BUCKET_SPINS = {SMALL_BUCKET_SPINS}\n"
                  f"EINSUM_LABELS = {EINSUM_LABELS}\nEINSUM_LETTERS = {EINSUM_LETTERS!r}\n"
                  + small_arrays.CONSTANTS, FUNCTIONS)


def applies(view) -> str | None:
    if view.max_order > 2:
        return "terms on three or more spins: the template builds pair and field factors"
    return None


def _fraction(sizes, widths) -> int:
    """k with width <= n / k at the family's larger sizes (a simple fraction for the claim)."""
    big = [(n, w) for n, w in zip(sizes, widths) if n >= max(sizes) ** 0.5]
    slope = max(w / n for n, w in big) if big else 1.0
    for k in (8, 7, 6, 5, 4, 3, 2):
        if slope <= 1.0 / k:
            return k
    return 1


def elimination_widths(view, order: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(sizes, induced widths) of the elimination ``order`` on the family's models (``view.instances``):
    the largest factor, in spins, that bucket elimination along it creates; measured up to the first
    size where it exceeds MAX_FACTOR_SPINS (there MAX_FACTOR_SPINS + 1, a lower bound: the program
    refuses such sizes, and a greedy order's search would cost more than the claim is worth)."""
    def width(m):
        elim = _elimination_order(m.n, m.edges, order, cap=MAX_FACTOR_SPINS)
        if len(elim) < m.n:
            return MAX_FACTOR_SPINS + 1
        return _widest_factor([set(e) for e in m.edges.tolist()], elim)

    return measured_widths(view, (NAME, order), width, stop_above=MAX_FACTOR_SPINS)


def claims(view, options: dict) -> Claims:
    """Claims from the induced width of the order the plan eliminates along, measured on the family's
    models (the family's treewidth bound when the view carries no models)."""
    order = options.get("order", "min_fill")
    if view.instances:
        sizes, widths = elimination_widths(view, order)
        capped = widths[-1] > MAX_FACTOR_SPINS            # a lower bound: the growth is read below it
        kind = width_growth(sizes[:-1] if capped else sizes, widths[:-1] if capped else widths)[0]
        if kind == "unknown" or (capped and kind == "bounded"):
            kind = "sqrt" if view.family.treewidth_growth == "sqrt" else "linear"
    else:
        sizes, widths, kind = view.family.sizes, view.family.treewidth, view.family.treewidth_growth
    if view.rank_one:
        kind = "linear"
    how = ("numpy.einsum with a greedy contraction path (buckets beyond 52 spins)" if options.get("engine") == "einsum"
           else f"bucket elimination along the {order.replace('_', ' ')} order")
    if kind == "bounded":
        w = max(widths)
        return Claims("treewidth_bounded", "O(n)", 0.85,
                      f"The interaction graph has bounded treewidth: contracting its tensor network (a 2 x 2 "
                      f"Boltzmann factor per coupling, a vector per field) by {how} keeps every intermediate factor "
                      f"over at most {w + 1} spins (measured at n = {max(sizes)} and below), so the cost is "
                      f"O(2^{w} n) = O(n).", cost_rank=0)
    if kind == "sqrt" and view.lattice_side:
        k = lattice_exponent(sizes, widths) if view.instances else 2 if view.torus else 1
        width = "L" if k == 1 else f"{k}L"
        return Claims("transfer_matrix", f"O(L^2 2^({width}))", 0.5,
                      f"The spins form an L x L lattice whose separators have about {width} spins. Contracting the "
                      f"tensor network by {how} sweeps across the lattice like a row transfer matrix, with "
                      f"intermediate factors over about {width} spins ({max(widths)} at n = {max(sizes)}): "
                      f"exponential in L = sqrt(n), not in n.", cost_rank=1)
    k = _fraction(sizes, widths)
    claim = "O(n 2^n)" if k == 1 else f"O(n 2^(n/{k}))"
    grows = "like sqrt(n) on a graph that is not a lattice" if kind == "sqrt" else "linearly with n"
    why = (" No polynomial class of the library applies: the treewidth itself grows linearly, as for random "
           "regular graphs." if view.family.treewidth_growth == "linear" else "")
    return Claims("no_efficient_known", claim, 0.7,
                  f"Contracting the tensor network by {how} makes factors whose width grows {grows} "
                  f"({max(widths)} spins at n = {max(sizes)}, about n/{k}): exact, but exponential in that width, "
                  f"so {claim}.{why}", cost_rank=2)


register(sys.modules[__name__])
