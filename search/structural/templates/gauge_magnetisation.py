"""Rank-one (Mattis) couplings: gauge to Curie-Weiss, then sum over the magnetisation.

A block -(a/2)[(u.s)^2 - |u|^2] with |u_i| = c on its k-spin support is mapped by the gauge
s_i -> sign(u_i) s_i to the Curie-Weiss model -(a c^2 / 2)(M^2 - k), M = sum of the gauged spins
(fields follow: h_i -> sign(u_i) h_i). Z depends on the spins only through M, so

    Z = 2^(n-k) prod_{i off support} cosh(beta h_i) * sum_j C(k, j) exp(beta a c^2 ((k - 2j)^2 - k) / 2)

without fields on the support: O(n) with log-binomials (``lgamma`` or cumulative logs) and a
log-sum-exp. With fields on the support the weight of each M is the coefficient of a product of
k binomials exp(beta h_i) z + exp(-beta h_i) / z, built spin by spin in log domain: O(k^2).
"""

from __future__ import annotations

import sys

import numpy as np
from scipy.special import gammaln

from search.structural.templates import Claims, render, register

NAME = "gauge_magnetisation"
#: the order in which the structural proposer tries templates when no plan is preferred by structure
ORDER = 10
OPTION_SPACE = {
    "binomial": ("lgamma", "cumulative_log"),
}
IMPORTS = """\
import numpy as np
from scipy.special import gammaln
"""


def _log_binomials(k, how):
    """log C(k, j) for j = 0..k."""
    j = np.arange(k + 1, dtype=np.float64)
    if how == "cumulative_log":
        steps = np.log(np.arange(k, 0, -1, dtype=np.float64)) - np.log(np.arange(1, k + 1, dtype=np.float64))
        return np.r_[0.0, np.cumsum(steps)]
    return gammaln(k + 1.0) - gammaln(j + 1.0) - gammaln(k - j + 1.0)


def _log_sum_exp(x):
    top = float(np.max(x))
    return top + float(np.log(np.sum(np.exp(x - top))))


def _method_log_z(edges, J, h, rank_one, positions, beta, n, options):
    """Natural log Z of one rank-one block (u, a) with |u_i| constant on its support, plus fields."""
    if len(np.asarray(edges).reshape(-1)) and np.any(np.asarray(J) != 0.0):
        raise ValueError("pair couplings besides the rank-one block: the magnetisation sum does not apply")
    if len(rank_one) != 1:
        raise ValueError("the magnetisation sum needs exactly one rank-one block")
    u, a = rank_one[0]
    u = np.asarray(u, dtype=np.float64).reshape(-1)
    h = np.asarray(h, dtype=np.float64).reshape(-1)
    support = u != 0.0
    k = int(support.sum())
    c = float(np.abs(u[support]).max()) if k else 0.0
    if k and not np.allclose(np.abs(u[support]), c, rtol=1e-12, atol=0.0):
        raise ValueError("the rank-one vector has entries of different magnitude")
    # spins off the support are free: 2 cosh(beta h)
    H_off = np.abs(beta * h[~support])
    total = float(np.sum(H_off + np.log1p(np.exp(-2.0 * H_off))))
    M = k - 2.0 * np.arange(k + 1)                     # magnetisation with j spins down (after the gauge)
    energy = 0.5 * beta * a * c * c * (M * M - k)       # -beta H of the block
    g = beta * h[support] * np.sign(u[support])         # gauged fields
    if not np.any(g != 0.0):
        return total + _log_sum_exp(_log_binomials(k, options.get("binomial", "lgamma")) + energy)
    # log of the coefficient of "j spins down" in prod_i (exp(g_i) + exp(-g_i) z), spin by spin
    coef = np.full(k + 1, -np.inf)
    coef[0] = 0.0
    for i, gi in enumerate(g):
        up = coef[: i + 2] + gi
        down = np.r_[-np.inf, coef[: i + 1]] - gi
        coef[: i + 2] = np.logaddexp(up, down)
    return total + _log_sum_exp(coef + energy)


FUNCTIONS = (_log_binomials, _log_sum_exp, _method_log_z)


def source(options: dict) -> str:
    return render(IMPORTS, FUNCTIONS)


def applies(view) -> str | None:
    if not view.rank_one:
        return "there is no rank-one (Mattis) coupling block"
    if view.has_pairs:
        return "pair couplings besides the rank-one block"
    if not view.rank_one_uniform:
        return "the rank-one vector is not +-c on its support, so the gauge does not give Curie-Weiss"
    return None


def claims(view, options: dict) -> Claims:
    fields = view.has_fields
    return Claims(
        tractable_class="gauge",
        complexity_O="O(n^2)" if fields else "O(n)",
        confidence=0.95,
        justification=("The couplings J_ij = xi_i xi_j form one rank-one (Mattis) block with a +-1 pattern. The gauge "
                       "s_i -> xi_i s_i maps it exactly onto the ferromagnetic Curie-Weiss model, whose energy depends "
                       "only on the magnetisation M = sum_i xi_i s_i. Z is then a sum over the n + 1 values of M with "
                       + ("weights built spin by spin from the gauged fields (O(n^2))." if fields else
                          "binomial weights C(n, (n - M)/2), taken in log domain: O(n).")),
        cost_rank=0,
    )


register(sys.modules[__name__])
