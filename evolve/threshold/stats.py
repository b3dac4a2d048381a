"""Success probabilities with confidence intervals, and where the curves of two sizes cross.

Estimators (per (L, p), over its n samples; :mod:`evaluators.decoding.sampling`): the Nishimori
estimator max_a P(a | S) and the 0/1 indicator, each a mean with its standard error s / sqrt(n)
(s the sample standard deviation). The crossings use the Nishimori estimator: on the Nishimori
line it has the same mean as the indicator and a variance 4.6-9x smaller (measured on the default
T21 run, L = 16-48, p = 0.100-0.118). Intervals printed are +-1.96 standard errors (95%).

Locating the crossing:

- "crossing" (the default): each size's curve P_L(p) is a weighted least-squares quadratic in p;
  the crossing of sizes L1 < L2 is the root of P_L2 - P_L1 inside the sampled range; its error is
  the standard deviation over a parametric bootstrap (each point redrawn from its mean +- its
  standard error). p_c is the crossing of the two largest sizes, the least biased by finite size.
- "fss": one fit of all sizes to P = sum_k a_k x^k, x = (p - p_c) L^(1/nu), with nu fixed (the
  Nishimori point's nu ~ 1.5 by default) or fitted; errors from the fit's covariance, scaled by
  chi^2 per degree of freedom when that exceeds 1.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054
BOOTSTRAP = 400
NU_NISHIMORI = 1.5          # nu at the Nishimori point of the 2D +-J model (Merz and Chalker 2002: 1.50(3))


@dataclass(frozen=True)
class Point:
    """The success probability at one (L, p): ``n`` samples, the Nishimori estimator and the
    indicator, each with its standard error."""

    L: int
    p: float
    n: int
    nishimori: float
    nishimori_se: float
    indicator: float
    indicator_se: float


def _mean_se(x: np.ndarray) -> tuple[float, float]:
    n = len(x)
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf


def make_point(L: int, p: float, nishimori: np.ndarray, indicator: np.ndarray) -> Point:
    m1, s1 = _mean_se(nishimori)
    m2, s2 = _mean_se(indicator)
    return Point(L, p, len(nishimori), m1, s1, m2, s2)


def points(results) -> list[Point]:
    """One Point per (L, p) from batch results (:class:`evolve.threshold.records.BatchResult`)."""
    from evaluators.decoding.sampling import Outcomes  # lazy: numba

    nish, ind = defaultdict(list), defaultdict(list)
    # in batch order, whatever order they finished in: the same sums to the last bit on every rerun
    for r in sorted(results, key=lambda r: (r.key.L, r.key.p, r.key.index)):
        o = Outcomes(r.log_p, r.true_class)
        nish[(r.key.L, r.key.p)].append(o.nishimori())
        ind[(r.key.L, r.key.p)].append(o.indicator())
    return [make_point(L, p, np.concatenate(nish[(L, p)]), np.concatenate(ind[(L, p)])) for L, p in sorted(nish)]


def curve(pts: list[Point], L: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(p, success, standard error) of size L, by p."""
    mine = sorted((q for q in pts if q.L == L), key=lambda q: q.p)
    return (np.array([q.p for q in mine]), np.array([q.nishimori for q in mine]),
            np.array([q.nishimori_se for q in mine]))


@dataclass(frozen=True)
class Crossing:
    L1: int
    L2: int
    p: float        # NaN when the fitted curves do not cross inside the sampled range
    err: float
    boot_missing: float = 0.0      # share of bootstrap draws without a crossing in range


def _quad(p: np.ndarray, y: np.ndarray, se: np.ndarray, centre: float) -> np.ndarray:
    deg = min(2, len(p) - 1)
    return np.polyfit(p - centre, y, deg, w=1.0 / se)


def _root(c1: np.ndarray, c2: np.ndarray, lo: float, hi: float, centre: float) -> float:
    diff = np.polysub(c2, c1)
    roots = [r.real + centre for r in np.roots(diff) if abs(r.imag) < 1e-12 and lo <= r.real + centre <= hi]
    if not roots:
        return math.nan
    mid = 0.5 * (lo + hi)
    return float(min(roots, key=lambda r: abs(r - mid)))


