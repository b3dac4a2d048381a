"""Exact log Z of models of small treewidth by variable elimination in log space.

Conventions as in :mod:`tasks.model`: H(s) = -(constant + sum_k w_k prod_{i in S_k} s_i), log Z
natural, at ``model.beta``. Any terms: fields, couplings, k-spin terms (rank-one blocks only
for small n, expanded into couplings).

Every term becomes a factor: a table of log weights beta w prod s over the 2^k values of its
spins. Spins are summed out one at a time along a min-fill (or min-degree) order
(:mod:`evaluators.oracles.elimination_order`): the factors that contain the spin are added
into one table over the union of their spins, the spin is summed out by log-sum-exp, and the
result is a new factor on the remaining spins (bucket elimination, Dechter 1999). Every step
adds logs and takes log(e^a + e^b) = max + log1p(e^-|a-b|), so nothing under- or overflows at
any beta and no terms of opposite sign ever meet: exact to rounding at every temperature.

Cost O(sum over steps of 2^(clique size) x factors in the bucket), i.e. O(n 2^width) for a
bounded width: trees and forests (width 1), cacti and series-parallel graphs (2), decorated
chains and strips (small), any of them with fields and k-spin terms. The registry chooses it
when the width of the order found is at most ``AUTO_MAX_WIDTH`` (12); called directly it goes
to ``MAX_WIDTH`` (22) and ``MAX_CELLS`` table cells; orders are cached by structure, so the same graph at another beta
or with other weights costs no second search.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from numba import njit
from numba.typed import List

from evaluators.oracles.base import NotApplicable, TooLarge
from evaluators.oracles.elimination_order import MIN_DEGREE, MIN_FILL, greedy_order, interaction_graph, term_groups
from tasks.model import IsingModel

MAX_WIDTH = 22            # largest table 2^(22+1) float64 = 64 MiB
MAX_CELLS = 2 ** 31       # total table cells over all steps (about a minute of work)
#: chosen automatically (``elimination_applies``) only this narrow: on lattices the transfer
#: matrix's sweep has a smaller frontier than min-fill's width and a faster kernel (measured on
#: a 16 x 16 grid in fields: width 22 and 1.8 s here against frontier 16 and 0.09 s)
AUTO_MAX_WIDTH = 12
AUTO_MAX_CELLS = 2 ** 28
MAX_DENSE_RANK_ONE_N = MAX_WIDTH + 1  # a rank-one block couples every pair: width n - 1
MIN_FILL_ALONE_MAX_N = 5000  # above this, min-fill is tried only where min-degree found an order


@dataclass(frozen=True)
class EliminationPlan:
    """An elimination order with its cost: clique[i] spins meet when order[i] is summed out."""

    order: np.ndarray
    clique: np.ndarray
    width: int
    heuristic: str

    @property
    def cells(self) -> int:
        """Table cells computed in total (sum of 2^clique)."""
        return int(np.sum(np.exp2(self.clique.astype(np.float64))))


_PLAN_CACHE: OrderedDict = OrderedDict()
_PLAN_CACHE_SIZE = 16


def _structure_key(model: IsingModel):
    return (model.n, model.terms, tuple((u.tobytes(), a) for u, a in model.rank_one))


def elimination_plan(model: IsingModel, max_width: int = MAX_WIDTH) -> EliminationPlan | None:
    """The cheaper of the min-degree and min-fill orders of the model's interaction graph, or
    None when both are wider than ``max_width`` (on graphs of more than MIN_FILL_ALONE_MAX_N
    spins, min-fill only runs when min-degree succeeded). Cached by the model's structure."""
    key = (_structure_key(model), max_width)
    if key in _PLAN_CACHE:
        _PLAN_CACHE.move_to_end(key)
        return _PLAN_CACHE[key]
    indptr, indices = interaction_graph(model)
    best = None
    for criterion, name in ((MIN_DEGREE, "min-degree"), (MIN_FILL, "min-fill")):
        if criterion == MIN_FILL and best is None and model.n > MIN_FILL_ALONE_MAX_N:
            break  # min-degree failed on a big graph: a lattice, refuse fast (min-fill costs 4x more)
        if best is not None and best.width <= 1:
            break  # a forest: min-degree's cliques are already the fewest and smallest possible
        order, clique, width = greedy_order(indptr, indices, criterion, max_width)
        if width < 0:
            continue
        plan = EliminationPlan(order, clique, width, name)
        if best is None or plan.cells < best.cells:
            best = plan
    _PLAN_CACHE[key] = best
    while len(_PLAN_CACHE) > _PLAN_CACHE_SIZE:
        _PLAN_CACHE.popitem(last=False)
    return best


