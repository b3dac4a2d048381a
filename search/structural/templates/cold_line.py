"""The planar Pfaffian's cold route: a value is returned only with a bound that vouches for it.
Not a template: helper functions that the planar_pfaffian template renders into its programs.

Conventions: couplings J in energy units, K_e = beta J_e, log Z natural (without the model's
energy constant); ``evaluate(beta)`` returns (log Z at that beta, a bound on its absolute error),
the double-double elimination with its running error bound (``skew_bounds``).

1. Directly: the elimination at the requested beta, if beta max|J| <= MAX_BETA_J (beyond it the
   weights exp(-2 beta |J|) underflow float64) and its bound is below TOLERANCE (plus 1e-14 of
   |log Z|, the float64 rounding of a large log Z).
2. The ground-state line, for couplings that are integer multiples m_e <= MAX_MULTIPLE of one unit
   u (the +-J glasses, the uniform antiferromagnet). Every energy is E0 + 2u k, so with
   tau = beta u, e0 = E0 / u, g the number of ground states and
   S(tau) = sum_{k>=1} (g_k / g) exp(-2 k tau) >= 0:
   log Z(tau) = -tau e0 + log g + log(1 + S(tau)), and S(t2) <= q S(t1) with q = exp(-2 (t2 - t1)).
   e0 must be exact, and the slope between two temperatures does not fix it: states 2u above a
   few ground states, numerous enough, look like a ground-state line of their own wherever they
   outweigh the ground states (a 32 x 32 triangular antiferromagnet read E0 = -1009 off runs at
   beta |J| = 10 and 12; its two ground states lie at -1023). It is proved either by a sandwich,
   when the vouched values leave one lattice point between
   e0 <= (log Z(t1) - log Z(t2)) / (t2 - t1) and e0 >= -log Z(t2) / t2 (so when log g < 2 t2),
   or by a minimum-weight T-join of the dual proved optimal (``ground_state``). With F(t) = log Z(t) + t e0 and d = F(t1) - F(t2) >= 0,
   S(t2) <= q (e^d - 1) / (1 - q e^d) when q e^d < 1/2 (else the references are not yet on the
   line), so log g is in [F(t2) - S(t2), F(t2)] and for tau > t2
   log Z(tau) = -tau e0 + log g + c with 0 <= c <= S(t2). The value returned is the middle of that
   bracket, its bound half the width plus the reference's bound. The references climb from
   beta max|J| = REFERENCE_START while the elimination vouches for them (``_references``): the
   coldest is t2, nearest the line; every warmer one is tried as t1.
3. Otherwise ArithmeticError, one line naming the limit met (in beta |J|) and what is in reach.

Nothing is read off runs that are not vouched for: the program this replaces read E0 and g off
unbounded runs at beta |J| = 10 and 12, and on the 32 x 32 triangular antiferromagnet it was wrong
by 60 in log Z at beta |J| = 20 (issue 36).
"""

from __future__ import annotations

import math

import numpy as np

#: a vouched value: its bound at most this (absolute, in log Z) plus 1e-14 |log Z|
TOLERANCE = 1e-9
#: beyond this beta |J| the weights exp(-2 beta |J|) leave the float64 range
MAX_BETA_J = 350.0
#: the ground-state line's references start at this beta max|J| and climb while vouched
REFERENCE_START = 12.0
#: largest integer multiple of the unit accepted as commensurate
MAX_MULTIPLE = 64


def _vouched(value, bound):
    return math.isfinite(value) and bound <= TOLERANCE + 1e-14 * abs(value)


def _commensurate(aJ):
    """(unit u, integer multiples m) with |J| = m u to 1e-12 relative, m <= MAX_MULTIPLE, or None
    (unit = the smallest nonzero |J| / d for d = 1 .. 8)."""
    positive = aJ[aJ > 0]
    if not len(positive):
        return None
    for d in range(1, 9):
        unit = float(positive.min()) / d
        ratio = aJ / unit
        m = np.rint(ratio)
        if np.all(np.abs(ratio - m) <= 1e-12 * np.maximum(m, 1.0)) and m.max() <= MAX_MULTIPLE:
            return unit, m.astype(np.int64)
    return None


