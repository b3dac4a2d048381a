"""Variable elimination in log space along a greedy order: the polynomial fallback for any model of
bounded treewidth (terms of any arity, fields; 0/1 variables arrive here as spins after the chain's
first step), exact at every temperature.

The runtime model's terms are factors: a term K prod_{i in S} s_i is the table of its log weights
over the 2^|S| values of its spins (index bit 0 for s = +1, 1 for s = -1). Spins are summed out one
at a time (bucket elimination, Dechter 1999): the factors holding the spin are added into one table
over the union of their spins, the spin is summed by log(e^a + e^b), and the result is a factor on
the rest. Only logs are added, so nothing over- or underflows at any beta and no terms of opposite
sign meet. The work is O(sum over steps of 2^(bucket size)): O(2^w n) for an order of width w (the
largest number of other spins met when a spin is summed out).

Two phases, both exact:

1. Peeling (vectorised, in rounds): a spin in exactly one term of two or more spins is summed out
   in closed form, sum_s exp(s (h + K P)) = exp(c + K' P) for P = the product of the term's other
   spins, with c = (a + b) / 2, K' = (a - b) / 2, a, b = log 2cosh(h +- K): the term loses that spin.
   A term left with one spin becomes a field. Stars, trees and pendant leaves go in a few numpy
   rounds, not one Python step per spin (a round runs while it has PEEL_BATCH_MIN spins or more).
2. The rest (the core) along a greedy min-degree order of its interaction graph (min-fill too when
   min-degree's width is above 2, the narrower kept: on width <= 2 min-degree is already optimal),
   one Python step per spin: Python floats for a step over few spins, numpy arrays above. Adjacency
   is kept in sets and a spin with more than ELIM_MAX_WIDTH + 1 neighbours is never scored by its
   fill, so a hub costs O(1) per step. The order does not depend on the cap a caller stops it at,
   so the width the view measures is the width the program meets.

The width of a model is the larger of its peeled terms' sizes minus one and the core order's width;
``applies`` asks for it at every size the view analysed: bounded and at most APPLY_MAX_WIDTH.
"""

from __future__ import annotations

import sys

import math

import numpy as np

from search.structural.templates.elimination_order import _heap_pop, _heap_push
from tasks.family import width_growth
from search.derivation.solvers import register
from search.derivation.solvers.adapters import ModuleSolver

NAME = "elimination"
SUMMARY = "variable elimination in log space along a greedy order (bounded treewidth)"
OPTION_SPACE: dict = {}
ORDER = 80                 # where a derivation search tries it among the solvers
CHEAP = False
FALLBACK = True            # generic: a named mapping of the same growth is preferred (engine._plan)
IMPORTS = """\
import math

import numpy as np
"""
#: the program refuses (MemoryError) a step over more than this many other spins: 2^21 log weights
ELIM_MAX_WIDTH = 20
#: a peeling round runs while at least this many spins can be peeled at once (numpy pays per round)
PEEL_BATCH_MIN = 32
#: a step over at most this many spins adds Python floats; a larger one numpy arrays
SMALL_STEP_SPINS = 6
CONSTANTS = f"ELIM_MAX_WIDTH = {ELIM_MAX_WIDTH}\nPEEL_BATCH_MIN = {PEEL_BATCH_MIN}\nSMALL_STEP_SPINS = {SMALL_STEP_SPINS}\n"
#: the solver applies when the width is at most this at every size the view analysed
APPLY_MAX_WIDTH = 12


def _sol_elim_log2cosh(x):
    ax = np.abs(x)
    return ax + np.log1p(np.exp(-2.0 * ax))


def _sol_elim_terms(model):
    """(fields h (n,), term pointers (m + 1,), their spins (flat), weights K (m,)) of the terms on
    two or more spins (zero weights dropped). A rank-one block couples every pair (A u_i u_j): it
    is expanded only where that width n - 1 is allowed, else ValueError."""
    n = model["n"]
    h = np.zeros(n)
    spins, weights, sizes = [np.zeros(0, dtype=np.int64)], [np.zeros(0)], [np.zeros(0, dtype=np.int64)]
    if model["rank_one"] and n > ELIM_MAX_WIDTH + 1:
        raise ValueError(f"a rank-one block couples all {n} spins: width {n - 1} > {ELIM_MAX_WIDTH}")
    blocks = []
    for u, a in model["rank_one"]:
        i, j = np.triu_indices(n, 1)
        blocks.append((np.stack([i, j], 1), a * np.asarray(u)[i] * np.asarray(u)[j]))
    for idx, w in list(model["terms"]) + blocks:
        idx, w = np.asarray(idx, dtype=np.int64), np.asarray(w, dtype=np.float64)
        if idx.shape[1] == 1:
            np.add.at(h, idx[:, 0], w)
            continue
        keep = w != 0.0
        spins.append(idx[keep].ravel())
        weights.append(w[keep])
        sizes.append(np.full(int(keep.sum()), idx.shape[1], dtype=np.int64))
    size = np.concatenate(sizes)
    return h, np.concatenate([[0], np.cumsum(size)]).astype(np.int64), np.concatenate(spins), np.concatenate(weights)


