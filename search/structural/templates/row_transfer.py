"""Transfer matrix along an ordering of the spins, site by site, with a frontier.

Spins are added one at a time in a chosen order. The state is a vector over the frontier: the
spins already placed that still have an unplaced neighbour, stored as an ndarray with one axis of
length 2 per frontier spin. Adding spin v appends an axis, multiplies in its field and its
couplings to frontier spins (each a 2 x 2 factor broadcast over two axes), then sums out every
spin whose last neighbour is now placed. On an L x L grid in row-major order this is the row
transfer matrix factorised into L site steps (frontier L on an open grid, 2L on a torus, where the
first row waits for the last); on a chain the frontier is one spin. Cost O(n 2^W) time and O(2^W)
memory for frontier width W: polynomial only when W is bounded, exponential in L = sqrt(n) on 2D
lattices. All factors are positive and rescaled (exp(beta (J s s' - |J|))) and the vector is
rescaled to a largest entry of 1 whenever bounds carried along the sweep say an entry could leave
[1e-280, 1e280] (on a chain at moderate beta, every few hundred steps: a rescaling is two
reductions and a division, most of a step's cost). Rescaling keeps the largest entry at 1 but not
the smallest, so when an entry could fall below 1e-280 (beta |J| of a hundred or more: at beta = 100 the linear sweep
lost 0.53 in log Z on a 4 x 4 +-J torus) the sweep runs again on log weights (log-sum-exp over the
summed spins). Exact at every temperature either way.
"""

from __future__ import annotations

import sys

import math

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import reverse_cuthill_mckee

from search.structural.templates import Claims, lattice_exponent, measured_widths, render, small_arrays, register
from search.structural.templates.small_arrays import _extremes, _largest
from tasks.family import width_growth

NAME = "row_transfer"
#: the order in which the structural proposer tries templates when no plan is preferred by structure
ORDER = 40
#: "column_major" sweeps an L x L lattice (indexed row by row) column by column; on any other graph
#: it is the natural order (a chain laid out column-major would leave a frontier of 2 sqrt(n) spins)
OPTION_SPACE = {
    "order": ("min_frontier", "natural", "column_major", "reverse_cuthill_mckee"),
}
IMPORTS = """\
import math

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import reverse_cuthill_mckee
"""
#: a frontier wider than this does not fit in memory (2^W doubles)
MAX_FRONTIER = 28


def _pair_couplings(edges, J, rank_one, n):
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


def _frontier_width(n, edges, order):
    """Largest number of placed spins that still wait for an unplaced neighbour along ``order``."""
    if not len(edges):
        return 0
    place = np.empty(n, dtype=np.int64)
    place[order] = np.arange(n)
    a, b = place[edges[:, 0]], place[edges[:, 1]]
    last = np.arange(n)                                   # by place: the last step each spin is needed
    np.maximum.at(last, np.minimum(a, b), np.maximum(a, b))
    change = np.zeros(n + 1, dtype=np.int64)
    np.add.at(change, np.arange(n), 1)
    np.add.at(change, last, -1)
    return int(np.cumsum(change).max())


def _lattice_side(n, edges):
    """L when every coupling joins nearest neighbours of an L x L lattice indexed row by row
    (periodic wraps allowed), else 0."""
    L = int(round(n ** 0.5))
    if L < 2 or L * L != n or not len(edges):
        return 0
    (ra, ca), (rb, cb) = np.divmod(edges[:, 0], L), np.divmod(edges[:, 1], L)
    dr, dc = np.abs(ra - rb), np.abs(ca - cb)
    nn = ((dr == 0) & ((dc == 1) | (dc == L - 1))) | ((dc == 0) & ((dr == 1) | (dr == L - 1)))
    return L if bool(np.all(nn)) else 0


def _sweep_order(n, edges, name, positions=None):
    """The order in which spins are added. "min_frontier" takes whichever candidate keeps the
    frontier smallest: row-major, column-major, sweeps across each axis of the drawing (a 3 x L
    strip is swept across its short side: frontier 3, not L) and reverse Cuthill-McKee."""
    cands = {"natural": np.arange(n)}
    L = _lattice_side(n, edges)
    if L:
        cands["column_major"] = np.arange(n).reshape(L, L).T.ravel()
    if positions is not None:
        pos = np.asarray(positions, dtype=np.float64).reshape(n, 2)
        cands["along_x"] = np.lexsort((pos[:, 1], pos[:, 0]))
        cands["along_y"] = np.lexsort((pos[:, 0], pos[:, 1]))
    if len(edges):
        adj = coo_matrix((np.ones(2 * len(edges)), (np.r_[edges[:, 0], edges[:, 1]], np.r_[edges[:, 1], edges[:, 0]])),
                         shape=(n, n)).tocsr()
        cands["reverse_cuthill_mckee"] = np.asarray(reverse_cuthill_mckee(adj, symmetric_mode=True), dtype=np.int64)
    if name == "min_frontier":
        return min(cands.values(), key=lambda o: _frontier_width(n, edges, o))
    return cands.get(name, cands["natural"])


