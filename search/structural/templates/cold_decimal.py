"""The planar Pfaffian's cold route for couplings with no common unit: the domain-wall Pfaffian
eliminated in decimal arithmetic of as many digits as the temperature needs.
Not a template: helper functions that the planar_pfaffian template renders into its programs, on
top of ``skew_elimination`` (ordering, tree), ``skew_decimal`` (the Decimal fronts) and
``plane_dimers`` (the Kasteleyn orientation).

Why. A frustrated planar model whose couplings are not integer multiples of one unit (a Gaussian
glass; +-J couplings with continuous fields on the boundary, which a ghost spin makes planar) has
no ground-state line, and colder than beta|J| ~ 20 .. 25 the double-double elimination no longer
vouches for its value: a Schur complement entry of order x^(k+1), x = exp(-2 beta |J|), computed as
a difference of terms of order x^k keeps an error eps x^k, so fixed precision loses about
exp(3.5 beta |J|) (measured on +-J grids), and from beta |J| ~ 350 the weights leave float64's
exponent range altogether. Decimal (the C libmpdec) has an exponent range of 10^+-(10^18) and any
number of digits. Measured against the transfer matrix: a 16 x 16 Gaussian glass at beta|J| = 300
and a 12 x 12 +-J grid with continuous fields on its top row at beta|J| = 300 are right to 4e-12 in
log Z with 20 digits; a 16 x 16 +-J grid at beta|J| = 44 (degenerate couplings, the cancellation
above) is off by 8e-3 with 20 digits and right with 30. So digits beyond what float64 keeps are
needed only where exact cancellation happens, far fewer than 3.5 beta|J| / ln 10.

How it is trusted. The elimination runs at CD_DIGITS_BASE + CD_DIGITS_PER_BETA_J beta|J| / ln 10
digits (a 32 x 32 Gaussian glass at beta|J| = 580 needed 170: with 30 .. 113 it was off by 0.06 .. 70
in log Z), then CD_DIGITS_CHECK more, and then CD_DIGITS_GROWTH times more each time, until two consecutive runs agree within CD_AGREE:
rounding moves a run by about 10^-d times the growth of its elimination, so a run that agrees
with one 10^20 times finer is that close. Past CD_MAX_DIGITS the route gives up (ArithmeticError).

Cost. Every operation of the float route is a Decimal one, through numpy object arrays: measured
(one core) 0.35 s a run for a 16 x 16 grid, 2-3.5 s for 32 x 32 at 30 .. 50 digits, 12 s at 255. The route refuses up front a model whose first two runs would take longer than CD_MAX_SECONDS.
"""

from __future__ import annotations

import decimal
import math

import numpy as np

from search.structural.templates.plane_dimers import _kasteleyn_orientation
from search.structural.templates.skew_decimal import _sd_assemble_front, _sd_context, _sd_eliminate_front, _sd_pattern
from search.structural.templates.skew_elimination import (_dissection, _node_groups, _node_positions, _stored_pattern,
                                                          _tree_ranks)

#: the first run's digits: this, plus CD_DIGITS_PER_BETA_J x beta|J| / ln 10
CD_DIGITS_BASE = 30
CD_DIGITS_PER_BETA_J = 0.75
#: the second run's extra digits; later runs each take CD_DIGITS_GROWTH times the digits of the one before
CD_DIGITS_CHECK = 20
CD_DIGITS_GROWTH = 1.5
#: two consecutive runs' largest allowed difference in log |Pf| (the verifier's tolerance is 1e-6 and more)
CD_AGREE = 1e-10
#: the most digits the route takes
CD_MAX_DIGITS = 3000
#: seconds of one run: about this x (matrix nodes)^1.5 x (1 + digits / 80) (measured, one core)
CD_SECONDS_PER_NODE = 2.5e-6
#: the route refuses a model whose first two runs are predicted to take longer than this
CD_MAX_SECONDS = 120.0


def _cd_digits(beta_j):
    """The first run's digits for couplings up to beta|J| = ``beta_j``."""
    return CD_DIGITS_BASE + int(math.ceil(CD_DIGITS_PER_BETA_J * beta_j / math.log(10.0)))


def _cd_seconds(n_nodes, digits):
    """Predicted seconds of the first two runs (``digits`` and CD_DIGITS_CHECK more) for a matrix of
    ``n_nodes`` nodes."""
    return CD_SECONDS_PER_NODE * n_nodes ** 1.5 * (2.0 + (2 * digits + CD_DIGITS_CHECK) / 80.0)


def _cd_setup(n_nodes, edges, ranks, xy):
    """What every run shares, whatever its digits: the Kasteleyn orientation of the decorated graph
    (``_walls_log_z``'s domain walls: ``edges``, ``ranks``), the matrix pattern (``skew_decimal``'s
    ``_sd_pattern``: P, and ``order``, the stored entries' edge in (u->v edges, then v->u)), the nested
    dissection along the cold route's coordinates ``xy`` (known nodes, their coordinates, face groups)
    and each node's place in the elimination."""
    o = _kasteleyn_orientation(n_nodes, edges, ranks)
    u = np.where(o == 0, edges[:, 0], edges[:, 1])
    v = np.where(o == 0, edges[:, 1], edges[:, 0])
    P, order = _sd_pattern(np.r_[u, v], np.r_[v, u], n_nodes)
    pattern = _stored_pattern(P)
    known, known_xy, group = xy
    tree = _dissection(pattern, _node_positions(n_nodes, pattern, known, known_xy), _node_groups(pattern, group))
    return P, order, tree, _tree_ranks(tree, n_nodes)[0]