def _line_bracket(at, e0, t1, t2, top_m):
    """(F(t2), S(t2) bound, reference bound) from vouched evaluations at t1 < t2 (units of the coupling
    unit; beta max|J| = t top_m) and the exact e0, or (None, why)."""
    v2, b2 = at(t2)
    if not _vouched(v2, b2):
        return None, f"the elimination's running error bound at the reference beta|J| = {t2 * top_m:g} is {b2:.2g}"
    v1, b1 = at(t1)
    if not _vouched(v1, b1):
        return None, f"the elimination's running error bound at the reference beta|J| = {t1 * top_m:g} is {b1:.2g}"
    d = (v1 + t1 * e0) - (v2 + t2 * e0)
    noise = b1 + b2 + 4e-16 * (abs(v1) + abs(v2) + abs(t2 * e0))
    if d < -noise:
        return None, f"log Z + beta E0 rises by {-d:.3g} between the references (inconsistent with E0)"
    q = math.exp(-2.0 * (t2 - t1))
    d_up = max(d, 0.0) + noise
    if q * math.exp(min(d_up, 700.0)) >= 0.5:
        return None, (f"the coldest references it vouches for, beta|J| = {t1 * top_m:g} and {t2 * top_m:g}, are not yet on the "
                      f"ground-state line (log Z + beta E0 still falls by {d:.3g} between them: the states above "
                      f"the ground states still count there)")
    return (v2 + t2 * e0, q * math.expm1(d_up) / (1.0 - q * math.exp(d_up)), b2), None


def _sandwich(at, total, t1, t2):
    """e0 when the vouched values at t1 < t2 leave one point of its lattice -total + 2k, else None:
    e0 <= (log Z(t1) - log Z(t2)) / (t2 - t1) (every state's weight falls by at least
    exp(-(t2 - t1) e0)) and e0 >= -log Z(t2) / t2 (Z >= exp(-t e0), one ground state at least)."""
    (v1, b1), (v2, b2) = at(t1), at(t2)
    if not (_vouched(v1, b1) and _vouched(v2, b2)):
        return None
    noise = 4e-16 * (abs(v1) + abs(v2))
    upper = (v1 - v2 + b1 + b2 + noise) / (t2 - t1)
    lower = -(v2 + b2 + noise) / t2
    k_lo, k_hi = math.ceil((lower + total) / 2.0), math.floor((upper + total) / 2.0)
    return 2 * k_lo - total if k_lo == k_hi else None


def _references(at, tau, top_m):
    """Vouched (t, log Z, bound) below ``tau`` (units of the coupling unit), climbing from
    REFERENCE_START (or, if the start is not vouched, up to two steps warmer): each step aims where
    the bound, growing about exponentially in t, reaches a quarter of the tolerance (2 .. 8 in
    beta max|J|); past a temperature that fails it bisects towards it, down to a gap of 2. Yields
    the ascending list after every reference added."""
    refs, t = [], REFERENCE_START / top_m
    cap = min(tau, MAX_BETA_J / top_m)
    for _ in range(3):                       # the start, else warmer
        v, b = at(t)
        if _vouched(v, b):
            refs.append((t, v, b))
            yield refs
            break
        t -= 2.0 / top_m
        if t * top_m < 4.0:
            return
    if not refs:
        return
    step, bad = 4.0 / top_m, math.inf
    while True:
        t_next = min(refs[-1][0] + step, 0.5 * (refs[-1][0] + bad), cap if cap < tau else tau - 1.0 / top_m)
        if t_next <= refs[-1][0] or (bad < math.inf and bad - refs[-1][0] < 2.0 / top_m):
            return
        v, b = at(t_next)
        if not _vouched(v, b):
            bad = t_next                     # bisect towards it
            continue
        refs.append((t_next, v, b))
        yield refs
        t0, b0 = refs[-2][0], refs[-2][2]
        rate = max((math.log(max(b, 1e-300)) - math.log(max(b0, 1e-300))) / (t_next - t0), 0.05 / top_m)
        step = min(max(math.log(0.25 * TOLERANCE / max(b, 1e-300)) / rate, 2.0 / top_m), 8.0 / top_m)


