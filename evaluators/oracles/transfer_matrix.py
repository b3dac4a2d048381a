"""Exact log Z by a site-by-site transfer matrix along a spin ordering with a small frontier.

Conventions: natural log Z of the model at ``model.beta``; weights in energy units, so the
Boltzmann factor of a term is exp(beta * w * prod s). Fields, pair couplings (rank-one blocks
included, expanded) and k-spin terms are all handled: a term is applied when its last spin (in
the sweep order) is added, and every other spin of it is then still on the frontier.

The frontier after step t is the set of added spins that still couple to a spin not yet added.
The state is a vector over its 2^W configurations (bit value 1 is spin +1); adding spin v
multiplies in one small table exp(beta E(v, its frontier partners)), and a spin whose last
partner has been added is summed out. When a spin leaves at the same step, v takes its slot
(one fused pass, no growth). All weights are positive, so with a running log scale the sweep is
stable at every beta. Cost: about 2^W * n small multiply-adds; memory 2^W doubles.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np
from numba import njit

from evaluators.oracles.budget import check
from evaluators.oracles.base import NotApplicable, TooLarge
from evaluators.oracles.sweep_order import (check_order, frontier_spans, frontier_width, neighbour_pairs,
                                            rank_one_width_bound, sweep_order, vertex_separation)
from evaluators.oracles.transfer_log_kernels import run_log_range
from tasks.model import IsingModel

DEFAULT_MAX_WIDTH = 24
PARALLEL_MIN_STATES = 1 << 16   # smaller steps run on the calling thread
#: an entry of the rescaled linear sweep below this may have lost digits to underflow (the
#: largest entry is 1): the sweep starts again in the log domain
TINY = 1e-280

# -- numba kernels -----------------------------------------------------------------------------
# Each works in place on psi over a range [lo, hi) of its loop index (disjoint ranges touch
# disjoint entries) and returns the largest and the smallest entry it wrote (the smallest tells
# whether anything came near underflow: see TINY). Big steps are split over Python
# threads (the kernels release the GIL): OpenMP/prange regions were measured to stall ~10 ms
# each when the shared cores are oversubscribed, blocking threads do not.


@njit(cache=True, inline="always")
def _gather(x, slots):
    g = 0
    for j in range(slots.shape[0]):
        g |= ((x >> slots[j]) & 1) << j
    return g


@njit(cache=True)
def _extend_range(psi, W, k, slots, posk, table, lo, hi):
    """Add the new spin as slot W: psi[x + s 2^W] = psi[x] table[g(x), s]."""
    half = 1 << W
    sv = 1 << slots.shape[0]
    m, low = 0.0, np.inf
    for x in range(lo, hi):
        g = _gather(x, slots)
        p = psi[x]
        a = p * table[g]
        b = p * table[g | sv]
        psi[x] = a
        psi[x | half] = b
        m = max(m, max(a, b))
        low = min(low, min(a, b))
    return m, low


@njit(cache=True)
def _absorb_range(psi, W, k, slots, posk, table, lo, hi):
    """Add the new spin and sum it out at once (it has no later partners)."""
    sv = 1 << slots.shape[0]
    m, low = 0.0, np.inf
    for x in range(lo, hi):
        g = _gather(x, slots)
        a = psi[x] * (table[g] + table[g | sv])
        psi[x] = a
        m = max(m, a)
        low = min(low, a)
    return m, low


@njit(cache=True)
def _replace_range(psi, W, k, slots, posk, table, lo, hi):
    """The spin in slot k leaves and the new spin takes slot k (sum over the old value)."""
    bitk = 1 << k
    sv = 1 << slots.shape[0]
    gk = (1 << posk) if posk >= 0 else 0
    m, low = 0.0, np.inf
    for i in range(lo, hi):
        x0 = ((i >> k) << (k + 1)) | (i & (bitk - 1))
        x1 = x0 | bitk
        g0 = _gather(x0, slots)
        g1 = g0 | gk
        p0 = psi[x0]
        p1 = psi[x1]
        a = p0 * table[g0] + p1 * table[g1]
        b = p0 * table[g0 | sv] + p1 * table[g1 | sv]
        psi[x0] = a
        psi[x1] = b
        m = max(m, max(a, b))
        low = min(low, min(a, b))
    return m, low


@njit(cache=True)
def _remove_range(psi, W, k, slots, posk, table, lo, hi):
    """Sum out slot k; the spin in the top slot W-1 moves into slot k (slots, posk, table unused)."""
    tb = 1 << (W - 1)
    m, low = 0.0, np.inf
    if k == W - 1:
        for x in range(lo, hi):
            a = psi[x] + psi[x | tb]
            psi[x] = a
            m = max(m, a)
            low = min(low, a)
        return m, low
    bj = 1 << k
    for i in range(lo, hi):
        y = ((i >> k) << (k + 1)) | (i & (bj - 1))
        a = psi[y] + psi[y | bj]
        b = psi[y | tb] + psi[y | bj | tb]
        psi[y] = a
        psi[y | bj] = b
        m = max(m, max(a, b))
        low = min(low, min(a, b))
    return m, low


_KIND = {"extend": 0, "absorb": 1, "replace": 2, "remove": 3}


@njit(cache=True)
def _dispatch(kind, psi, W, k, slots, posk, table, lo, hi):
    if kind == 0:
        return _extend_range(psi, W, k, slots, posk, table, lo, hi)
    if kind == 1:
        return _absorb_range(psi, W, k, slots, posk, table, lo, hi)
    if kind == 2:
        return _replace_range(psi, W, k, slots, posk, table, lo, hi)
    return _remove_range(psi, W, k, slots, posk, table, lo, hi)


@njit(cache=True, nogil=True)
def _run_range(kind, psi, W, k, slots, posk, table, lo, hi):
    return _dispatch(kind, psi, W, k, slots, posk, table, lo, hi)


_N_THREADS = max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))
_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=_N_THREADS, thread_name_prefix="transfer-matrix")
    return _POOL


_NO_SLOTS = np.zeros(0, dtype=np.int64)
_NO_TABLE = np.ones(1)


def _run(kind: str, psi, W, k=0, slots=_NO_SLOTS, posk=-1, table=_NO_TABLE, log_domain=False) -> tuple[float, float]:
    """One step on psi (W state bits before the step): (largest, smallest) entry written; in the
    log domain (largest log written, -inf)."""
    if kind in ("extend", "absorb"):
        count = 1 << W
    elif kind == "replace" or k == W - 1:
        count = 1 << (W - 1)
    else:
        count = 1 << (W - 2)
    kernel = run_log_range if log_domain else _run_range
    args = (_KIND[kind], psi, W, k, slots, posk, table)

    def span(lo, hi):
        out = kernel(*args, lo, hi)
        return (float(out), -math.inf) if log_domain else (float(out[0]), float(out[1]))

    if count < PARALLEL_MIN_STATES or _N_THREADS == 1:
        return span(0, count)
    cuts = np.linspace(0, count, _N_THREADS + 1).astype(np.int64)
    futures = [_pool().submit(span, int(lo), int(hi)) for lo, hi in zip(cuts[:-2], cuts[1:-1])]
    parts = [span(int(cuts[-2]), int(cuts[-1]))] + [f.result() for f in futures]  # the caller takes the last share
    return max(p[0] for p in parts), min(p[1] for p in parts)


def transfer_matrix_applies(model: IsingModel, max_width: int = DEFAULT_MAX_WIDTH) -> str | None:
    """None when the sweep fits in ``max_width`` state bits, else the reason."""
    bound = rank_one_width_bound(model)
    if bound > max_width:
        return f"a rank-one block couples {bound + 1} spins all-to-all: frontier width >= {bound} > {max_width}"
    w = frontier_width(model)
    if w > max_width:
        return f"frontier width {w} > max_width {max_width}"
    return None


# -- the sweep -------------------------------------------------------------------------------


@lru_cache(maxsize=32)
def _spin_table(d: int) -> np.ndarray:
    """(2^(d+1), d+1) spins in {-1,+1}: row r has spin j = 2 * bit_j(r) - 1 (column d is the new spin)."""
    r = np.arange(1 << (d + 1), dtype=np.int64)
    return (2 * ((r[:, None] >> np.arange(d + 1)) & 1) - 1).astype(np.float64)


def _group_by_step(steps: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(permutation sorting items by step, start offsets of each step's run)."""
    perm = np.argsort(steps, kind="stable")
    return perm, np.searchsorted(steps[perm], np.arange(n + 1))