def _method_log_z(edges, J, h, rank_one, positions, beta, n, options):
    """Natural log Z by a site-by-site transfer matrix along the plan's order: on linear weights
    while no entry can come near the bottom of the float range, else again on log weights."""
    edges, J = _pair_couplings(edges, J, rank_one, n)
    h = np.asarray(h, dtype=np.float64).reshape(-1)
    order = _sweep_order(n, edges, options.get("order", "min_frontier"), positions)
    width = _frontier_width(n, edges, order)            # the sweep's own refusal, before any work
    if width >= MAX_FRONTIER:
        raise MemoryError(f"a frontier of {width} spins needs 2^{width} states")
    value = _sweep(edges, J, h, order, beta, n, False)
    return _sweep(edges, J, h, order, beta, n, True) if value is None else value


def _sweep(edges, J, h, order, beta, n, log_domain):
    """The sweep itself; None from the linear sweep when an entry could have underflowed (beta |J|
    of a few hundred), since a lost entry may be the one that matters later. The factors' tables,
    the order's bookkeeping and each step's underflow bound are built as arrays before the loop,
    which then only multiplies, sums out and renormalises."""
    place = np.empty(n, dtype=np.int64)
    place[order] = np.arange(n)
    # every coupling is absorbed when its later spin is placed
    a, b = edges[:, 0], edges[:, 1]
    late = np.where(place[a] > place[b], a, b)
    early = np.where(place[a] > place[b], b, a)
    last = place.copy()                                  # when each spin can be summed out
    np.maximum.at(last, early, place[late])
    by_late = np.argsort(place[late], kind="stable")
    starts = np.searchsorted(place[late][by_late], np.arange(n + 1)).tolist()
    K = beta * np.asarray(J, dtype=np.float64)
    H = beta * h
    s = np.array([1.0, -1.0])
    fields = H[:, None] * s - np.abs(H)[:, None]         # by spin; log weights rescaled to max 0
    pairs = K[:, None, None] * np.outer(s, s) - np.abs(K)[:, None, None]
    # step k's factors are in [exp(-2 x_k), 1]: the smallest entry after them is at least that
    # much times the smallest before
    floor = np.exp(-2.0 * (np.abs(H)[order] + np.bincount(place[late], weights=np.abs(K), minlength=n))).tolist()
    if not log_domain:
        fields, pairs = np.exp(fields), np.exp(pairs)
    fields, pairs = list(fields), list(pairs)
    order, by_late, early, last = order.tolist(), by_late.tolist(), early.tolist(), last.tolist()
    # the offsets taken out of the factors, added in the order the factors are absorbed
    offset_h, offset_k = np.abs(H).tolist(), np.abs(K).tolist()
    log_scale = 0.0
    psi = np.zeros(()) if log_domain else np.ones(())    # log weights, or weights rescaled to max 1
    low, high = 1.0, 1.0                                 # bounds on psi's entries (linear)
    frontier = []
    for k in range(n):
        if not log_domain and (low * floor[k] < 1e-280 or high > 1e280):
            # rescale only now: the bounds said an entry could leave the safe range. Exactly the
            # steps at which a rescaling every step would have found low * floor[k] < 1e-280
            # give up here, since the bound is below the true smallest entry over the largest.
            top, low = _extremes(psi)
            psi = psi / top
            log_scale += math.log(top)
            low, high = low / top, 1.0
            if low * floor[k] < 1e-280:
                return None
        v = order[k]
        step = by_late[starts[k]:starts[k + 1]]
        # spin v's axis: its field's table, or (no field: a table of ones, exactly) its first coupling's
        grown = offset_h[v] != 0.0 or not step
        if grown:
            psi = np.add.outer(psi, fields[v]) if log_domain else np.multiply.outer(psi, fields[v])
            log_scale += offset_h[v]
        frontier.append(v)
        width = len(frontier)
        for e in step:
            shape = [1] * width
            shape[frontier.index(early[e])] = 2
            shape[-1] = 2
            f = pairs[e].reshape(shape)
            if not grown:
                psi = psi[..., None] + f if log_domain else psi[..., None] * f
                grown = True
            elif log_domain:
                psi = psi + f
            else:
                psi *= f
            log_scale += offset_k[e]
        done = [i for i, u in enumerate(frontier) if last[u] <= k]
        if done:
            if log_domain:                               # a log-sum-exp over each summed spin
                for i in reversed(done):
                    at = (slice(None),) * i
                    psi = np.logaddexp(psi[at + (0,)], psi[at + (1,)])
            else:
                psi = np.add.reduce(psi, axis=tuple(done))
                high *= 2.0 ** len(done)                 # a sum over a spin at most doubles the largest entry
            for i in reversed(done):
                del frontier[i]
        if len(frontier) >= MAX_FRONTIER:
            raise MemoryError(f"a frontier of {len(frontier)} spins needs 2^{len(frontier)} states")
        if log_domain:
            top = _largest(psi)
            psi = psi - top
            log_scale += top
        else:
            low *= floor[k]                              # this step's factors shrink an entry at most this much
    total = float(np.log(np.exp(psi).sum())) if log_domain else float(np.log(psi.sum()))
    return log_scale + total


