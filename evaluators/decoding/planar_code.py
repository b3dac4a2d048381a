"""Exact class probabilities of the planar surface code under independent bit flips: the fermionic
column transfer of S. Bravyi, M. Suchara and A. Vargo, Phys. Rev. A 90, 032326 (2014), with the
Gaussian state held in pair-amplitude form (:mod:`evaluators.decoding.gaussian`).

The code (task T21's conventions, tasks/catalog/t21_surface_code.py). Checks on the vertices (r, c)
of an L x (L - 1) grid; N = L^2 + (L - 1)^2 qubits: the horizontal edge h(r, c) (index r L + c,
c = 0 .. L - 1) enters vertex (r, c) from the left, h(r, 0) and h(r, L - 1) dangle; the vertical
edge v(r, c) (index L^2 + r (L - 1) + c) joins (r, c) and (r + 1, c). An error E has syndrome S (the
vertices met an odd number of times) and class a = parity of its edges h(r, 0). The quantity is

    P(a, S) = sum over E with syndrome S and class a of p^|E| (1 - p)^(N - |E|)

(the joint probability; P(a | S) = P(a, S) / (P(0, S) + P(1, S))); everything here is its NATURAL
log.

The transfer. Cut the code between vertex columns: cut k crosses the L edges h(., k). The vector
psi_k(x), x in {0,1}^L the flips on those edges, is the total weight of the edges left of the cut
(the cut's own included) that meet the syndrome on every vertex left of it and give class a:

    psi_0 = D Pi_a |+>,   psi_(k+1) = D X^(s_k) prod_r (q + p X_r X_(r+1)) psi_k,   P(a, S) = <+| psi_(L-1)>

with q = 1 - p, |+> = sum_x |x>, Pi_a the projector on parity a, D = diag(q, p) on every bit and
X^(s_k) the syndrome of vertex column k. Under Jordan-Wigner every factor is Gaussian (D on-site,
X_r X_(r+1) a nearest-neighbour pair, X_r a Majorana string), so psi_k is a Gaussian state of L
modes: a reference configuration, its weight and an L x L matrix of pair weights. Pi_a |+> is the
uniform state on parity a (all pair weights 1, reference 0 or e_0); <+| psi is reached by
projecting with (1 + X_r X_(r+1)) / 2 on every bond, after which psi is uniform on its parity and
<+| psi = 2^(L-1) psi(x*). Cost: L (L - 1) pair gates of O(L^2), O(L^4) = O(N^2) per class; the
two classes are separate runs (no class is a difference of others, so the less likely one keeps
its precision).

Precision (measured in tests/test_planar_decoder.py against enumeration of every error,
constrained-sum elimination and the planar oracle; docs/threshold.md has the table): float64 for
p >= FLOAT64_MIN_P, double-double down to DD_MIN_P, and below it the exact small-p form
N log q + w log(p/q) + log(g_0 + g_1 p/q) read from two double-double runs (:func:`small_p_form`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from evaluators.decoding.gaussian import largest, pair_gate, pair_gate_dd, pivot, pivot_dd, scale, scale_dd
from evaluators.oracles.linalg.double_double import dd_add, dd_div

#: below this p the transfer runs in double-double (measured in float64 against the planar
#: oracle: 1e-11 in log P down to p = 1e-15 on L <= 16, but 1e-6 at p = 1e-6 on L = 32, where
#: equal weights make the Schur complements cancel)
FLOAT64_MIN_P = 1e-3
#: below this p the small-p form takes over from double-double (whose cancellations cost about
#: 1e-32 / p^2), anchored on double-double runs at SMALL_P_ANCHORS (see :func:`small_p_form`)
DD_MIN_P = 1e-12
SMALL_P_ANCHORS = (1e-11, 1e-12)
#: entries above this trigger a pivot: the reference follows the heaviest configuration
PIVOT_ABOVE = 1.0
LN2 = math.log(2.0)


def qubits(L: int) -> int:
    return L * L + (L - 1) * (L - 1)


def check_syndrome(L: int, syndrome) -> np.ndarray:
    """The syndrome as an (L, L - 1) int8 array of 0/1, or ValueError."""
    s = np.asarray(syndrome)
    if s.shape != (L, L - 1):
        raise ValueError(f"the syndrome of the distance-{L} planar code is an {L} x {L - 1} array, got shape {s.shape}")
    if not np.all((s == 0) | (s == 1)):
        raise ValueError("the syndrome holds only 0 and 1")
    return s.astype(np.int8)


@njit(cache=True)
def _weights(ref, log_ratio, f):
    """D's factors for the pair weights: f_r = exp(+-log(p/q)) by whether the reference has bit r."""
    for r in range(ref.shape[0]):
        f[r] = math.exp(-log_ratio if ref[r] else log_ratio)


