"""Comparing a candidate's returned value with an exact log Z.

The paper's criterion is |Z_eff - Z_ref| / max(|Z_ref|, 1e-300) < 1e-6. We evaluate the same
quantity in log domain, |expm1(log Z_eff - log Z_ref)|, which is exact where the paper's form
is and stays meaningful when Z itself overflows a float.
"""

from __future__ import annotations

import math

REL_TOL = 1e-6
#: extra allowance per unit of |log Z|: summing O(n) terms in float64 loses about this much
#: relative accuracy, so at n = 10^5 an honest log Z may differ from the oracle by ~1e-6 absolute.
ROUNDOFF_PER_LOG_Z = 1e-11


def relative_error(value: float | None, reference_log_z: float, returns_log: bool,
                   positive: bool = True) -> tuple[float | None, str | None]:
    """Relative error of Z implied by a candidate's value, or (None, reason) if it cannot be compared.

    value: what the candidate returned (Z for ``Z_efficient``, log Z for ``log_Z``)
    reference_log_z: exact natural log Z
    returns_log: True if ``value`` is a log Z
    positive: False for a task quantity that may be zero or negative (a disorder-averaged
        energy): then ``reference_log_z`` is the exact value itself and the error is
        |value - exact| / max(|exact|, 1e-300), the paper's form
    """
    if value is None:
        return None, "no value"
    if math.isnan(value):
        return None, "returned NaN"
    if not positive:
        if math.isinf(value):
            return None, f"returned {value}"
        return abs(value - reference_log_z) / max(abs(reference_log_z), 1e-300), None
    if returns_log:
        if math.isinf(value):
            return None, f"returned {value} for log Z"
        diff = value - reference_log_z
    else:
        if math.isinf(value):
            return None, "returned inf (Z overflows a float: define log_Z(params, n) to return log Z)"
        if value <= 0.0:
            return None, f"returned a non-positive Z ({value:.3g})"
        diff = math.log(value) - reference_log_z
    if diff > 700:
        return math.inf, None
    return abs(math.expm1(diff)), None


def tolerance(reference_log_z: float) -> float:
    """Allowed relative error of Z: the paper's 1e-6, plus float64 round-off that grows with |log Z|."""
    return REL_TOL + ROUNDOFF_PER_LOG_Z * abs(reference_log_z)


def passes(rel_err: float | None, reference_log_z: float = 0.0) -> bool:
    return rel_err is not None and rel_err < tolerance(reference_log_z)