FUNCTIONS = (_pair_couplings, _frontier_width, _lattice_side, _sweep_order, _method_log_z, *small_arrays.FUNCTIONS,
             _sweep)


def source(options: dict) -> str:
    return render(IMPORTS + f"\nMAX_FRONTIER = {MAX_FRONTIER}\n" + small_arrays.CONSTANTS, FUNCTIONS)


def applies(view) -> str | None:
    if view.max_order > 2:
        return "terms on three or more spins: the template handles pair couplings and fields"
    return None


def frontier_kind(view) -> str:
    """How the best sweep's frontier grows with n: 'bounded', 'sqrt' (2D lattices) or 'linear'."""
    return view.family.pathwidth_growth if view.family.pathwidth_growth != "unknown" else "linear"


def frontier_widths(view, order: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(sizes, frontier widths) of the sweep ``order`` on the family's models (``view.instances``)."""
    return measured_widths(view, (NAME, order), lambda m: _frontier_width(
        m.n, m.edges, _sweep_order(m.n, m.edges, order, m.positions)))


def claims(view, options: dict) -> Claims:
    """Claims from the frontier of the order the plan sweeps along, measured on the family's models
    (the family's best pathwidth when the view carries no models)."""
    order = options.get("order", "min_frontier")
    if view.instances:
        sizes, widths = frontier_widths(view, order)
        kind = width_growth(sizes, widths)[0]
        kind = "linear" if kind == "unknown" else kind
    else:
        sizes, widths, kind = view.family.sizes, view.family.pathwidth, frontier_kind(view)
    if view.rank_one:
        kind = "linear"                    # a dense block: the frontier is every spin
    along = f"the {order.replace('_', ' ')} order"
    if kind == "bounded":
        w = max(widths)
        return Claims("transfer_matrix", "O(n)", 0.9,
                      f"The interaction graph has a bounded pathwidth: a sweep that adds one spin at a time along "
                      f"{along} keeps a frontier of at most {w} spins (measured at n = {max(sizes)} and below), so a "
                      f"transfer matrix over 2^{w} frontier states is absorbed site by site in O(n) steps. Every "
                      f"factor is positive and rescaled, so it is exact at every temperature.", cost_rank=0)
    if kind == "sqrt" and view.lattice_side:
        wrap = view.torus
        k = lattice_exponent(sizes, widths) if view.instances else 2 if wrap else 1
        width = "L" if k == 1 else f"{k}L"
        return Claims("transfer_matrix", f"O(L^2 2^({width}))", 0.8 if wrap else 0.6,
                      f"The spins sit on an L x L {'torus' if wrap else 'open grid'} (L = sqrt(n)). A transfer matrix "
                      f"factorised into single-site steps along {along} keeps a frontier of about {width} spins "
                      f"({max(widths)} at n = {max(sizes)}), so each of the n = L^2 steps costs 2^({width}): "
                      f"exponential in L, not in n. The state vector is renormalised each step, so the result is "
                      f"exact at every temperature.", cost_rank=1)
    grows = "like sqrt(n) on a graph that is not a lattice" if kind == "sqrt" else "linearly with n"
    return Claims("no_efficient_known", "O(n 2^n)", 0.5,
                  f"The frontier of the sweep along {along} grows {grows} here ({max(widths)} spins at n = {max(sizes)}), so a site-by-site transfer matrix over the frontier "
                  f"is exponential in the frontier: an exact but exponential method, no polynomial class claimed.",
                  cost_rank=2)


register(sys.modules[__name__])
