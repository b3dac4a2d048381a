"""The zero-field nearest-neighbour Ising model on an R x C torus with ANY couplings (a random-bond
torus: the dual model of toric-code decoding, T18) by the four-Pfaffian formula.

log Z = log 2 + sum_e |K_e| + log W_[U_0]: the unsatisfied edges of a configuration, on the dual torus,
are the T-joins of the frustrated plaquettes homologous to U_0 = {e : K_e < 0}, each reached by two
configurations; W_ab, the sum of prod exp(-2|K_e|) over the T-joins of class (a, b), comes from four
Kasteleyn Pfaffians, one per periodic/antiperiodic sector (evaluators/oracles/torus_tjoin.py: Fisher
gadgets, an orientation odd on every face of the torus drawing, class signs from explicit matchings),
each by skew elimination with complete pivoting, combined in logs with signs. O(N^3) for N ~ 6.5 n
dense nodes: O(n^3). That is the route up to DENSE_MAX_N spins; beyond it, the sparse one: the
multifrontal double-double skew elimination of the planar programs (skew_elimination) along a nested
dissection of the torus with the 4 L port nodes of the wrap edges as its root (the four sectors
differ only there), so everything else is eliminated once and the root front four times; each
Pfaffian with its sign (from its pivot pairs, skew_sign) as sign (hi + lo) 2^e, the sectors added in
double-double: O(n^1.5), 64 x 64 in 3-4 s.

Dense float64 resolves a class only to about 1e-13 of the largest one (the four sectors are added
with signs), the sparse double-double route to about 1e-27, and neither takes weights below 2^-500
(their products leave float64's range inside the elimination). For those (a logical error far below
the likely one, cold, or a large torus; p down to 1e-300) the program runs the same Pfaffians in
decimal arithmetic (torus_decimal, skew_decimal: libmpdec, exponents to 1e+-1e18) with the digits
the class needs (estimated from two warm double-double copies, doubled until the class is above its
rounding bound; the class sum is a polynomial with nonnegative coefficients in the weights, so digits
buy back exactly what the four-sector sum cancels): 12 x 12 at p = 1.4e-239 in about 2 s, 16 x 16 with
a class 1e-479 of the largest (508 digits) in about 10 s. On a torus with a side of at most 10 the
exact row transfer in log weights answers instead (faster there than thousands of digits).
Conventions: natural log Z without the model's shift; K_e the couplings with beta absorbed.
"""

from __future__ import annotations

import decimal
import math
import sys

import numpy as np

from evaluators.oracles import torus_tjoin as tt
from evaluators.oracles.torus_tjoin import _tt_class_logs, _tt_sectors
from search.derivation.runtime import _rt_pairs, _rt_torus_bonds
from search.derivation.solvers import register
from search.derivation.solvers.adapters import ModuleSolver
from search.structural.templates import row_transfer, skew_decimal, skew_elimination, skew_sign, small_arrays, torus_decimal
from search.structural.templates.double_double import _dd_add
from search.structural.templates.row_transfer import _method_log_z
from search.structural.templates.skew_sign import _skew_signed_pfaffians
from search.structural.templates.skew_decimal import _sd_context
from search.structural.templates.torus_decimal import TD_GROWTH, _td_class_sums, _td_setup