def elimination_applies(model: IsingModel) -> str | None:
    """None when a min-fill or min-degree order of width <= AUTO_MAX_WIDTH and work <=
    AUTO_MAX_CELLS exists (where this method is the one to choose; ``elimination_log_z`` itself
    goes to MAX_WIDTH)."""
    if model.rank_one and model.n > MAX_DENSE_RANK_ONE_N:
        return f"rank-one blocks couple all {model.n} spins: width n - 1 > {AUTO_MAX_WIDTH}"
    plan = elimination_plan(model, AUTO_MAX_WIDTH)
    if plan is None:
        return f"no min-fill or min-degree elimination order of width <= {AUTO_MAX_WIDTH} (treewidth too large)"
    if plan.cells > AUTO_MAX_CELLS:
        return f"the elimination order of width {plan.width} needs {plan.cells:.2e} table cells (> {AUTO_MAX_CELLS:.2e})"
    return None


def _factors(model: IsingModel, pos: np.ndarray, groups: dict):
    """Scopes (CSR, spins sorted by elimination position) and log tables (CSR) of all terms
    (``groups``: the model's ``term_groups``). Table index bit j is spin scope[j]: 0 for s = +1,
    1 for s = -1."""
    beta = float(model.beta)
    groups = {k: (spins[w != 0.0], w[w != 0.0]) for k, (spins, w) in groups.items()}
    if model.rank_one:  # small n only (checked by the callers): couplings merge pairs and blocks
        groups[2] = model.couplings
    scope_blocks, table_blocks, sizes = [], [], []
    for k, (spins, ws) in sorted(groups.items()):
        if len(ws) == 0:
            continue
        spins = np.take_along_axis(spins, np.argsort(pos[spins], axis=1), axis=1)
        bits = (np.arange(2 ** k)[:, None] >> np.arange(k)[None, :]) & 1          # (2^k, k)
        parity = 1.0 - 2.0 * (bits.sum(axis=1) % 2)                                 # prod s
        tables = beta * np.asarray(ws)[:, None] * parity[None, :]                    # (m, 2^k)
        scope_blocks.append(spins.ravel())
        table_blocks.append(tables.ravel())
        sizes.append(np.full(len(ws), k, np.int64))
    if not sizes:
        z = np.zeros(1, np.int64)
        return z, np.zeros(0, np.int64), z, np.zeros(0)
    k_all = np.concatenate(sizes)
    scope_ptr = np.concatenate([[0], np.cumsum(k_all)])
    table_ptr = np.concatenate([[0], np.cumsum(2 ** k_all)])
    return scope_ptr, np.concatenate(scope_blocks), table_ptr, np.concatenate(table_blocks)


@njit(cache=True)
def _log_add(a, b):
    if a < b:
        a, b = b, a
    return a + math.log1p(math.exp(b - a))