@njit(cache=True)
def transfer_log_p(L, p, syn, a):
    """log P(a, S) in float64 (module docstring); NaN if a pivot met a non-positive pair weight
    (lost precision: the caller falls back to double-double)."""
    q = 1.0 - p
    log_p, log_q = math.log(p), math.log1p(-p)
    log_ratio = log_p - log_q                            # log(p/q) <= 0
    t = p / q
    A = np.ones((L, L))
    for r in range(L):
        for j in range(r + 1):
            A[r, j] = -1.0 if j < r else 0.0
    ref = np.zeros(L, dtype=np.int64)
    ref[0] = a
    u, v, w, f = np.empty(L), np.empty(L), np.empty(L), np.empty(L)
    log_ref = 0.0
    for c in range(L):
        if c > 0:
            for r in range(L - 1):
                log_ref += log_q + pair_gate(A, r, t, u, v)
            for r in range(L):
                ref[r] ^= syn[r, c - 1]
        for r in range(L):
            log_ref += log_p if ref[r] else log_q
        _weights(ref, log_ratio, f)
        scale(A, f)
        while True:
            g, i, j = largest(A)
            if abs(g) <= PIVOT_ABOVE:
                break
            log_ref += pivot(A, i, j, ref, u, v, w)
    for r in range(L - 1):                             # <+| = 2^(L-1) <uniform on the parity|
        log_ref += -LN2 + pair_gate(A, r, 1.0, u, v)
    return log_ref + (L - 1) * LN2


@njit(cache=True)
def transfer_log_p_dd(L, p, syn, a):
    """:func:`transfer_log_p` in double-double; t = p / q and the weight ratios are formed in
    double-double, so the weights are p's to 1e-32."""
    log_p, log_q = math.log(p), math.log1p(-p)
    qh, ql = dd_add(1.0, 0.0, -p, 0.0)
    th, tl = dd_div(p, 0.0, qh, ql)                    # p / q
    ih, il = dd_div(qh, ql, p, 0.0)                    # q / p
    Ah = np.ones((L, L))
    for r in range(L):
        for j in range(r + 1):
            Ah[r, j] = -1.0 if j < r else 0.0
    Al = np.zeros((L, L))
    ref = np.zeros(L, dtype=np.int64)
    ref[0] = a
    uh, ul, vh, vl, w = np.empty(L), np.empty(L), np.empty(L), np.empty(L), np.empty(L)
    fh, fl = np.empty(L), np.empty(L)
    log_ref = 0.0
    for c in range(L):
        if c > 0:
            for r in range(L - 1):
                log_ref += log_q + pair_gate_dd(Ah, Al, r, th, tl, uh, ul, vh, vl)
            for r in range(L):
                ref[r] ^= syn[r, c - 1]
        for r in range(L):
            log_ref += log_p if ref[r] else log_q
            fh[r], fl[r] = (ih, il) if ref[r] else (th, tl)
        scale_dd(Ah, Al, fh, fl)
        while True:
            g, i, j = largest(Ah)
            if abs(g) <= PIVOT_ABOVE:
                break
            log_ref += pivot_dd(Ah, Al, i, j, ref, uh, ul, vh, vl, w)
    for r in range(L - 1):
        log_ref += -LN2 + pair_gate_dd(Ah, Al, r, 1.0, 0.0, uh, ul, vh, vl)
    return log_ref + (L - 1) * LN2