NAME = "torus_pfaffian"
SUMMARY = "four Kasteleyn Pfaffians (periodic/antiperiodic sectors) of the dual domain walls of a zero-field torus"
OPTION_SPACE: dict = {}
ORDER = 25                   # after kaufman (the homogeneous torus in O(L)), before the generic templates
#: not tried on every view state: at the view's largest sizes (L = 16 and beyond) a class below float64's
#: resolution has no exact fallback that fits (the row transfer's frontier), so "accepts every instance"
#: cannot hold there; applies() reads the structure instead (the view's typed nn_torus fact)
CHEAP = False
IMPORTS = """\
import decimal
import math

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import breadth_first_order, reverse_cuthill_mckee
"""
#: the dense route (numpy, O(n^3)) up to this many spins (the probes, 3 x 3 and 4 x 4), the sparse one beyond
DENSE_MAX_N = 16
#: weights exp(-2|K|) below this but not 0 leave float64's range in products of two inside the elimination
#: (values measured wrong at |K| = 184, p = 1e-160): the decimal route answers instead
MIN_WEIGHT = 2.0 ** -500
#: relative rounding per matrix node of a Pfaffian: float64 (dense), double-double (sparse)
ROUNDING = (2.2e-16, 2.0 ** -101)
#: the decimal route: its smallest precision (digits), and the class's relative rounding it stops at
DECIMAL_START = 40
DECIMAL_RESOLVED = 1e-10
#: below the resolution of the double-double sum, a torus with a side of at most this many spins takes the
#: row transfer in log weights instead (exact; about 2 s at 10 x 10 under load 15, 66 s at 11 x 11), whose
#: cost does not grow with the digits the decimal route would need (2300 at 6 x 6, p = 6e-289: 17 s)
TRANSFER_MAX_SIDE = 10
CONSTANTS = (f"_TT_XY = np.array({tt._TT_XY.tolist()})\nMAX_FRONTIER = {row_transfer.MAX_FRONTIER}\n"
             f"TRANSFER_MAX_SIDE = {TRANSFER_MAX_SIDE}\n"
             f"DENSE_MAX_N = {DENSE_MAX_N}\nMIN_WEIGHT = {MIN_WEIGHT!r}\nROUNDING = {ROUNDING!r}\n"
             f"DECIMAL_START = {DECIMAL_START}\nDECIMAL_RESOLVED = {DECIMAL_RESOLVED!r}\n" + small_arrays.CONSTANTS
             + skew_elimination.constants() + skew_decimal.constants() + torus_decimal.constants())


def _sol_torus_pfaffian_couplings(model):
    """(Kh, Kv) as R x C arrays of a zero-field nearest-neighbour torus model; ValueError otherwise."""
    try:
        R, C, Kh, Kv = _rt_torus_bonds(model)
    except ValueError as exc:
        raise ValueError(f"the four-Pfaffian formula needs a zero-field nearest-neighbour torus: {exc}") from None
    return Kh.reshape(R, C), Kv.reshape(R, C)


def _sol_torus_sparse_classes(log_xh, log_xv, t):
    """(log W (2 x 2), log max_s |Pf A_s|) as _tt_class_logs, by the sparse signed double-double
    eliminations (the wrap edges' ports last, the rest once) and a double-double four-sector sum."""
    R, C = log_xh.shape
    if int(np.sum(t)) % 2:
        return np.full((2, 2), -np.inf), -np.inf
    mats = []
    eps, _ = _tt_sectors(log_xh, log_xv, t, lambda A: mats.append(A) or (0.0, 1.0), True)
    group = np.repeat(np.arange(R * C), 6 + np.asarray(t, dtype=np.int64).ravel())
    r, c = np.divmod(np.arange(R * C), C)
    xy = np.stack([c, r], axis=1).astype(np.float64)[group]
    last = np.unique((abs(mats[1] - mats[0]) + abs(mats[2] - mats[0])).nonzero()[0])   # the wrap edges' ports
    pfs = _skew_signed_pfaffians(mats, xy, group, last)
    live = [k for k in range(4) if pfs[k][0] != 0.0]
    out = np.full((2, 2), -np.inf)
    if not live:                                  # every sector singular: the weights underflowed
        return out, -np.inf
    e_top = max(pfs[k][3] for k in live)
    top = max(math.log(pfs[k][1]) + pfs[k][3] * math.log(2.0) for k in live)
    for cls in range(4):
        ca, cb = cls >> 1, cls & 1
        coef = (1, (-1) ** cb, (-1) ** ca, (-1) ** (ca + cb))
        th, tl = 0.0, 0.0
        for k in live:
            sign, hi, lo, e = pfs[k]
            f = sign * coef[k] * eps[cls]
            th, tl = _dd_add(th, tl, f * math.ldexp(hi, e - e_top), f * math.ldexp(lo, e - e_top))
        if th > 0.0:
            out[ca, cb] = math.log(th) + math.log1p(tl / th) + e_top * math.log(2.0) - math.log(4.0)
    return out, top