@njit(cache=True)
def _eliminate(n, order, pos, scope_ptr, scope_vars, table_ptr, table_vals, max_width):
    """log Z (without the constant) by bucket elimination along ``order``."""
    n_init = scope_ptr.shape[0] - 1
    cap = n_init + n + 1
    f_start = np.empty(cap, np.int64)   # scope of factor f: pool[f_start[f] : f_start[f] + f_len[f]]
    f_len = np.empty(cap, np.int64)
    pool = np.empty(scope_vars.shape[0] + n * (max_width + 1) + 1, np.int64)
    pool[: scope_vars.shape[0]] = scope_vars
    used = scope_vars.shape[0]
    tables = List()
    for f in range(n_init):
        f_start[f] = scope_ptr[f]
        f_len[f] = scope_ptr[f + 1] - scope_ptr[f]
        tables.append(table_vals[table_ptr[f]:table_ptr[f + 1]].copy())
    n_f = n_init
    head = np.full(n, -1, np.int64)     # bucket of spin v: a linked list of factors
    nxt = np.full(cap, -1, np.int64)
    for f in range(n_init):
        v = pool[f_start[f]]
        nxt[f] = head[v]
        head[v] = f
    local = np.full(n, -1, np.int64)
    union = np.empty(max_width + 2, np.int64)
    members = np.empty(cap, np.int64)
    loc = np.empty((0, max_width + 1), np.int64)
    total = 0.0
    empty = np.zeros(0)
    for step in range(n):
        v = order[step]
        nm = 0
        f = head[v]
        while f >= 0:
            members[nm] = f
            nm += 1
            f = nxt[f]
        if nm == 0:
            total += math.log(2.0)
            continue
        # union of the scopes, v first, the rest by elimination position
        k = 1
        union[0] = v
        local[v] = 0
        for a in range(nm):
            f = members[a]
            for j in range(f_len[f]):
                u = pool[f_start[f] + j]
                if local[u] < 0:
                    if k > max_width:
                        for b in range(k):
                            local[union[b]] = -1
                        return math.nan
                    local[u] = k
                    union[k] = u
                    k += 1
        # the rest by elimination position: an insertion sort in place (k <= max_width + 1 is
        # small, and a star's 10^5 steps each allocating and argsorting were a third of its time)
        for b in range(2, k):
            u = union[b]
            c = b - 1
            while c >= 1 and pos[union[c]] > pos[u]:
                union[c + 1] = union[c]
                c -= 1
            union[c + 1] = u
        for b in range(1, k):
            local[union[b]] = b
        # each member's table index bits, as positions in the union (in a buffer that only grows)
        if nm > loc.shape[0]:
            loc = np.empty((2 * nm, max_width + 1), np.int64)
        for a in range(nm):
            f = members[a]
            for j in range(f_len[f]):
                loc[a, j] = local[pool[f_start[f] + j]]
        out = np.empty(1 << (k - 1))
        for x in range(1 << (k - 1)):
            full0 = x << 1          # bit 0 of the union assignment is v
            s0 = 0.0
            s1 = 0.0
            for a in range(nm):
                f = members[a]
                tab = tables[f]
                i0 = 0
                i1 = 0
                for j in range(f_len[f]):
                    p = loc[a, j]
                    if p == 0:
                        i1 |= 1 << j
                    else:
                        i0 |= ((full0 >> p) & 1) << j
                s0 += tab[i0]
                s1 += tab[i0 | i1]
            out[x] = _log_add(s0, s1)
        for a in range(nm):
            tables[members[a]] = empty   # consumed: free its table
        for b in range(k):
            local[union[b]] = -1
        if k == 1:
            total += out[0]
            continue
        f = n_f
        n_f += 1
        f_start[f] = used
        f_len[f] = k - 1
        for b in range(1, k):
            pool[used] = union[b]
            used += 1
        tables.append(out)
        w = union[1]
        nxt[f] = head[w]
        head[w] = f
    return total


def elimination_log_z(model: IsingModel, max_width: int = MAX_WIDTH) -> float:
    """Natural log Z at model.beta by variable elimination along a min-fill / min-degree order.

    Raises NotApplicable for rank-one blocks at large n, TooLarge when no order of width <=
    ``max_width`` (and work <= MAX_CELLS) is found.
    """
    if model.rank_one and model.n > MAX_DENSE_RANK_ONE_N:
        raise NotApplicable(f"rank-one blocks couple all {model.n} spins: width n - 1 > {MAX_WIDTH}")
    plan = elimination_plan(model, max_width)
    if plan is None:
        raise TooLarge(f"no min-fill or min-degree elimination order of width <= {max_width}")
    if plan.cells > MAX_CELLS:
        raise TooLarge(f"the elimination order of width {plan.width} needs {plan.cells:.2e} table cells")
    pos = np.empty(model.n, np.int64)
    pos[plan.order] = np.arange(model.n)
    scope_ptr, scope_vars, table_ptr, table_vals = _factors(model, pos, term_groups(model))
    value = _eliminate(model.n, plan.order, pos, scope_ptr, scope_vars, table_ptr, table_vals, plan.width)
    return float(value + float(model.beta) * float(model.constant))  # the registry checks it is finite
