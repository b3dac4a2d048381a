"""The four-Pfaffian torus (:mod:`evaluators.oracles.torus_pfaffian`) at scale: each sector's Kasteleyn
matrix eliminated sparsely along a nested-dissection order of the torus, with its sign, in
double-double.

Why it scales. The torus is not planar, but it has small separators all the same: the first cut
across both seams takes two columns of about R gadget ports each, the next one two half rows, and
below that the pieces are planar. The multifrontal skew elimination of the planar oracle
(:mod:`evaluators.oracles.linalg.skew_pfaffian`, here with the sign tracked:
:mod:`evaluators.oracles.linalg.skew_signed`) therefore costs O(N^1.5) for the N ~ 6.1 n nodes of the gadget
graph, the root front about 4 L nodes. Each vertex's 6 or 7 gadget nodes (held together by weight-1
edges) are one group of the dissection, at the vertex's (column, row).

Why double-double, and what it buys. The class sums come from a signed four-term sum,
W_ab = (1/4) sum_s s1^a s2^b eps_ab Pf(A_s), so a class far below the likeliest is resolved only to
the relative rounding of the Pfaffians times the ratio max|Pf| / W_ab. Pf(A_s) is kept as
sign (hi + lo) 2^e, the product of its pivots in double-double (a log in a double has an ulp of 1e-13
at |ln Pf| ~ 1000 already), and the four sectors are added in double-double: the rounding of each
Pfaffian is then about N 2^-101 (N ~ 25000 at L = 64: 1e-26) instead of N 2^-52 (6e-12), and a class
down to about 1e-17 of the likeliest is within reach instead of 6e-3. The weights themselves are
doubles (exp of the log weight, rounded): that moves a class sum by at most (edges of a T-join) *
2^-53 relative to itself, not to the largest class.

The rounding estimate. Every sector is eliminated twice, along the dissection of the torus and
along that of the torus shifted by a third of each side (other separators, other fronts, other
pivots); d, their largest disagreement relative to the largest |Pf| (at least N 2^-101), estimates
the relative rounding, and a class gets the error estimate d max|Pf| / W_ab (the oracle refuses it
above 1e-9, as the dense route does). A sector found singular (no nonzero pivot left: its value is
below the rounding of the others, Kaufman's Z4 at T_c) counts as 0; if every sector is singular (the
weights underflowed far below float64's range), nothing is resolved.

Cost, measured (docs/performance.md): L = 32 and 64 in well under a second of elimination; the setup
(the gadget graph, its orientation, the class signs; numpy and Python) is most of the call.
"""

from __future__ import annotations

import math

import numpy as np

from evaluators.oracles.budget import check
from evaluators.oracles.linalg.double_double import dd_add
from evaluators.oracles.linalg.skew_pfaffian import PfaffianSettings
from evaluators.oracles.linalg.skew_signed import signed_pfaffian_dd
from evaluators.oracles.torus_tjoin import _tt_sectors

#: floor of the relative rounding of one Pfaffian per node (double-double unit roundoff, with margin)
DD_ROUNDING_PER_NODE = 2.0 ** -101


def _coords(R: int, C: int, shift: tuple[int, int]) -> np.ndarray:
    r, c = np.divmod(np.arange(R * C), C)
    return np.stack([(c + shift[1]) % C, (r + shift[0]) % R], axis=1).astype(np.float64)


def _combine(values, coef) -> tuple[float, float, int]:
    """sum_s coef[s] * values[s] as (hi, lo, e): (hi + lo) 2^e in double-double; values[s] =
    (sign, hi, lo, e)."""
    live = [k for k, v in enumerate(values) if v[0] != 0.0]
    if not live:
        return 0.0, 0.0, 0
    top = max(values[k][3] for k in live)
    th, tl = 0.0, 0.0
    for k in live:
        sign, hi, lo, e = values[k]
        f = sign * coef[k]
        th, tl = dd_add(th, tl, f * math.ldexp(hi, e - top), f * math.ldexp(lo, e - top))
    return th, tl, top


def _log_dd(hi: float, lo: float, e: int) -> float:
    """ln((hi + lo) 2^e), -inf unless positive."""
    if not hi > 0.0:
        return -math.inf
    return math.log(hi) + math.log1p(lo / hi) + e * math.log(2.0)


def sparse_class_logs(log_xh, log_xv, t, threads: int | None = 1) -> tuple[np.ndarray, np.ndarray]:
    """(log W[a, b], relative error estimate per class) of the T-join class sums on the R x C torus
    (:mod:`evaluators.oracles.torus_tjoin`), by the sparse signed double-double eliminations above."""
    log_xh = np.asarray(log_xh, dtype=np.float64)
    R, C = log_xh.shape
    t = np.asarray(t, dtype=np.int64).reshape(R, C)
    if R < 3 or C < 3:
        raise ValueError("the torus needs both sides >= 3")
    if t.sum() % 2:
        return np.full((2, 2), -np.inf), np.full((2, 2), np.inf)
    size = 6 + t.ravel()
    group_ptr = np.concatenate([[0], np.cumsum(size)]).astype(np.int64)
    orders = (_coords(R, C, (0, 0)), _coords(R, C, (R // 3, C // 3)))
    runs: list[list] = [[], []]

    def sector(A):
        check("sparse torus Pfaffian")
        for k, coords in enumerate(orders):
            runs[k].append(signed_pfaffian_dd(A, group_ptr, coords, PfaffianSettings(extended=True, threads=threads))[:4])
        return 0.0, 1.0                                   # unused: the values are combined below, in double-double

    eps, _ = _tt_sectors(log_xh, log_xv, t, sector, sparse=True)
    N = int(group_ptr[-1])
    W, err = np.full((2, 2), -np.inf), np.full((2, 2), np.inf)
    top = max(_log_dd(v[1], v[2], v[3]) if v[0] != 0.0 else -math.inf for run in runs for v in run)
    if not np.isfinite(top):                              # every sector singular: the weights underflowed
        return W, err
    d = N * DD_ROUNDING_PER_NODE
    for one, two in zip(*runs):
        dh, dl, de = _combine([one, two], (1.0, -1.0))
        if dh < 0.0:
            dh, dl = -dh, -dl
        d = max(d, math.exp(min(_log_dd(dh, dl, de) - top, 700.0)))
    for cls in range(4):
        ca, cb = cls >> 1, cls & 1
        coef = np.array([1, (-1) ** cb, (-1) ** ca, (-1) ** (ca + cb)], dtype=np.float64) * eps[cls]
        hi, lo, e = _combine(runs[0], coef)
        W[ca, cb] = _log_dd(hi, lo, e) - math.log(4.0)
        if np.isfinite(W[ca, cb]):
            err[ca, cb] = d * math.exp(min(top - W[ca, cb], 700.0))
    return W, err