def _line_value(at, refs, e0, tau, top_m):
    """(log Z at tau, bound) from the coldest reference and the best warmer partner, or (None, why)."""
    t2, best, why = refs[-1][0], None, None
    for t1, _, _ in refs[-2::-1]:
        got, why = _line_bracket(at, e0, t1, t2, top_m)
        if got is not None:
            f2, s2, b2 = got
            if best is None or 0.5 * s2 + b2 < best[1]:
                best = (-tau * e0 + f2 - 0.5 * s2, 0.5 * s2 + b2)
    if best is None:
        return None, why
    if not _vouched(*best):
        return None, f"the ground-state line is bracketed only to {best[1]:.2g} from beta|J| = {t2 * top_m:.3g}"
    return best, None


def _cold_log_z(evaluate, ground, beta, aJ, what, trusted):
    """log Z at ``beta`` with a bound that vouches for it (steps 1 and 2 of the module docstring), or
    ArithmeticError naming the limit. ``evaluate(beta)``: (log Z, bound); ``ground(multiples)``: the
    exact minimum of sum m_e over wall sets (e0 = 2 walls - sum m); ``aJ``: |J| of every coupling;
    ``what``: the model in words; ``trusted``: the beta max|J| up to which the caller's unbounded
    route is exact (for the message)."""
    top = float(aJ.max(initial=0.0))
    reasons = []
    if beta * top <= MAX_BETA_J:
        value, bound = evaluate(beta)
        if _vouched(value, bound):
            return value
        reasons.append(f"the elimination's running error bound there is {bound:.2g} in log Z (> {TOLERANCE:g})")
    else:
        reasons.append(f"the weights exp(-2 beta |J|) leave double precision beyond beta|J| = {MAX_BETA_J:g}")
    found = _commensurate(aJ)
    if found is None:
        reasons.append("the couplings are not integer multiples of one unit, so no ground-state line applies")
        raise ArithmeticError(f"beta|J| = {beta * top:.4g} on {what}: not certified here: " + "; ".join(reasons)
                              + f"; within this program's exact range: beta|J| <= {trusted:g}, or a smaller model")
    unit, m = found
    tau, top_m, total = beta * unit, int(m.max()), int(m.sum())
    cache = {}

    def at(t):
        if t not in cache:
            cache[t] = evaluate(t / unit)
        return cache[t]

    refs, why = [], None
    for refs in _references(at, tau, top_m):
        e0 = _sandwich(at, total, refs[-2][0], refs[-1][0]) if len(refs) > 1 else None
        if e0 is not None:
            got, why = _line_value(at, refs, e0, tau, top_m)
            if got is not None and got[1] <= 0.1 * TOLERANCE:
                return got[0]                # closed with margin: no colder reference needed
    if not refs:
        why = (f"the elimination's running error bound is {at(REFERENCE_START / top_m)[1]:.2g} already at "
               f"beta|J| = {REFERENCE_START:g}")
    else:
        if len(refs) == 1:
            t1 = refs[0][0] - 2.0 / top_m
            refs = [(t1,) + at(t1)] + refs
        e0 = _sandwich(at, total, refs[-2][0], refs[-1][0])
        try:
            e0 = 2 * ground(m) - total if e0 is None else e0
            got, why = _line_value(at, refs, e0, tau, top_m)
            if got is not None:
                return got[0]
        except ArithmeticError as exc:
            why = str(exc)
    reasons.append(why)
    raise ArithmeticError(f"beta|J| = {beta * top:.4g} on {what}: not certified here: " + "; ".join(reasons)
                          + f"; within this program's exact range: beta|J| <= {trusted:g}, or a smaller model")


FUNCTIONS = (_vouched, _commensurate, _line_bracket, _sandwich, _references, _line_value, _cold_log_z)


def constants() -> str:
    """The module's constants as program text."""
    return "".join(f"{name} = {globals()[name]!r}\n"
                   for name in ("TOLERANCE", "MAX_BETA_J", "REFERENCE_START", "MAX_MULTIPLE"))