def _sol_torus_decimal_estimate(log_xh, log_xv, t):
    """Estimated log W_ab - log max W (4 values, index 2 a + b) for the decimal route's first digits:
    extrapolated from two warm copies (every log weight scaled so the smallest is log 1e-2 and log
    1e-3, where the double-double route resolves ratios down to about 1e-15; in the cold a log ratio
    is linear in the scale: a difference of minimum weights, plus a log count). A class unresolved
    there counts as 1e-15 of the largest (an underestimate: the precision is raised if it is)."""
    lo = float(min(np.min(log_xh), np.min(log_xv)))
    nodes = 6 * np.size(t) + int(np.sum(t))
    seen = []
    for target in (math.log(1e-2), math.log(1e-3)):
        alpha = min(1.0, target / lo) if lo < 0.0 else 1.0
        W, top = _sol_torus_sparse_classes(alpha * log_xh, alpha * log_xv, t)
        ratio = np.full(4, -15.0 * math.log(10.0))
        for cls in range(4):
            w = W[cls >> 1, cls & 1]
            if np.isfinite(w) and nodes * ROUNDING[1] * 100.0 * math.exp(min(top - w, 700.0)) <= 1e-2:
                ratio[cls] = w - top
        seen.append((alpha, ratio - ratio.max()))
    (a1, r1), (a2, r2) = seen
    guesses = [r1 / a1, r2 / a2]                                    # the log ratio proportional to the scale
    if a1 != a2:
        guesses.append(r1 + (r1 - r2) / (a1 - a2) * (1.0 - a1))     # or linear with an offset (the log count)
    est = np.min(guesses, axis=0)
    return est - est.max()


def _sol_torus_decimal_log(log_xh, log_xv, t, a, b):
    """log W_ab by the decimal route (torus_decimal), the precision raised (doubled) until the class is
    above its rounding bound / DECIMAL_RESOLVED. It always gets there: W_ab >= W_max times the weight of a row
    loop and of a column loop (adding one to a T-join changes its class), so the digits needed are at
    most log10 of their inverse plus a margin; past that something is wrong and it says so."""
    setup = _td_setup(log_xh, log_xv, t)
    N = setup["N"]
    loops = -(float(np.max(np.sum(log_xh, axis=1))) + float(np.max(np.sum(log_xv, axis=0))))
    ceiling = int(loops / math.log(10.0) + math.log10(4.0 * N * TD_GROWTH / DECIMAL_RESOLVED)) + 20
    cls = 2 * a + b
    est = _sol_torus_decimal_estimate(log_xh, log_xv, t)[cls]
    prec = min(ceiling, int(max(DECIMAL_START, -est / math.log(10.0) + 20.0 + math.log10(N * TD_GROWTH))))
    while True:
        W, bounds = _td_class_sums(setup, prec)
        if W[cls] > 0 and bounds[cls] <= W[cls] * decimal.Decimal(DECIMAL_RESOLVED):
            return float(W[cls].ln(_sd_context(40)))
        if prec >= ceiling:
            raise ArithmeticError(f"the torus class sum ({a}, {b}) is not resolved at {prec} digits, the most its "
                                  f"ratio to the largest class can need (a row and a column loop)")
        prec = min(2 * prec, ceiling)


