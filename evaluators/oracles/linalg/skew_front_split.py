"""One large dense front of the one-triangle skew elimination with its dense updates shared by
threads (the fronts on the path to the root, which the subtree threads of
:mod:`evaluators.oracles.linalg.subtree_threads` cannot share: they run while the other cores idle).

The pivots are chosen, swapped and logged in this thread by the steps of
:mod:`evaluators.oracles.linalg.skew_front_half` (:func:`next_pivot`), exactly as in the serial kernel;
only a dense rank-2 update of a large active block is cut into row ranges of about equal work
(rows i < r have i entries each: boundaries na * sqrt(m / parts)), run by :func:`dense_rows`
(numba, no GIL) in this thread and the helpers, and its column maxima merged in row order. Every
entry is computed by the same code from the same operands, and the maxima keep the first one in
row order, so the front (pivots, logs, what remains) is the serial one bit for bit. A helper is
asked for each pivot anew (``alone()``), so a front shares its updates only
while no other task of the tree is running.

Why not numba ``prange``: a parallel region per pivot took 8-40x longer than the serial loop with
the cores loaded (docs/performance.md); here a pivot's update is one task per helper thread, and below
SPLIT_MIN_ROWS active rows (a few hundred microseconds of work in double-double) it stays in this
thread.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

from evaluators.oracles.linalg.skew_front_half import (dense_enough, dense_rows, finish_pivot, front_end, front_start,
                                                half_steps, merge_column_maxima, next_pivot, pivot_update)

#: a dense update of fewer active rows runs in one thread: the hand-over to the helper costs about
#: 90 us a pivot (submit and result), half an update of 300 rows in double-double (root front and
#: its larger child at load 1.4, best of 5: 0.46 s in one thread, 0.35 s from 256 rows, 0.31 s from
#: 384, 0.37 s from 512)
SPLIT_MIN_ROWS = 384


class FrontHelpers:
    """Helper threads for the dense updates of one front at a time."""

    def __init__(self, helpers: int):
        self.parts = helpers + 1
        self.pool = ThreadPoolExecutor(max_workers=helpers, thread_name_prefix="front-helper")

    def close(self) -> None:
        self.pool.shutdown(wait=True)


def row_bounds(na: int, parts: int) -> list[int]:
    """Row ranges [b[m], b[m+1]) of about equal work for a lower-triangle update of na rows."""
    return [0] + [int(na * math.sqrt(m / parts)) for m in range(1, parts)] + [na]


def eliminate_front_half_split(H, L, ext: bool, k: int, u: float, helpers: FrontHelpers | None,
                               alone: Callable[[], bool] | None = None):
    """:func:`evaluators.oracles.linalg.skew_front_half.eliminate_front_half` (same arguments, same
    result bit for bit) with the dense updates of at least SPLIT_MIN_ROWS active rows shared
    with `helpers` whenever alone() (asked per pivot; None: always) says that nothing else
    runs, so the helpers would find their cores idle."""
    st = front_start(H, k)
    isfs, tm, tc, pm, pc = st[0], st[8], st[9], st[10], st[11]
    na, s, c = H.shape[0], 0.0, 0.0
    parts = helpers.parts if helpers is not None else 1
    extra = [(np.zeros(na), np.full(na, -1, np.int64), np.zeros(na), np.full(na, -1, np.int64))
             for _ in range(parts - 1)]
    while parts > 1 and na - 2 >= SPLIT_MIN_ROWS:
        found, na, s, c, ph, pl, nz = next_pivot(H, L, ext, u, st, na, s, c)
        if not found:
            break
        if not dense_enough(nz, na) or (alone is not None and not alone()):
            pivot_update(H, L, ext, st, na, ph, pl, nz)
            continue
        b = row_bounds(na, parts)
        futures = [helpers.pool.submit(dense_rows, H, L, ext, na, ph, pl, b[m], b[m + 1], isfs, tm, tc, pm, pc,
                                       *extra[m - 1]) for m in range(1, parts)]
        dense_rows(H, L, ext, na, ph, pl, b[0], b[1], isfs, tm, tc, pm, pc, tm, tc, pm, pc)
        for m, future in enumerate(futures, start=1):
            future.result()
            merge_column_maxima(tm, tc, pm, pc, *extra[m - 1], b[m])
        finish_pivot(H, st, na, nz, True)
    na, s, c = half_steps(H, L, ext, u, st, na, s, c)
    front_end(H, L, ext, na)
    return s, na, st[1]
