"""The cold limit of a planar model whose couplings are integer multiples of one unit, with a
rigorous error bracket, for temperatures where no fixed-precision elimination resolves the sum.

Why. With equal |J| (+-J glasses, uniform antiferromagnets) the domain-wall Pfaffian loses ground
states once exp(-4 beta |J|) falls below the unit roundoff (12 x 12 +-J at beta = 40: -ln 0.7 in
log Z in double and double-double alike), and from beta |J| ~ 350 its weights underflow. But there
the sum is already its ground-state line: every excitation costs a multiple of 2u.

How. Write K_e = m_e tau with integers m_e and unit tau (tau = beta u). Every energy is
-sum m_e + 2k in units of tau, so with F(tau) = log Z(tau) + tau e0 (e0 the ground-state energy
in these units, g the degeneracy) and c(tau) = F(tau) - log g = log(1 + S(tau)),
S(tau) = sum_k (g_k / g) exp(-2 k tau) >= 0 decreases in tau and S(t2) <= q S(t1) with
q = exp(-2 (t2 - t1)). Two certified evaluations at t1 < t2 (an elimination with a running error
bound, where the arithmetic still resolves the sum) give:

- e0: the slope -(log Z(t2) - log Z(t1)) / (t2 - t1) is e0 minus (c(t1) - c(t2)) / (t2 - t1) >= 0,
  rounded to its lattice; a wrong lattice point shows as d = F(t1) - F(t2) < 0 or d >= 4;
- with d = c(t1) - c(t2): S(t2) <= q (e^d - 1) / (1 - q e^d), so log g lies in
  [F(t2) - S(t2), F(t2)], and for tau >= t2, log Z(tau) = -tau e0 + log g + c(tau) with
  0 <= c(tau) <= c(t2) <= S(t2).

The returned value is the midpoint of that bracket; the caller gets its half-width (plus the
evaluations' bounds) and refuses the value if it is not small.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: largest integer multiple of the unit accepted (more spreads the weights beyond what the
#: reference evaluations can resolve)
MAX_MULTIPLE = 64
#: reference temperatures in units of the coupling unit (measured: the double-double elimination
#: with its running bound certifies 8 x 8 .. 16 x 16 +-J grids to ~1e-10 there)
REFERENCE_TAUS = (16.0, 14.0, 12.0, 10.0)
#: t2 - t1: the excitations left at t2 are bounded by exp(-2 * step) times those at t1
REFERENCE_STEP = 6.0
#: the weights exp(-2 tau m) stay inside float64 up to this tau m
MAX_TAU_M = 350.0


@dataclass(frozen=True)
class ColdLimit:
    """log Z at the requested unit tau (natural log), a bound on its absolute error (beyond the
    float64 rounding of -tau e0, a few ulp of log Z), and the ground-state energy e0 (units of
    tau: E0 = e0 * u)."""
    log_z: float
    bound: float
    e0: int


def commensurate_multiples(abs_k: np.ndarray, max_divisor: int = 8) -> tuple[float, np.ndarray] | None:
    """(unit, integer multiples m >= 0) with abs_k = m * unit to 1e-12 relative, or None when the
    magnitudes are not small integer multiples of one unit (unit = min positive |K| / d, d <= 8)."""
    positive = abs_k[abs_k > 0]
    if not len(positive):
        return None
    for d in range(1, max_divisor + 1):
        unit = float(positive.min()) / d
        ratio = abs_k / unit
        m = np.rint(ratio)
        if np.all(np.abs(ratio - m) <= 1e-12 * np.maximum(m, 1.0)) and m.max() <= MAX_MULTIPLE:
            return unit, m.astype(np.int64)
    return None


def cold_limit_log_z(log_z_at: Callable[[float], tuple[float, float]], multiples: np.ndarray,
                     tau: float) -> ColdLimit | None:
    """log Z at unit tau from certified evaluations at two reference units (see the module
    docstring). log_z_at(t) returns (log Z, bound on its absolute error) of the same model with
    K_e = sign(K_e) m_e t. Reference pairs (t2 - REFERENCE_STEP, t2) are tried from the coldest
    t2 in REFERENCE_TAUS down; the first with the tighter bracket wins. None when no pair closes
    it: references not certified, tau not beyond them, or not yet on the ground-state line."""
    top = int(multiples.max())
    cache: dict[float, tuple[float, float]] = {}

    def at(t: float) -> tuple[float, float]:
        if t not in cache:
            cache[t] = log_z_at(t)
        return cache[t]

    best = None
    for t2 in REFERENCE_TAUS:
        t2 = min(t2, MAX_TAU_M / top)
        t1 = t2 - REFERENCE_STEP
        if not (tau > t2 and t1 > 0):
            continue
        limit = _bracket(at, multiples, tau, t1, t2)
        if limit is not None and (best is None or limit.bound < best.bound):
            best = limit
        if best is not None and best.bound <= 1e-10:
            break
    return best


def _bracket(at, multiples: np.ndarray, tau: float, t1: float, t2: float) -> ColdLimit | None:
    v2, b2 = at(t2)
    if not (math.isfinite(v2) and b2 <= 1e-9):
        return None
    v1, b1 = at(t1)
    if not (math.isfinite(v1) and b1 <= 1e-9):
        return None
    total = int(multiples.sum())
    slope_e0 = -(v2 - v1) / (t2 - t1)
    k = round((slope_e0 + total) / 2.0)
    e0 = 2 * k - total
    d = (v1 + t1 * e0) - (v2 + t2 * e0)
    noise = b1 + b2 + 4e-16 * (abs(v1) + abs(v2) + abs(t2 * e0))
    if d < -noise:
        return None          # e0 too high: the references are not on one lattice point's line
    d_up = max(d, 0.0) + noise
    q = math.exp(-2.0 * (t2 - t1))
    if q * math.exp(d_up) >= 0.5:
        return None          # too far from the ground-state line (or e0 a lattice point too low)
    s2 = q * math.expm1(d_up) / (1.0 - q * math.exp(d_up))
    f2 = v2 + t2 * e0
    return ColdLimit(log_z=-tau * e0 + f2 - 0.5 * s2, bound=0.5 * s2 + b2, e0=e0)