def crossing(pts: list[Point], L1: int, L2: int, seed: int = 0) -> Crossing:
    """Where the quadratic fits of sizes L1 and L2 cross, with a bootstrap error."""
    p1, y1, s1 = curve(pts, L1)
    p2, y2, s2 = curve(pts, L2)
    if len(p1) < 2 or len(p2) < 2:
        return Crossing(L1, L2, math.nan, math.nan, 1.0)
    lo, hi = max(p1.min(), p2.min()), min(p1.max(), p2.max())
    centre = 0.5 * (lo + hi)
    best = _root(_quad(p1, y1, s1, centre), _quad(p2, y2, s2, centre), lo, hi, centre)
    rng = np.random.default_rng([seed, L1, L2])
    boots = np.array([_root(_quad(p1, y1 + s1 * rng.standard_normal(len(y1)), s1, centre),
                            _quad(p2, y2 + s2 * rng.standard_normal(len(y2)), s2, centre), lo, hi, centre)
                      for _ in range(BOOTSTRAP)])
    ok = boots[np.isfinite(boots)]
    err = float(ok.std(ddof=1)) if len(ok) > 2 else math.nan
    return Crossing(L1, L2, best, err, 1.0 - len(ok) / len(boots))


def crossings(pts: list[Point], seed: int = 0) -> list[Crossing]:
    """Crossings of consecutive sizes."""
    sizes = sorted({q.L for q in pts})
    return [crossing(pts, a, b, seed) for a, b in zip(sizes, sizes[1:])]


@dataclass(frozen=True)
class ScalingFit:
    p_c: float
    p_c_err: float
    nu: float
    nu_err: float           # 0 when nu was held fixed
    chi2_dof: float
    coeffs: tuple[float, ...]


def fss_fit(pts: list[Point], nu: float | None = NU_NISHIMORI, degree: int = 2) -> ScalingFit:
    """Fit every point to sum_k a_k x^k, x = (p - p_c) L^(1/nu); ``nu`` None fits it too."""
    from scipy.optimize import least_squares  # lazy

    L = np.array([q.L for q in pts], dtype=float)
    p = np.array([q.p for q in pts])
    y = np.array([q.nishimori for q in pts])
    se = np.array([q.nishimori_se for q in pts])
    free_nu = nu is None

    def unpack(theta):
        return theta[0], (theta[1] if free_nu else nu), theta[(2 if free_nu else 1):]

    def residuals(theta):
        pc, v, a = unpack(theta)
        x = (p - pc) * L ** (1.0 / v)
        return (np.polyval(a[::-1], x) - y) / se

    pc0 = float(np.average(p, weights=1 / se ** 2))
    x0 = (p - pc0) * L ** (1.0 / (nu or NU_NISHIMORI))
    a0 = np.polyfit(x0, y, degree, w=1 / se)[::-1]
    theta0 = np.concatenate([[pc0], [NU_NISHIMORI] if free_nu else [], a0])
    fit = least_squares(residuals, theta0, x_scale="jac")
    dof = max(1, len(y) - len(theta0))
    chi2 = float(np.sum(fit.fun ** 2)) / dof
    try:
        cov = np.linalg.inv(fit.jac.T @ fit.jac) * max(1.0, chi2)
        errs = np.sqrt(np.diag(cov))
    except np.linalg.LinAlgError:
        errs = np.full(len(theta0), math.nan)
    pc, v, a = unpack(fit.x)
    return ScalingFit(float(pc), float(errs[0]), float(v), float(errs[1]) if free_nu else 0.0, chi2,
                      tuple(float(c) for c in a))


def trend(pts: list[Point], p: float, small: int, large: int) -> tuple[float, float]:
    """(P_large - P_small, its standard error) at p: positive below p_c, negative above."""
    a = next(q for q in pts if q.L == small and q.p == p)
    b = next(q for q in pts if q.L == large and q.p == p)
    return b.nishimori - a.nishimori, math.hypot(a.nishimori_se, b.nishimori_se)