def _cd_weights(ids, dart_abs_k):
    """The edge weights, in the current decimal context: 1 where ``ids`` is 1.0 (a unit edge),
    exp(-2 dart_abs_k[k]) where it is 2 + k (dart k), evaluated once per distinct |K|."""
    k = np.rint(np.asarray(ids)).astype(np.int64) - 2
    w = np.empty(len(k), dtype=object)
    one, cache = decimal.Decimal(1), {}
    for e in range(len(k)):
        if k[e] < 0:
            w[e] = one
        else:
            a = float(dart_abs_k[k[e]])
            if a not in cache:
                cache[a] = decimal.Decimal(-2.0 * a).exp()
            w[e] = cache[a]
    return w


def _cd_log_abs_pfaffian(setup, ids, dart_abs_k, digits):
    """log |Pf A| (a float; -inf when singular) of the domain-wall matrix of ``setup`` (``_cd_setup``)
    with the weights of ``ids`` (``_cd_weights``), eliminated front by front along its dissection in
    ``digits`` digits."""
    P, order, tree, rank = setup
    n = P.shape[0]
    if n == 0:
        return 0.0
    if n % 2:
        return -math.inf
    with decimal.localcontext(_sd_context(digits)):
        w = _cd_weights(ids, dart_abs_k)
        data = np.concatenate([w, -w])[order]
        pos = np.full(n, -1, dtype=np.int64)
        updates, product, done_total = {}, decimal.Decimal(1), 0
        for t, (own, kids) in enumerate(tree):              # postorder: children first
            front, S, n_full = _sd_assemble_front(P, data, rank, pos, own, [updates.pop(c) for c in kids])
            pivots, perm, done = _sd_eliminate_front(S, n_full)
            for p in pivots:
                product *= p
            done_total += done
            updates[t] = (front[perm][done:], n_full - done, S[done:, done:].copy())
        if done_total != n or product == 0:
            return -math.inf
        return float(abs(product).ln())


def _cd_checked_log_pf(n_nodes, edges, ids, ranks, xy, dart_abs_k, beta_j):
    """(log |Pf A|, digits used) of the decorated graph's domain-wall matrix (``_walls_log_z``: edges,
    weight ids 1.0 for a unit edge and 2 + k for dart k of weight exp(-2 dart_abs_k[k]), Kasteleyn
    ranks, the cold route's coordinates ``xy``) at ``_cd_digits(beta_j)`` digits, CD_DIGITS_CHECK more,
    then CD_DIGITS_GROWTH times more each time, until two consecutive runs agree within CD_AGREE (module
    doc); ArithmeticError when the first two are predicted to exceed CD_MAX_SECONDS or no two agree
    within CD_MAX_DIGITS. ``beta_j``: beta max|J| of the model."""
    digits = _cd_digits(beta_j)
    predicted = _cd_seconds(n_nodes, digits)
    if predicted > CD_MAX_SECONDS:
        raise ArithmeticError(f"the decimal elimination of its {n_nodes} matrix nodes would take about "
                              f"{predicted:.0f} s (> {CD_MAX_SECONDS:.0f} s)")
    setup = _cd_setup(n_nodes, edges, ranks, xy)
    first = _cd_log_abs_pfaffian(setup, ids, dart_abs_k, digits)
    step = CD_DIGITS_CHECK
    while digits + step <= CD_MAX_DIGITS:
        second = _cd_log_abs_pfaffian(setup, ids, dart_abs_k, digits + step)
        if math.isfinite(second) and abs(second - first) <= CD_AGREE:
            return second, digits + step
        first, digits = second, digits + step
        step = int(math.ceil((CD_DIGITS_GROWTH - 1.0) * digits))
    raise ArithmeticError(f"the decimal elimination did not settle within {CD_MAX_DIGITS} digits")


FUNCTIONS = (_cd_digits, _cd_seconds, _cd_setup, _cd_weights, _cd_log_abs_pfaffian, _cd_checked_log_pf)


def constants() -> str:
    """The module's constants as program text."""
    return (f"CD_DIGITS_BASE = {CD_DIGITS_BASE!r}\nCD_DIGITS_PER_BETA_J = {CD_DIGITS_PER_BETA_J!r}\nCD_DIGITS_CHECK = {CD_DIGITS_CHECK!r}\nCD_AGREE = {CD_AGREE!r}\n"
            f"CD_DIGITS_GROWTH = {CD_DIGITS_GROWTH!r}\nCD_MAX_DIGITS = {CD_MAX_DIGITS!r}\n"
            f"CD_SECONDS_PER_NODE = {CD_SECONDS_PER_NODE!r}\nCD_MAX_SECONDS = {CD_MAX_SECONDS!r}\n")