def small_p_form(L: int, p: float, syn: np.ndarray, a: int) -> float:
    """log P(a, S) for p < DD_MIN_P. With x = p / q, P = q^N x^w G(x), G(x) = g_0 + g_1 x + g_2 x^2 + ...
    (g_k the number of class-a errors of weight w + k with syndrome S), so

        log P = N log q + w log x + c_0 + c_1 x + O(c_2 x^2),   c_0 = log g_0, c_1 = g_1 / g_0.

    Double-double runs at x_1, x_2 (SMALL_P_ANCHORS) give w (the nearest integer to their slope,
    which is w + c_1 (x_1 - x_2) / log(x_1 / x_2); refused unless within 0.05 of it), then c_0 and
    c_1. Errors at x <= 1e-12: the anchors' own in c_0 (and at most as much in c_1 x); the dropped
    c_2 terms, c_2 (x_1 + x_2) x and c_2 x^2, below 1e-12 for |c_2| <= 1e10 (c_1 reaches 1e5 on
    L = 32 draws at p = 0.15, measured, and c_2 is of order c_1^2 / 2)."""
    N = qubits(L)
    xs, hs = [], []
    for anchor in SMALL_P_ANCHORS:
        value = float(transfer_log_p_dd(L, anchor, syn, a))
        if math.isnan(value):
            raise PrecisionLost(f"L = {L}, class {a}: the double-double anchor at p = {anchor:g} lost a pivot")
        xs.append(math.log(anchor) - math.log1p(-anchor))
        hs.append(value - N * math.log1p(-anchor))
    slope = (hs[0] - hs[1]) / (xs[0] - xs[1])
    w = round(slope)
    if abs(slope - w) > 0.05:
        raise PrecisionLost(f"L = {L}, class {a}: the small-p anchors give a non-integer minimum weight ({slope!r})")
    x1, x2 = (math.exp(v) for v in xs)
    g1, g2 = hs[0] - w * xs[0], hs[1] - w * xs[1]       # c_0 + c_1 x at the anchors
    c1 = (g1 - g2) / (x1 - x2)
    c0 = g2 - c1 * x2
    log_x = math.log(p) - math.log1p(-p)
    return N * math.log1p(-p) + w * log_x + c0 + c1 * math.exp(log_x)


class PrecisionLost(ArithmeticError):
    """Even double-double met a non-positive pair weight: the value cannot be vouched for."""


def class_log_probability(L: int, p: float, syndrome, a: int, precision: str = "auto") -> float:
    """log P(a, S) for the distance-L planar code (L >= 2), 0 < p <= 1/2, class a in {0, 1}.

    precision: "auto" (float64 for p >= FLOAT64_MIN_P, double-double below it and wherever
    float64 lost a pivot, the small-p form below DD_MIN_P), or "float64" / "double-double" to
    force one transfer (tests, benchmarks). Raises PrecisionLost when the method chosen cannot
    vouch for its value."""
    if L < 2:
        raise ValueError(f"the planar code needs L >= 2, got {L}")
    if not (0.0 < p <= 0.5):
        raise ValueError(f"p must lie in (0, 1/2], got {p}")
    if a not in (0, 1):
        raise ValueError(f"the class is 0 or 1, got {a!r}")
    if precision not in ("auto", "float64", "double-double"):
        raise ValueError(f"precision is 'auto', 'float64' or 'double-double', got {precision!r}")
    syn = check_syndrome(L, syndrome)
    if precision == "auto" and p < DD_MIN_P:
        return small_p_form(L, p, syn, a)
    value = math.nan
    if precision == "float64" or (precision == "auto" and p >= FLOAT64_MIN_P):
        value = float(transfer_log_p(L, p, syn, a))
    if math.isnan(value) and precision != "float64":
        value = float(transfer_log_p_dd(L, p, syn, a))
    if math.isnan(value):
        raise PrecisionLost(f"L = {L}, p = {p:g}, class {a}: a pivot met a non-positive pair weight "
                            f"({precision} arithmetic)")
    return value


def class_log_probabilities(L: int, p: float, syndrome, precision: str = "auto") -> np.ndarray:
    """[log P(0, S), log P(1, S)]."""
    return np.array([class_log_probability(L, p, syndrome, a, precision) for a in (0, 1)])