class _Underflow(ArithmeticError):
    """An entry of the linear sweep came near the bottom of the float range."""


def transfer_matrix_log_z(model: IsingModel, order=None, max_width: int = DEFAULT_MAX_WIDTH) -> float:
    """Exact natural log Z at model.beta by the site-by-site sweep along ``order`` (default sweep_order).

    The sweep runs on linear weights rescaled every step; if any entry came within ``TINY`` of
    the largest (cold: beta |J| of a few hundred), digits may have been lost to underflow and it
    runs again on logs (:mod:`evaluators.oracles.transfer_log_kernels`), exact at every beta.
    Raises TooLarge when the frontier exceeds ``max_width`` bits (memory 8 * 2^width bytes).
    """
    bound = rank_one_width_bound(model)
    if bound > max_width:
        raise TooLarge(f"a rank-one block couples {bound + 1} spins all-to-all: frontier width >= {bound} > {max_width}")
    order = sweep_order(model) if order is None else check_order(model, order)
    a, b = neighbour_pairs(model)
    width = vertex_separation(model.n, a, b, order)
    if width > max_width:
        raise TooLarge(f"frontier width {width} > max_width {max_width}")
    try:
        return _sweep(model, order, width, log_domain=False)
    except _Underflow:
        return _sweep(model, order, width, log_domain=True)


