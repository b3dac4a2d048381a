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
q = exp(-2 (t2 - t1)). e0 is exact (:mod:`evaluators.oracles.planar_ground`: a sandwich between
the secant and Z >= exp(-t e0), else a minimum-weight T-join proved optimal; the slope rounded to
the lattice is not a proof, see there). Two certified evaluations at t1 < t2 (an elimination with a
running error bound, where the arithmetic still resolves the sum) then give, with
d = c(t1) - c(t2) >= 0: S(t2) <= q (e^d - 1) / (1 - q e^d) when q e^d < 1/2 (else the references
are not yet on the ground-state line), so log g lies in [F(t2) - S(t2), F(t2)], and for tau >= t2,
log Z(tau) = -tau e0 + log g + c(tau) with 0 <= c(tau) <= c(t2) <= S(t2).

The returned value is the midpoint of that bracket; the caller gets its half-width (plus the
evaluations' bounds) and refuses the value if it is not small. When no pair closes it, the reason
says which limit was met (the references' bounds, the line not reached, the ground state not
proved), in beta |J| of the unit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from evaluators.oracles.base import TooLarge
from evaluators.oracles.budget import OverBudget
from evaluators.oracles.planar_ground import sandwich_e0

#: largest integer multiple of the unit accepted (more spreads the weights beyond what the
#: reference evaluations can resolve)
MAX_MULTIPLE = 64
#: reference temperatures in units of the coupling unit (measured: the double-double elimination
#: with its running bound certifies 8 x 8 .. 16 x 16 +-J grids to ~1e-10 at 10 .. 16; a Delaunay
#: +-J glass of 1024 spins to 2e-10 at 20, where its E0 is proved by the sandwich)
REFERENCE_TAUS = (24.0, 20.0, 16.0, 14.0, 12.0, 10.0)
#: t2 - t1: the excitations left at t2 are bounded by exp(-2 * step) times those at t1
REFERENCE_STEP = 6.0
#: the weights exp(-2 tau m) stay inside float64 up to this tau m
MAX_TAU_M = 350.0


@dataclass(frozen=True)
class ColdLimit:
    """log Z at the requested unit tau (natural log), a bound on its absolute error (beyond the
    float64 rounding of -tau e0, a few ulp of log Z), and the ground-state energy e0 (units of
    tau: E0 = e0 * u); or, when no value: ``why`` the line was not certified."""
    log_z: float
    bound: float
    e0: int | None
    why: str = ""


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
                     tau: float, ground: Callable[[], int]) -> ColdLimit:
    """log Z at unit tau from certified evaluations at two reference units (see the module
    docstring). log_z_at(t) returns (log Z, bound on its absolute error) of the same model with
    K_e = sign(K_e) m_e t; ground() the minimum sum of m_e over wall sets (exact, or TooLarge).
    Reference pairs (t2 - REFERENCE_STEP, t2) are tried from the coldest t2 in REFERENCE_TAUS down;
    the first with the tighter bracket wins. A ColdLimit with log_z NaN and ``why`` when no pair
    closes it: references not certified, tau not beyond them, not yet on the ground-state line, or
    the ground state not proved."""
    top, total = int(multiples.max()), int(multiples.sum())
    cache: dict[float, tuple[float, float]] = {}
    exact: list[int] = []

    def at(t: float) -> tuple[float, float]:
        if t not in cache:
            cache[t] = log_z_at(t)
        return cache[t]

    def e0_for(t1: float, t2: float) -> int:
        found = sandwich_e0(*at(t1), *at(t2), t1, t2, total)
        if found is not None:
            return found
        if not exact:
            exact.append(2 * ground() - total)
        return exact[0]

    best, why = None, f"no reference temperature below beta|J| = {tau * top:.4g}"
    for t2 in REFERENCE_TAUS:
        t2 = min(t2, MAX_TAU_M / top)
        t1 = t2 - REFERENCE_STEP
        if not (tau > t2 and t1 > 0):
            continue
        try:
            limit, why_here = _bracket(at, e0_for, tau, t1, t2, top)
        except OverBudget:
            raise
        except TooLarge as exc:             # the ground state not proved: no pair can do better
            return ColdLimit(math.nan, math.inf, None, str(exc))
        if limit is None:
            why = why_here if best is None else why
            if why_here.startswith("the references"):
                break                       # a warmer pair is further from the line
            continue
        if best is None or limit.bound < best.bound:
            best = limit
        if best.bound <= 1e-10:
            break
    return best if best is not None else ColdLimit(math.nan, math.inf, None, why)


def _bracket(at, e0_for, tau: float, t1: float, t2: float, top: int) -> tuple[ColdLimit | None, str]:
    v2, b2 = at(t2)
    if not (math.isfinite(v2) and b2 <= 1e-9):
        return None, f"its running error bound at the reference beta|J| = {t2 * top:.3g} is {b2:.2g} (> 1e-9)"
    v1, b1 = at(t1)
    if not (math.isfinite(v1) and b1 <= 1e-9):
        return None, f"its running error bound at the reference beta|J| = {t1 * top:.3g} is {b1:.2g} (> 1e-9)"
    e0 = e0_for(t1, t2)
    d = (v1 + t1 * e0) - (v2 + t2 * e0)
    noise = b1 + b2 + 4e-16 * (abs(v1) + abs(v2) + abs(t2 * e0))
    q = math.exp(-2.0 * (t2 - t1))
    d_up = max(d, 0.0) + noise
    if d < -noise or q * math.exp(min(d_up, 700.0)) >= 0.5:
        return None, (f"the references at beta|J| = {t1 * top:.3g} and {t2 * top:.3g} are not yet on the "
                      f"ground-state line (E0 = {e0} units, exact; log Z + beta E0 still falls by {d:.3g} between "
                      "them: the states above the ground states still count there)")
    s2 = q * math.expm1(d_up) / (1.0 - q * math.exp(d_up))
    f2 = v2 + t2 * e0
    return ColdLimit(log_z=-tau * e0 + f2 - 0.5 * s2, bound=0.5 * s2 + b2, e0=e0), ""