def _sol_elim_peel(n, h, ptr, flat, K):
    """Phase 1 (see the module docstring), in place on h and K. Returns (log of what was summed,
    the spins summed (n,), the terms left (m,), their spins' slots left (len(flat),), the widest
    peeled term's size - 1).
    Per spin, ``count`` alive terms hold it and ``slots`` is the sum of their slot indices: the
    slot itself when count is 1; per term, ``arity`` and ``tslots`` the same over its spins."""
    m = len(K)
    term = np.repeat(np.arange(m), np.diff(ptr))
    slot_alive = np.ones(len(flat), dtype=bool)
    count = np.bincount(flat, minlength=n)
    slots = np.bincount(flat, weights=np.arange(len(flat)), minlength=n).astype(np.int64)
    arity = np.diff(ptr)
    tslots = np.bincount(term, weights=np.arange(len(flat)), minlength=m).astype(np.int64)
    alive = np.ones(m, dtype=bool)
    done = np.zeros(n, dtype=bool)
    total, width = 0.0, 0
    cand = np.flatnonzero(count == 1)
    while len(cand) >= PEEL_BATCH_MIN:
        s = slots[cand]
        t, first = np.unique(term[s], return_index=True)      # one spin per term and round
        v, s = cand[first], s[first]
        width = max(width, int(arity[t].max()) - 1)
        a, b = _sol_elim_log2cosh(h[v] + K[t]), _sol_elim_log2cosh(h[v] - K[t])
        total += float(np.sum(0.5 * (a + b)))
        K[t] = 0.5 * (a - b)
        slot_alive[s] = False
        count[v] = 0
        done[v] = True
        arity[t] -= 1
        tslots[t] -= s
        single = t[arity[t] == 1]                              # a term of one spin is a field
        r = tslots[single]
        u = flat[r]
        np.add.at(h, u, K[single])
        slot_alive[r] = False
        alive[single] = False
        np.subtract.at(count, u, 1)
        np.subtract.at(slots, u, r)
        rest = np.setdiff1d(cand, v, assume_unique=True)
        cand = np.union1d(rest[count[rest] == 1], u[count[u] == 1])
    return total, done, alive, slot_alive, width


def _sol_elim_order(nbrs, cap, fill):
    """(order, width) of a greedy order of the graph ``nbrs`` (a list of neighbour sets, copied):
    least (score, degree) first, score = degree, or with ``fill`` the number of missing edges among
    the neighbours (a vertex with more than ELIM_MAX_WIDTH + 1 neighbours, which no program could
    sum out, scores above every fill: it is not counted, so a hub costs O(1) per step). Vertices
    wait in one list per key, the keys in use in a heap: a step pops from a short list, not from a
    heap of every vertex. Stops with order None as soon as the width exceeds ``cap``."""
    nbrs = [set(x) for x in nbrs]
    big = 1 << 40

    def score(x):
        ns = nbrs[x]
        d = len(ns)
        if not fill:
            return d
        if d > ELIM_MAX_WIDTH + 1:
            return (big + d, d)
        ns = list(ns)
        return (sum(1 for i in range(d) for j in range(i + 1, d) if ns[j] not in nbrs[ns[i]]), d)

    key = [score(x) for x in range(len(nbrs))]
    queues = {}
    for x in range(len(nbrs)):
        queues.setdefault(key[x], []).append(x)
    keys = sorted(queues)                         # a sorted list is a heap
    done = [False] * len(nbrs)
    order, width = [], 0
    while keys:
        k = keys[0]
        queue = queues[k]
        if not queue:
            _heap_pop(keys)
            del queues[k]
            continue
        v = queue.pop()
        if done[v] or key[v] != k:
            continue                              # a stale entry: v was scored again since
        ns = list(nbrs[v])
        if len(ns) > width:
            width = len(ns)
            if width > cap:
                return None, width
        done[v] = True
        order.append(v)
        grew = []
        for i, a in enumerate(ns):
            near = nbrs[a]
            near.discard(v)
            for b in ns[i + 1:]:
                if b not in near:
                    near.add(b)
                    nbrs[b].add(a)
                    grew.append((a, b))
        changed = []
        for x in ns:
            new = score(x)
            if new != key[x]:
                key[x] = new
                changed.append(x)
        if fill:
            seen = set(ns)
            for a, b in grew:           # a common neighbour of a and b lost one missing edge
                for x in nbrs[a] & nbrs[b]:     # (iterates over the smaller set: a hub costs nothing)
                    if x not in seen and key[x][0] < big:
                        key[x] = (key[x][0] - 1, key[x][1])
                        changed.append(x)
        for x in changed:
            queue = queues.get(key[x])
            if queue is None:
                queue = queues[key[x]] = []
                _heap_push(keys, key[x])
            queue.append(x)
    return order, width