def _sweep(model: IsingModel, order: np.ndarray, width: int, log_domain: bool) -> float:
    n, beta = model.n, float(model.beta)
    a, b = neighbour_pairs(model)
    pos, last = frontier_spans(n, a, b, order)

    edges, J = model.couplings
    e_step = np.maximum(pos[edges[:, 0]], pos[edges[:, 1]])
    e_perm, e_start = _group_by_step(e_step, n)
    hot = [(np.asarray(t, dtype=np.int64), w) for t, w in model.higher_order if w != 0.0]
    hot_by_step: dict[int, list] = {}
    for t, w in hot:
        hot_by_step.setdefault(int(pos[t].max()), []).append((t, w))
    leaving = np.flatnonzero(last > pos)                       # spins that sit on the frontier a while
    l_perm, l_start = _group_by_step(last[leaving], n)
    h = model.fields

    psi = np.zeros(1 << width)                   # log domain: psi[0] = log 1
    if not log_domain:
        psi[0] = 1.0
    W = 0
    prev_max = 0.0 if log_domain else 1.0        # largest entry of the last step (its log in the log domain)
    log_scale: list[float] = []                  # summed exactly (math.fsum) at the end
    slot_of = np.full(n, -1, dtype=np.int64)
    slot_spin: list[int] = []

    def step(kind, k=0, slots=_NO_SLOTS, posk=-1, table=_NO_TABLE):
        return _run(kind, psi, W, k, slots, posk, table, log_domain)

    def remove(u: int) -> tuple[float, float]:
        nonlocal W
        j, top = int(slot_of[u]), W - 1
        out = step("remove", j)
        moved = slot_spin.pop()
        if j != top:
            slot_spin[j] = moved
            slot_of[moved] = j
        slot_of[u] = -1
        W -= 1
        return out

    for t in range(n):
        check("the transfer-matrix sweep" + (" in logs" if log_domain else ""))
        v = int(order[t])
        # partners of v in terms that end here, and the energy of those terms as a table
        idx = e_perm[e_start[t]:e_start[t + 1]]
        other = np.where(edges[idx, 0] == v, edges[idx, 1], edges[idx, 0])
        partners = list(dict.fromkeys(other.tolist()))
        step_hot = hot_by_step.get(t, [])
        for tt, _ in step_hot:
            partners += [u for u in tt.tolist() if u != v and u not in partners]
        d = len(partners)
        col = {u: j for j, u in enumerate(partners)}
        col[v] = d
        S = _spin_table(d)
        Jvec = np.zeros(d)
        np.add.at(Jvec, [col[u] for u in other.tolist()], J[idx])
        E = S[:, d] * (h[v] + S[:, :d] @ Jvec)
        for tt, w in step_hot:
            E = E + w * np.prod(S[:, [col[u] for u in tt.tolist()]], axis=1)
        logT = beta * E
        top_log = float(logT.max())
        if log_domain:
            table = logT - top_log - prev_max
            log_scale += [top_log, prev_max]
        else:
            table = np.exp(logT - top_log) / prev_max
            log_scale += [top_log, float(np.log(prev_max))]
        slots = slot_of[np.asarray(partners, dtype=np.int64)] if d else np.zeros(0, dtype=np.int64)

        gone = [int(u) for u in leaving[l_perm[l_start[t]:l_start[t + 1]]] if u != v]
        if gone:
            k = int(slot_of[gone[0]])
            hit = np.flatnonzero(slots == k)
            prev_max, low = step("replace", k, slots, int(hit[0]) if len(hit) else -1, table)
            slot_of[gone[0]] = -1
            slot_of[v], slot_spin[k] = k, v
            for u in gone[1:] + ([v] if last[v] == t else []):
                prev_max, low_u = remove(u)
                low = min(low, low_u)
        elif last[v] == t:
            prev_max, low = step("absorb", 0, slots, -1, table)
        else:
            prev_max, low = step("extend", 0, slots, -1, table)
            slot_of[v] = W
            slot_spin.append(v)
            W += 1
        if log_domain:
            if not np.isfinite(prev_max):
                raise FloatingPointError(f"transfer matrix: non-finite log weight at step {t} (beta={beta})")
        elif not (0.0 < prev_max < np.inf) or low < TINY * prev_max:
            raise _Underflow(t)
    assert W == 0
    final = float(psi[0]) if log_domain else float(np.log(psi[0]))
    return math.fsum([final, beta * model.constant] + log_scale)
