"""The planar Pfaffian's cold route: a value is returned only with a bound that vouches for it.
Not a template: helper functions that the planar_pfaffian template renders into its programs.

Conventions: couplings J in energy units, K_e = beta J_e, log Z natural (without the model's
energy constant); ``evaluate(beta)`` returns (log Z at that beta, a bound on its absolute error),
the double-double elimination with its running error bound (``skew_bounds``).

0. Without frustration (no face has an odd number of negative couplings) the empty wall set is the
   ground state's: every other wall set weighs exp(-2 beta |J|) per wall <= 1 against its 1, so the
   walls' sum is at least 1 and a sum of positive terms at every beta. The elimination at the
   requested beta is then the answer wherever its bound vouches, however cold: a weight that
   underflows float64 (beta |J| > 372) is below 1e-300 of that sum's leading 1 and stays below the
   rounding of log Z (a ferromagnet at beta |J| = 1250 on 1160 spins: bound 3e-9 with |log Z| 1.4e6).
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
   2b. Where no pair vouches (the first excited level, about n states 2u up, weighs about x n at the
   coldest reference: 1e-8 on 400 spins at beta|J| = 11, 4e-3 on 1024 at 7), up to
   EXTRAPOLATION_POINTS references half a unit apart bracket log g by the signs of P's divided
   differences (``_line_extrapolation``): the bracket's width falls by a factor x n per reference.
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
#: the ground-state line's references start at this beta max|J| and climb while vouched; where the
#: bound does not vouch there they step down towards REFERENCE_FLOOR (the bound shrinks as it warms:
#: a 32 x 32 +-J grid, 3.8e-6 at 12, vouched at 10)
REFERENCE_START = 12.0
REFERENCE_FLOOR = 6.0
#: colder than this (couplings on a lattice) the references come first and the requested
#: temperature only if they reach it: the elimination rarely vouches for more there
DIRECT_FIRST_BETA_J = 24.0
#: at most this many references in the extrapolation of the ground-state line (step 2b)
EXTRAPOLATION_POINTS = 7
#: largest integer multiple of the unit accepted as commensurate
MAX_MULTIPLE = 64
#: with more couplings than this the running bound has not vouched for a cold value (measured:
#: 4e-6 at beta |J| = 13 on a 2048-spin Delaunay glass, 6123 couplings; 3e14 on the 64 x 64
#: triangular antiferromagnet, 12033): refused at once instead of after minutes of eliminations
MAX_COUPLINGS = 6000


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


def _references(at, tau, top_m, failed=None):
    """Vouched (t, log Z, bound) below ``tau`` (units of the coupling unit), climbing from
    REFERENCE_START (or the first of REFERENCE_START - 2, - 4, .. REFERENCE_FLOOR vouched, when
    it is not; nothing when none is) in steps of 4 in beta max|J|; past a temperature that fails (``failed``: a (t, bound) known to fail, the
    requested temperature's) it bisects towards it, down to a gap of 1 (the bound tends to stay
    flat and then jump: 3e-11 at beta |J| = 19, 0.6 at 20 on a 32 x 32 +-J grid). Yields the
    ascending list after every reference added (the caller stops as soon as it can vouch)."""
    t = REFERENCE_START / top_m
    cap = min(tau, MAX_BETA_J / top_m)
    v, b = at(t)
    while not _vouched(v, b):
        t -= 2.0 / top_m                     # warmer: further from the line, but within reach
        if t * top_m < REFERENCE_FLOOR - 1e-9:
            return
        v, b = at(t)
    refs = [(t, v, b)]
    yield refs
    step = 4.0 / top_m
    while True:
        t0 = refs[-1][0]
        t_next = min(t0 + step, cap)             # (the requested temperature itself, when within reach)
        if failed is not None:
            t_next = min(t_next, 0.5 * (t0 + failed[0]))
        if t_next < t0 + 1.0 / top_m:
            return
        v, b = at(t_next)
        if not _vouched(v, b):
            failed = (t_next, b)
            continue
        refs.append((t_next, v, b))
        yield refs


def _line_extrapolation(at, e0, ts, y):
    """(low, high) bounds on log P(y x_1) from vouched evaluations at ``ts`` (descending: the coldest
    first, x_1 = exp(-2 ts[0]); units of the coupling unit) and the exact e0, for 0 <= y < 1, or
    (None, why): step 2b of the module docstring. With x = exp(-2 t), P(x) = Z e^(t e0) = g + g_1 x
    + g_2 x^2 + .. has nonnegative coefficients (g_k states 2uk above the ground states), so every
    divided difference of P on points >= 0 is >= 0. On the points y x_1 < x_1 < .. < x_j that says
    P(y x_1) lies above the polynomial through (x_i, P(x_i)) extrapolated to it when j is even and
    below it when j is odd: the bracket's width is of the order x_1 .. x_j g_j, so references half a
    unit apart close it where two (the pair's bracket, x_1 g_1) do not. log Z(tau) = -tau e0 + log P."""
    vals = [at(t) for t in ts]
    for t, (v, b) in zip(ts, vals):
        if not _vouched(v, b):
            return None, f"the elimination's running error bound at the reference t = {t:g} is {b:.2g}"
    F = [v + t * e0 for t, (v, _) in zip(ts, vals)]
    noise = 4e-16 * (max(abs(v) for v, _ in vals) + abs(ts[0] * e0))
    b0 = vals[0][1] + noise
    d = [0.0] + [F[i] - F[0] for i in range(1, len(ts))]
    err = [0.0] + [vals[i][1] + b0 for i in range(1, len(ts))]
    if any(d[i] < -err[i] for i in range(len(ts))):
        return None, "log Z + beta E0 rises towards the cold references (inconsistent with E0)"
    r = [math.exp(min(2.0 * (ts[0] - t), 700.0)) for t in ts]          # x_i / x_1 >= 1
    lo, hi = -math.inf, F[0] + b0                                          # j = 1: P(y x_1) <= P(x_1)
    for j in range(2, len(ts) + 1):
        lam = [math.prod((r[k] - y) / (r[k] - r[i]) for k in range(j) if k != i) for i in range(j)]
        low = 1.0 + sum(w * math.expm1(d[i] - math.copysign(err[i], w)) for i, w in enumerate(lam) if i)
        high = 1.0 + sum(w * math.expm1(d[i] + math.copysign(err[i], w)) for i, w in enumerate(lam) if i)
        if j % 2 == 0 and low > 0.0:
            lo = max(lo, F[0] - b0 + math.log(low))
        elif j % 2 == 1 and high > 0.0:
            hi = min(hi, F[0] + b0 + math.log(high))
    if not lo > -math.inf:
        return None, "the references are not yet on the ground-state line (the excited states still count there)"
    if lo > hi:
        return None, "the references contradict the ground-state line (E0 wrong?)"
    return (lo, hi), None


def _line_value(at, refs, e0, tau, top_m):
    """(log Z at tau, bound) from the coldest reference and the best warmer partner, or, when no pair
    vouches, from the extrapolation through references half a unit apart below it; or (None, why)."""
    t2, best, why = refs[-1][0], None, None
    for t1, _, _ in refs[-2::-1]:
        got, why = _line_bracket(at, e0, t1, t2, top_m)
        if got is not None:
            f2, s2, b2 = got
            if best is None or 0.5 * s2 + b2 < best[1]:
                best = (-tau * e0 + f2 - 0.5 * s2, 0.5 * s2 + b2)
    if best is not None and _vouched(*best):
        return best, None
    # references half a unit apart below the coldest (the warmer ones vouch more easily), with those found
    ts = sorted({t for t, _, _ in refs} | {t2 - k / top_m for k in (0.5, 1.0, 1.5, 2.0, 2.5, 3.0) if t2 - k / top_m > 0},
                reverse=True)
    picked = []
    for t in ts:                                      # lazily: every reference is an elimination
        if len(picked) == EXTRAPOLATION_POINTS:
            break
        if _vouched(*at(t)):
            picked.append(t)
    ts = picked
    if ts and ts[0] == t2:
        got, why_x = _line_extrapolation(at, e0, ts, math.exp(-2.0 * (tau - t2)))
        if got is None:
            why = why or why_x
        else:
            lo, hi = -tau * e0 + got[0], -tau * e0 + got[1]
            if best is None or 0.5 * (hi - lo) < best[1]:
                best = (0.5 * (lo + hi), 0.5 * (hi - lo))
    if best is None:
        return None, why
    if not _vouched(*best):
        return None, f"the ground-state line is bracketed only to {best[1]:.2g} from beta|J| = {t2 * top_m:.3g}"
    return best, None


def _sandwich_far(refs, total):
    """Whether the sandwich needs a reference well colder than the coldest so far: it closes once
    log g < 2 t, and F = log Z + t e0 (e0 at its upper bound, the secant) estimates log g."""
    (t1, v1, _), (t2, v2, _) = refs[-2], refs[-1]
    e0_up = 2 * math.floor(((v1 - v2) / (t2 - t1) + total) / 2.0) - total
    return (v2 + t2 * e0_up) / 2.0 > 1.5 * t2


def _ground_e0(ground, m, total):
    """(e0, "") from the proved minimum-weight T-join, or (None, why it was not proved)."""
    try:
        return 2 * ground(m) - total, ""
    except ArithmeticError as exc:
        return None, str(exc)


def _cold_log_z(evaluate, ground, beta, aJ, what, trusted, frustrated=True):
    """log Z at ``beta`` with a bound that vouches for it (steps 0 to 2 of the module docstring), or
    ArithmeticError naming the limit. ``frustrated``: whether any face has an odd number of
    negative couplings (without one, step 0 applies). ``evaluate(beta)``: (log Z, bound); ``ground(multiples)``: the
    exact minimum of sum m_e over wall sets (e0 = 2 walls - sum m); ``aJ``: |J| of every coupling;
    ``what``: the model in words; ``trusted``: the beta max|J| up to which the caller's unbounded
    route is exact (for the message)."""
    top = float(aJ.max(initial=0.0))
    if not frustrated:
        value, bound = evaluate(beta)
        if _vouched(value, bound):
            return value
        raise ArithmeticError(f"beta|J| = {beta * top:.4g} on {what} (no frustrated face): not certified here: the "
                              f"elimination's running error bound is {bound:.2g} in log Z (> {TOLERANCE:g})")
    if len(aJ) > MAX_COUPLINGS:
        raise ArithmeticError(f"beta|J| = {beta * top:.4g} on {what}: not certified here: beyond {MAX_COUPLINGS} "
                              f"couplings the elimination's running error bound vouches for nothing colder than "
                              f"beta|J| = {trusted:g} (measured 4e-6 in log Z at 13 on 6123 couplings, 3e14 on 12033); "
                              f"within this program's exact range: beta|J| <= {trusted:g}, or a smaller model")
    found = _commensurate(aJ)
    unit = found[0] if found is not None else 1.0
    cache = {}

    def at(t):
        if t not in cache:
            cache[t] = evaluate(t / unit)
        return cache[t]

    reasons, direct = [], None
    if beta * top <= (MAX_BETA_J if found is None else DIRECT_FIRST_BETA_J):
        value, bound = direct = at(beta * unit)
        if _vouched(value, bound):
            return value
        reasons.append(f"the elimination's running error bound there is {bound:.2g} in log Z (> {TOLERANCE:g})")
    elif beta * top > MAX_BETA_J:
        reasons.append(f"the weights exp(-2 beta |J|) leave double precision beyond beta|J| = {MAX_BETA_J:g}")
    if found is None:
        reasons.append("the couplings are not integer multiples of one unit, so no ground-state line applies")
        raise ArithmeticError(f"beta|J| = {beta * top:.4g} on {what}: not certified here: " + "; ".join(reasons)
                              + f"; within this program's exact range: beta|J| <= {trusted:g}, or a smaller model")
    m = found[1]
    tau, top_m, total = beta * unit, int(m.max()), int(m.sum())
    refs, why, e0, proof = [], None, None, None
    for refs in _references(at, tau, top_m, None if direct is None else (tau, direct[1])):
        if refs[-1][0] == tau:
            return refs[-1][1]               # vouched at the requested temperature itself
        if len(refs) < 2:
            continue
        e0 = e0 if e0 is not None else _sandwich(at, total, refs[-2][0], refs[-1][0])
        if e0 is None and proof is None and _sandwich_far(refs, total):
            e0, proof = _ground_e0(ground, m, total)      # the sandwich would need it colder: prove it now
        if e0 is not None:
            got, why = _line_value(at, refs, e0, tau, top_m)
            if got is not None:
                return got[0]                # vouched: no colder reference needed
    if not refs:
        why = (f"the elimination's running error bound is {at(REFERENCE_FLOOR / top_m)[1]:.2g} already at "
               f"beta|J| = {REFERENCE_FLOOR:g}")
    else:
        if len(refs) == 1:
            t1 = refs[0][0] - 2.0 / top_m
            refs = [(t1,) + at(t1)] + refs
        e0 = e0 if e0 is not None else _sandwich(at, total, refs[-2][0], refs[-1][0])
        if e0 is None and proof is None:
            e0, proof = _ground_e0(ground, m, total)
        if e0 is not None:
            got, why = _line_value(at, refs, e0, tau, top_m)
            if got is not None:
                return got[0]
        else:
            why = proof
    reasons.append(why)
    raise ArithmeticError(f"beta|J| = {beta * top:.4g} on {what}: not certified here: " + "; ".join(reasons)
                          + f"; within this program's exact range: beta|J| <= {trusted:g}, or a smaller model")


FUNCTIONS = (_vouched, _commensurate, _line_bracket, _line_extrapolation, _sandwich, _references, _line_value, _sandwich_far, _ground_e0,
             _cold_log_z)


def constants() -> str:
    """The module's constants as program text."""
    return "".join(f"{name} = {globals()[name]!r}\n"
                   for name in ("TOLERANCE", "MAX_BETA_J", "REFERENCE_START", "REFERENCE_FLOOR", "DIRECT_FIRST_BETA_J", "EXTRAPOLATION_POINTS", "MAX_MULTIPLE",
                                 "MAX_COUPLINGS"))
