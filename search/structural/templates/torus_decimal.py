"""The four-Pfaffian torus class sums in decimal arithmetic of a chosen precision (``skew_decimal``):
the route of the torus_pfaffian programs for what the double-double one cannot give, a class far
below the likeliest (its four-sector sum cancels to 1e-30 .. 1e-5000 of the largest sector) or
weights exp(-2|K|) below 2^-500 (their products leave float64's range inside the elimination).

Not a template: helper functions that the torus_pfaffian solver renders into its programs, on top
of ``torus_tjoin`` (the gadget graph, its Kasteleyn orientation, the class signs), ``skew_elimination``
and ``skew_decimal``.

The weights are exp(log x) evaluated in the working precision (no underflow: Decimal's exponent range
is 10^+-(10^18)), the sectors' matrices share one pattern, the wrap edges' ports are the root of the
dissection (the v-wrap ports eliminated once per v-sector, the h-wrap ports once per sector, the rest once), and W_ab = (1/4) sum_s s1^a s2^b eps_ab Pf(A_s)
in Decimal. The rounding of each Pfaffian is about N 10^(1 - prec) of the largest (N matrix nodes,
times a margin for growth), so a class is resolved when it is well above that: the caller raises the
precision until it is. The part of the elimination the sectors share runs in TD_SHARED_DIGITS.
"""

from __future__ import annotations

import decimal

import numpy as np

from evaluators.oracles.torus_tjoin import _tt_graph, _tt_kasteleyn, _tt_matching_sign, _tt_reference_joins
from search.structural.templates.skew_decimal import _sd_context, _sd_pattern, _sd_sector_pfaffians

#: the rounding of a Pfaffian, relative to the largest sector, taken as N 10^(1 - prec) times this (growth)
TD_GROWTH = 1.0e4
#: digits of the part of the elimination the four sectors share (``_sd_sector_pfaffians``: its rounding moves
#: each class relative to itself, so it needs the likeliest class's digits, not the cancellation's); measured
#: on T18 at 16 x 16, p = 6e-121 (a class 1e-479 of the largest, 508 digits): 60 and 100 agree with 510
TD_SHARED_DIGITS = 80


def _td_setup(log_xh, log_xv, t):
    """Everything of the four sector matrices that does not depend on the precision: the gadget graph
    (edges a-b, their Kasteleyn signs, log weights, which are wrap edges), the class signs eps (index
    2 a + b), the shared pattern and the dissection's coordinates, groups and root (the wrap ports)."""
    log_xh, log_xv = np.asarray(log_xh, dtype=np.float64), np.asarray(log_xv, dtype=np.float64)
    R, C = log_xh.shape
    t = np.asarray(t, dtype=np.int64).reshape(R, C)
    a, b, ka, kb, kind, N, base = _tt_graph(R, C, t)
    sign = _tt_kasteleyn(a, b, ka, kb, N)
    m = R * C
    r, c = np.divmod(np.arange(m), C)
    n_int = int(np.sum(kind == 0))
    logw = np.zeros(len(a))
    logw[kind == 1] = log_xh.ravel()
    logw[kind == 2] = log_xv.ravel()
    wrap_h = np.r_[np.zeros(n_int, bool), c == C - 1, np.zeros(m, bool)]
    wrap_v = np.r_[np.zeros(n_int, bool), np.zeros(m, bool), r == R - 1]
    sign_of = {}
    for i, j, s in zip(a.tolist(), b.tolist(), sign.tolist()):
        sign_of[(i, j)], sign_of[(j, i)] = s, -s
    eps = [int(_tt_matching_sign(R, C, t, base, N, h, v, sign_of)) for h, v in _tt_reference_joins(R, C, t)]
    P, order = _sd_pattern(np.concatenate([a, b]), np.concatenate([b, a]), N)
    group = np.repeat(np.arange(m), 6 + t.ravel())
    xy = np.stack([c, r], axis=1).astype(np.float64)[group]
    return {"sign": sign, "logw": logw, "wrap_h": wrap_h, "wrap_v": wrap_v, "eps": eps, "P": P, "order": order,
            "group": group, "xy": xy, "N": N, "ports_v": np.unique(np.concatenate([a[wrap_v], b[wrap_v]])),
            "ports_h": np.unique(np.concatenate([a[wrap_h], b[wrap_h]]))}


def _td_class_sums(setup, prec):
    """([W_ab as Decimal, index 2 a + b], their rounding bounds [Decimal]) in ``prec`` digits, the
    shared part in TD_SHARED_DIGITS (``_sd_sector_pfaffians``). A W at or below its bound is not
    resolved."""
    prec = int(prec)
    ctx = _sd_context(prec)
    with decimal.localcontext(ctx):
        known = {}
        w = np.empty(len(setup["logw"]), dtype=object)
        for k, lw in enumerate(setup["logw"].tolist()):
            if lw not in known:
                known[lw] = decimal.Decimal(lw).exp() if lw != 0.0 else decimal.Decimal(1)
            w[k] = known[lw]
        datas = []
        for s1, s2 in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
            f = setup["sign"] * np.where(setup["wrap_h"], s1, 1) * np.where(setup["wrap_v"], s2, 1)
            val = np.where(f > 0, w, -w)
            datas.append(np.concatenate([val, -val])[setup["order"]])
    # sector 2 i + j flips the h-wrap entries (among ports_h) by (-1)^i, the v-wrap ones by (-1)^j
    pfs = _sd_sector_pfaffians(setup["P"], datas, setup["xy"], setup["group"], setup["ports_v"], setup["ports_h"],
                               ctx, _sd_context(min(prec, TD_SHARED_DIGITS)))
    with decimal.localcontext(ctx):
        W = []
        for cls in range(4):
            ca, cb = cls >> 1, cls & 1
            coef = (1, (-1) ** cb, (-1) ** ca, (-1) ** (ca + cb))
            total = decimal.Decimal(0)
            for k in range(4):
                total += pfs[k] * (coef[k] * setup["eps"][cls])
            W.append(total / 4)
        unit = decimal.Decimal(setup["N"]) * decimal.Decimal(TD_GROWTH) * 10
        top = max(abs(p) for p in pfs)
        # the seams' stages: relative to the largest sector; the shared part: relative to the class
        bounds = [unit * (top * decimal.Decimal(10) ** -prec + abs(w) * decimal.Decimal(10) ** -min(prec, TD_SHARED_DIGITS))
                  for w in W]
    return W, bounds


FUNCTIONS = (_td_setup, _td_class_sums)


def constants() -> str:
    return f"TD_GROWTH = {TD_GROWTH!r}\nTD_SHARED_DIGITS = {TD_SHARED_DIGITS!r}\n"
