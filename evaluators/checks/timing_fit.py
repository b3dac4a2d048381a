"""Which growth class explains a candidate's measured running times.

Input: (n, seconds) pairs, n = number of spins, seconds = wall time of one call (several pairs
per n are allowed; the fastest is kept, since noise on a loaded machine only adds time).
Three models are fitted by least squares on log t:

    poly      log t = a + d log n                    (Growth("poly", d))
    exp_sqrt  log t = a + log n + c sqrt(n) log 2    (Growth("exp_sqrt", c))
    exp       log t = a + log n + c n log 2          (Growth("exp", c))

(the exponential models carry a factor n, the per-state work of an enumeration; it only
shifts their fitted rates, which the audit never compares.) The plausibility bounds below keep
an exponential model with a rate near 0 (which is then just n) from competing.

Robustness on a shared 2-core machine:

* cost does not fall as n grows: a size slower than a larger one is clipped to it, or dropped
  when more than 1.5 times slower (a load spike);
* times below ``min_seconds`` (2 ms) are timer and scheduler noise and are not fitted;
* a flat start (the two smallest sizes within a factor 1.5 in time although n grew by 1.5) is
  a fixed per-call overhead: it is subtracted, and only times at least ``overhead_factor``
  times that level are fitted;
* at least 3 fitted points spanning a factor 4 in n, or 4 points whose times span a factor
  100 (exponential costs climb steeply over a narrow range of n), and a rise in time of at
  least a factor 4; otherwise the fit is not usable;
* only models with plausible parameters compete (poly degree <= 8, exp_sqrt rate in
  [0.3, 6], exp rate in [0.3, 4]): on a narrow window an exponential looks locally like a
  polynomial of huge degree, and these bounds are what tells them apart there;
* ``growth`` (best reading) is the simplest model (poly < exp_sqrt < exp) whose residual sum
  of squares is within ``2 sigma^2`` of the best (sigma = 0.2, the log-noise we expect);
  ``established`` is the simplest within ``9 s^2`` (a 3 sigma margin, s^2 the larger of
  sigma^2 and the residual variance of the best model, since pre-asymptotic terms bend real
  timings more than noise does): what the timings prove beyond doubt. With 3-4 sizes over a factor 4-8 in n, n^3 and n 2^sqrt(n) can be hard
  to tell apart; the audit accuses only on ``established``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from evaluators.checks.growth import Growth

MIN_SECONDS = 2e-3
SIGMA = 0.2
PLAUSIBLE = {"poly": (-0.5, 8.0), "exp_sqrt": (0.3, 6.0), "exp": (0.3, 4.0)}
_LN2 = math.log(2.0)
PREFACTOR = 1.0      # degree of the polynomial factor of the exponential models
CHOOSE_MARGIN = 2.0  # in units of sigma^2: a more complex model must fit better by this much
PROOF_MARGIN = 9.0   # ... and by this much (3 sigma) before the timings count as proof


@dataclass(frozen=True)
class ModelFit:
    kind: str
    rate: float        # degree d or c in 2^(c sqrt n) / 2^(c n)
    rss: float         # residual sum of squares of log t
    r2: float
    rms: float = 0.0   # root mean square residual of log t per size

    def text(self) -> str:
        form = {"poly": f"n^{self.rate:.2f}", "exp_sqrt": f"2^({self.rate:.2f} sqrt n)",
                "exp": f"2^({self.rate:.3f} n)"}[self.kind]
        return f"{self.kind} {form} (R^2 {self.r2:.3f}, rms {self.rms:.2f})"


@dataclass(frozen=True)
class Fit:
    growth: Growth | None      # None when not usable
    quality: float             # R^2 of the chosen model on log t (0 when not usable)
    detail: str                # plain words: what was fitted, each model's R^2, why this one
    usable: bool
    points: tuple[tuple[int, float], ...] = ()          # (n, seconds) actually fitted
    models: tuple[ModelFit, ...] = field(default=(), repr=False)
    #: the simplest plausible model the data cannot reject beyond doubt (PROOF_MARGIN): what
    #: the timings establish, as opposed to ``growth``, their best reading
    established: Growth | None = None

    @property
    def span(self) -> str:
        return f"n = {self.points[0][0]}..{self.points[-1][0]}" if self.points else "no sizes"


def fit_growth(points: list[tuple[int, float]], min_seconds: float = MIN_SECONDS,
               overhead_factor: float = 3.0, sigma: float = SIGMA) -> Fit:
    """Fit the three growth models to (n, seconds) pairs and pick one (see the module doc)."""
    best: dict[int, float] = {}
    for n, t in points:
        if t is not None and math.isfinite(t) and t > 0 and n >= 1:
            best[int(n)] = min(t, best.get(int(n), math.inf))
    data = sorted(best.items())
    for i in range(len(data) - 2, -1, -1):  # cost never falls as n grows: a slower smaller size was load
        if data[i][1] > data[i + 1][1]:     # a spike (> 1.5x) is dropped, a small dip is clipped
            data[i] = (data[i][0], data[i + 1][1] if data[i][1] < 1.5 * data[i + 1][1] else math.nan)
    data = [(n, t) for n, t in data if not math.isnan(t)]
    if len(data) < 3:
        return _unusable(f"only {len(data)} timed size(s); at least 3 are needed", data)
    floor, overhead = min_seconds, 0.0
    (n0, t0), (n1, t1) = data[0], data[1]
    if n1 >= 1.5 * n0 and t1 < 1.5 * t0:  # flat start: a fixed per-call overhead
        overhead = min(t0, t1)
        floor = max(floor, overhead_factor * overhead)
    used = [(n, t - overhead) for n, t in data if t >= floor]
    why = f"times at or above {floor * 1e3:.1f} ms" + (
        f", less a fixed overhead of {overhead * 1e3:.1f} ms" if overhead >= 1e-4 else "")
    if len(used) < 3:
        return _unusable(f"only {len(used)} size(s) with {why}; the rest is timer noise or fixed overhead", data)
    ns = np.array([n for n, _ in used], dtype=float)
    ts = np.array([t for _, t in used], dtype=float)
    wide = ns[-1] / ns[0] >= 4.0
    steep = len(used) >= 4 and ts.max() / ts.min() >= 100.0
    if not (wide or steep):
        return _unusable(f"the {len(used)} sizes with {why} span only n = {used[0][0]}..{used[-1][0]}", data)
    if ts.max() / ts.min() < 4.0:
        return _unusable(f"times hardly grow over n = {used[0][0]}..{used[-1][0]} "
                         f"({ts.min() * 1e3:.1f}..{ts.max() * 1e3:.1f} ms): cost too small to resolve "
                         f"or dominated by a fixed overhead", data)
    y = np.log(ts)
    models = tuple(_fit_one(kind, x, y - (0 if kind == "poly" else PREFACTOR * np.log(ns))) for kind, x in (
        ("poly", np.log(ns)), ("exp_sqrt", np.sqrt(ns) * _LN2), ("exp", ns * _LN2)))
    plausible = [m for m in models if PLAUSIBLE[m.kind][0] <= m.rate <= PLAUSIBLE[m.kind][1]] or list(models)
    best_rss = min(m.rss for m in plausible)
    chosen = next(m for m in plausible if m.rss <= best_rss + CHOOSE_MARGIN * sigma ** 2)
    spread = max(sigma ** 2, best_rss / max(len(used) - 2, 1))  # misfit of the best model counts as noise
    sure = next(m for m in plausible if m.rss <= best_rss + PROOF_MARGIN * spread)
    detail = (f"fitted {len(used)} sizes n = {used[0][0]}..{used[-1][0]} ({why}): "
              + "; ".join(m.text() for m in models) + f"; chose {chosen.kind}")
    if sure is not chosen:
        detail += f" (but {sure.kind} is not ruled out beyond noise)"
    return Fit(_growth(chosen), chosen.r2, detail, True, tuple(used), models, _growth(sure))


def _growth(m: ModelFit) -> Growth:
    return Growth(m.kind, max(m.rate, 0.0))


def _fit_one(kind: str, x: np.ndarray, y: np.ndarray) -> ModelFit:
    A = np.stack([np.ones_like(x), x], axis=1)
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    resid = y - A @ coef
    rss = float(resid @ resid)
    tss = float(((y - y.mean()) ** 2).sum())
    return ModelFit(kind, float(coef[1]), rss, 1.0 - rss / tss if tss > 0 else 0.0, math.sqrt(rss / len(y)))


def _unusable(reason: str, data) -> Fit:
    return Fit(None, 0.0, f"timings not usable: {reason}", False, tuple(data))