def _sol_elim_plan(model, cap):
    """Everything but the core's arithmetic: (log of what peeling summed, the spins it summed, fields
    h, the core's scopes (tuples of spins, sorted by elimination position) and weights, the core's
    spins in elimination order, width). MemoryError when no order found is at most ``cap`` wide."""
    n = model["n"]
    h, ptr, flat, K = _sol_elim_terms(model)
    total, done, alive, slot_alive, width = _sol_elim_peel(n, h, ptr, flat, K)
    if width > cap:
        raise MemoryError(f"a term on {width + 1} spins is wider than the cap {cap}")
    terms = np.flatnonzero(alive)
    size = np.bincount(np.repeat(np.arange(len(K)), np.diff(ptr))[slot_alive], minlength=len(K))[terms]
    left = flat[slot_alive]                       # the spins left, numbered 0 .. c - 1 in the core
    core = np.flatnonzero(np.bincount(left, minlength=n))
    local = np.searchsorted(core, left)
    start = np.concatenate([[0], np.cumsum(size)]).astype(np.int64)
    groups = []                                   # (terms on k spins as rows of core numbers, weights)
    for k in np.unique(size).tolist():
        pick = np.flatnonzero(size == k)
        groups.append((local[start[pick][:, None] + np.arange(k)], K[terms[pick]]))
    c = len(core)
    pairs = [rows[:, [a, b]] for rows, _ in groups for a in range(rows.shape[1]) for b in range(rows.shape[1]) if a != b]
    key = np.sort(np.concatenate([p[:, 0] * c + p[:, 1] for p in pairs])) if pairs else np.zeros(0, dtype=np.int64)
    key = key[np.concatenate([[True], key[1:] != key[:-1]])] if len(key) else key    # distinct pairs
    if len(key) > 2 * cap * c:                                # a graph of width w has < w n edges
        raise MemoryError(f"{len(key) // 2} interacting pairs among {c} spins: wider than {cap}")
    indptr = np.concatenate([[0], np.cumsum(np.bincount(key // max(c, 1), minlength=c))]).tolist()
    near = (key % max(c, 1)).tolist()
    nbrs = [set(near[indptr[x]:indptr[x + 1]]) for x in range(c)]
    order, w = _sol_elim_order(nbrs, cap, False)
    if order is None or w > 2:                    # min-degree is optimal up to width 2
        other, w2 = _sol_elim_order(nbrs, cap if order is None else w - 1, True)   # stops unless narrower
        if other is not None:
            order, w = other, w2
    if order is None:
        raise MemoryError(f"no greedy elimination order of width <= {cap} (the width reached {w})")
    order = np.asarray(order, dtype=np.int64)
    pos = np.empty(c, dtype=np.int64)
    pos[order] = np.arange(c)
    scopes, weights = [], [np.zeros(0)]
    for rows, k in groups:                        # each term's spins sorted by when they are summed
        rows = np.take_along_axis(rows, np.argsort(pos[rows], axis=1), axis=1)
        scopes += map(tuple, core[rows].tolist())
        weights.append(k)
    return total, done, h, scopes, np.concatenate(weights), core[order], max(width, w)


def _sol_elim_table(t):
    """A table with one axis per spin as a flat list (index bit j <-> the j-th spin, 0 for s = +1)."""
    return t.transpose().reshape(-1).tolist()


def _sol_elim_sum(done, h, scopes, K, order):
    """Phase 2: log of the sum over the core's spins (in ``order``) and every spin neither peeled
    (``done``) nor in the core (a free spin: log 2cosh h). A factor is (its spins, sorted by when
    they are summed; its log table) and waits in the bucket of its first spin. A table is a flat
    list while the step's spins are few (Python floats: a numpy call costs more than the sum), a
    numpy array with one axis per spin above SMALL_STEP_SPINS."""
    pos = np.full(len(done), -1, dtype=np.int64)
    pos[order] = np.arange(len(order))
    total = float(np.sum(_sol_elim_log2cosh(h[(pos < 0) & ~done])))
    rank = pos.tolist()
    hs = h.tolist()
    parity = [[1.0]]
    for _ in range(max((len(sc) for sc in scopes), default=0)):
        parity.append(parity[-1] + [-x for x in parity[-1]])      # (-1)^popcount(i)
    bucket = {}
    for scope, k in zip(scopes, K.tolist()):
        bucket.setdefault(scope[0], []).append((scope, [k * x for x in parity[len(scope)]]))
    maps = {}                                     # (union size, a factor's axes) -> table index per entry
    for v in order.tolist():
        factors = bucket.pop(v, [])
        if hs[v] != 0.0:
            factors.append(((v,), [hs[v], -hs[v]]))
        if not factors:
            total += math.log(2.0)
            continue
        union = [v]                               # v comes first in every scope of its bucket
        for scope, _ in factors:
            for u in scope:
                if u not in union:
                    union.append(u)
        size = len(union)
        if size > 2:
            union[1:] = sorted(union[1:], key=lambda u: rank[u])
        if size - 1 > ELIM_MAX_WIDTH:
            raise MemoryError(f"a step over {size} spins is wider than {ELIM_MAX_WIDTH}")
        if size <= SMALL_STEP_SPINS:
            acc = None
            for scope, table in factors:
                axes = (size,) + tuple([union.index(u) for u in scope])
                index = maps.get(axes)
                if index is None:
                    index = maps[axes] = [sum(((x >> a) & 1) << j for j, a in enumerate(axes[1:]))
                                          for x in range(1 << size)]
                if not isinstance(table, list):
                    table = _sol_elim_table(table)
                acc = [table[i] for i in index] if acc is None else [a + table[i] for a, i in zip(acc, index)]
            # bit 0 of the union's index is v: log(e^a + e^b) over its two values
            message = [(a if a > b else b) + math.log1p(math.exp(-abs(a - b))) for a, b in zip(acc[0::2], acc[1::2])]
        else:
            acc = np.zeros((2,) * size)
            for scope, table in factors:
                if isinstance(table, list):
                    table = np.asarray(table).reshape((2,) * len(scope)).transpose()
                shape = [1] * size
                for u in scope:
                    shape[union.index(u)] = 2
                acc = acc + table.reshape(shape)  # scopes and union share the order
            message = np.logaddexp(acc[0], acc[1])
        if size == 1:
            total += float(message[0]) if isinstance(message, list) else float(message)
        else:
            bucket.setdefault(union[1], []).append((tuple(union[1:]), message))
    return total


def _sol_elim(model, options):
    """log Z (without the model's shift) by peeling, then bucket elimination of the core."""
    total, done, h, scopes, K, order, _ = _sol_elim_plan(model, ELIM_MAX_WIDTH)
    return total + _sol_elim_sum(done, h, scopes, K, order)


FUNCTIONS = (_heap_push, _heap_pop, _sol_elim_log2cosh, _sol_elim_terms, _sol_elim_peel, _sol_elim_order,
             _sol_elim_plan, _sol_elim_table, _sol_elim_sum, _sol_elim)
ENTRY = _sol_elim


def widths(states, cap: int = APPLY_MAX_WIDTH) -> tuple[tuple[int, ...], str | None]:
    """(the width of this solver's order on each state, None or why it has none on some state):
    the view's measurement (search/derivation/view.py), by the functions the program runs, up to ``cap``."""
    out = []
    for s in states:
        try:
            out.append(int(_sol_elim_plan(s, cap)[-1]))
        except (ValueError, MemoryError) as exc:
            return tuple(out), f"at n = {s['n']} spins: {exc}"
    return tuple(out), None


def applies(view) -> str | None:
    if view.kind != "model":
        return "there is no spin model yet"
    if view.elimination_reason is not None:
        return view.elimination_reason
    kind, _ = width_growth(view.n_spins, view.elimination_widths)
    if kind != "bounded":
        pairs = ", ".join(f"{w} at n = {n}" for n, w in zip(view.n_spins, view.elimination_widths))
        return f"the elimination width grows with the size ({pairs}; {kind}): not bounded treewidth"
    return None


def claims(view, options):
    w, sizes = view.elimination_widths, view.n_spins
    measured = (f"width {w[0]} at every size analysed (n = {', '.join(map(str, sizes))})" if len(set(w)) == 1 else
                "widths " + ", ".join(f"{x} at n = {n}" for n, x in zip(sizes, w)) + " (bounded, not growing)")
    return (("treewidth_bounded",), "O(n)",
            f"Variable elimination in log space along a greedy order of the interaction hypergraph, {measured}: "
            f"spins in a single term are summed out in closed form (vectorised), the rest one at a time, each "
            f"step a log-sum-exp over a table of at most 2^(w+1) entries, so O(2^w n) = O(n) at bounded width w; "
            "exact at every temperature (only logs are added).", 1)


register(ModuleSolver(sys.modules[__name__]))