def _sol_torus_pfaffian(model, options):
    """log Z (without the model's shift) of a zero-field nearest-neighbour torus, any couplings."""
    Kh, Kv = _sol_torus_pfaffian_couplings(model)
    R, C = Kh.shape
    neg_h, neg_v = (Kh < 0).astype(np.int64), (Kv < 0).astype(np.int64)
    log_xh = -2.0 * np.abs(np.roll(Kv, -1, axis=1))     # dual h(r, c) crosses v(r, c + 1)
    log_xv = -2.0 * np.abs(np.roll(Kh, -1, axis=0))     # dual v(r, c) crosses h(r + 1, c)
    t = (neg_h + np.roll(neg_h, -1, axis=0) + neg_v + np.roll(neg_v, -1, axis=1)) % 2
    a, b = int(neg_v[:, 0].sum() % 2), int(neg_h[0, :].sum() % 2)
    shift = float(np.log(2.0) + np.abs(Kh).sum() + np.abs(Kv).sum())
    if int(np.sum(t)) % 2:
        raise ValueError("an odd number of frustrated plaquettes: not a torus of pair couplings")
    w = np.exp(-2.0 * np.abs(np.concatenate([Kh.ravel(), Kv.ravel()])))
    if not np.any(w < MIN_WEIGHT):
        # weights within float64's range (products of two too): the four Pfaffians in float64 (dense) or
        # double-double (sparse)
        dense = R * C <= DENSE_MAX_N
        W, top = _tt_class_logs(log_xh, log_xv, t) if dense else _sol_torus_sparse_classes(log_xh, log_xv, t)
        nodes = 6 * R * C + int(t.sum())
        # rounding of the signed four-sector sum, relative to this class: below 1e-7 (the verifier allows
        # 1e-6; the oracle answers only below 1e-9 with a measured spread >= N eps (N 2^-101 by its
        # double-double route), so wherever it answers, this does)
        unit = ROUNDING[0] if dense else ROUNDING[1]
        if np.isfinite(W[a, b]) and nodes * unit * 100.0 * np.exp(min(top - W[a, b], 700.0)) <= 1e-7:
            return shift + float(W[a, b])
    # a class below the resolution of that four-sector sum, or weights below 2^-500 (or 0 in float64): on a
    # narrow torus the exact row transfer in log weights, else the same Pfaffians in decimal arithmetic with
    # as many digits as the class needs
    if min(R, C) <= TRANSFER_MAX_SIDE:
        edges, K, H = _rt_pairs(model)
        return float(_method_log_z(edges, K, H, [], None, 1.0, model["n"], {"order": "min_frontier"}))
    return shift + _sol_torus_decimal_log(log_xh, log_xv, t, a, b)


FUNCTIONS = (tt._tt_graph, tt._tt_cycles, tt._tt_kasteleyn, tt._tt_reference_joins, tt._tt_matching_sign,
             tt._tt_sectors, tt._tt_pfaffian, tt._tt_class_logs, *row_transfer.FUNCTIONS, *skew_elimination.FUNCTIONS,
             *skew_sign.FUNCTIONS,
             *skew_decimal.FUNCTIONS, *torus_decimal.FUNCTIONS, _sol_torus_sparse_classes, _sol_torus_pfaffian_couplings,
             _sol_torus_decimal_estimate, _sol_torus_decimal_log, _sol_torus_pfaffian)
ENTRY = _sol_torus_pfaffian


def applies(view) -> str | None:
    if view.kind != "model":
        return "there is no spin model yet"
    if view.max_order > 2 or view.has_fields:
        return "terms on three or more spins, or fields"
    if view.nn_torus is not None:
        return f"not a zero-field nearest-neighbour torus ({view.nn_torus})"
    return None


def claims(view, options) -> tuple[tuple[str, ...], str, str, int]:
    """(class labels, complexity, justification, cost rank)."""
    return (("pfaffian",), "O(n^3)",
            "The model is a zero-field nearest-neighbour torus. Its domain walls on the dual torus are the T-joins "
            "of the frustrated plaquettes in the homology class of the antiferromagnetic bonds; the four "
            "periodic/antiperiodic Kasteleyn Pfaffians of the Fisher-gadget graph give the four class sums "
            "(Kasteleyn 1963), each Pfaffian by dense skew elimination with complete pivoting on the smallest tori "
            "(O(n^3), the bound claimed) and beyond by a sparse double-double skew elimination along a nested "
            "dissection of the torus with its sign tracked (O(n^1.5)), exact in logs while the class asked for is "
            "within the resolution of the signed four-sector sum (about 1e-17 of the largest); below that, or with "
            "weights under 2^-500, the same Pfaffians in decimal arithmetic with as many digits as the class needs "
            "(polynomial in n for a fixed ratio; on a torus of side <= 10 an exact row transfer instead).", 2)


register(ModuleSolver(sys.modules[__name__]))
