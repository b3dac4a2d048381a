"""A ferromagnetic rank-one block: Z as a sum over the magnetisation.

One block (A/2)[(u.s)^2 - |u|^2] with u_i in {0, c} (c > 0; a gauge makes a Mattis vector so) and
fields: on the k-spin support the weight depends on the spins only through M = sum s_i, so

    Z = prod_{i off support} 2cosh(K_i) * sum_{j=0}^{k} W_j exp(A c^2 ((k - 2j)^2 - k) / 2)

with W_j the weight of the spin sets with j spins down: C(k, j) exp(H (k - 2j)) when every support
spin carries the same field H (O(n), log-binomials by lgamma), or the coefficients of
prod_i (e^(H_i) + e^(-H_i) z), built spin by spin in logs (O(k^2)) when the fields differ.
A log-sum-exp over the k + 1 terms keeps it exact at every temperature.
"""

from __future__ import annotations

import sys

import numpy as np
from scipy.special import gammaln
from search.derivation.solvers import register
from search.derivation.solvers.adapters import ModuleSolver

NAME = "magnetisation"
SUMMARY = "a sum over the magnetisation of a ferromagnetic rank-one (Curie-Weiss) block"
OPTION_SPACE: dict = {}
ORDER = 30                 # where a derivation search tries it among the solvers
CHEAP = True                 # its code is tried on every state the view holds
IMPORTS = """\
import numpy as np
from scipy.special import gammaln
"""


def _sol_magnetisation_lse(x):
    top = float(np.max(x))
    return top + float(np.log(np.sum(np.exp(x - top))))


def _sol_magnetisation(model, options):
    """log Z (without the model's shift) of one block with u in {0, c}, c > 0, plus fields."""
    if len(model["rank_one"]) != 1 or any(i.shape[1] > 1 for i, _ in model["terms"]):
        raise ValueError("the magnetisation sum needs one rank-one block and fields only")
    u, A = model["rank_one"][0]
    H = np.zeros(model["n"])
    for idx, w in model["terms"]:
        np.add.at(H, idx[:, 0], w)
    support = u != 0.0
    k = int(support.sum())
    c = float(u[support].max()) if k else 0.0
    if k and (np.any(u < 0.0) or not np.all(u[support] == c)):
        raise ValueError("the rank-one vector is not one positive value on its support (gauge it first)")
    off = np.abs(H[~support])
    total = float(np.sum(off + np.log1p(np.exp(-2.0 * off))))
    if k == 0:
        return total
    j = np.arange(k + 1, dtype=np.float64)
    M = k - 2.0 * j
    energy = 0.5 * A * c * c * (M * M - k)
    h = H[support]
    if np.all(h == h[0]):
        weights = gammaln(k + 1.0) - gammaln(j + 1.0) - gammaln(k - j + 1.0) + h[0] * M
    else:
        weights = np.full(k + 1, -np.inf)
        weights[0] = 0.0
        for i, hi in enumerate(h):
            up = weights[: i + 2] + hi
            down = np.r_[-np.inf, weights[: i + 1]] - hi
            weights[: i + 2] = np.logaddexp(up, down)
    return total + _sol_magnetisation_lse(weights + energy)


FUNCTIONS = (_sol_magnetisation_lse, _sol_magnetisation)
ENTRY = _sol_magnetisation


def applies(view) -> str | None:
    if view.kind != "model":
        return "there is no spin model yet"
    if not view.rank_one or view.has_pairs or view.max_order > 2:
        return "there is no single rank-one block (with fields only besides it)"
    if not view.rank_one_positive:
        return "the rank-one vector is not one positive value on its support (a gauge would make it so)"
    return None


def claims(view, options):
    fields = "O(n)" if view.uniform_block_fields else "O(n^2)"
    return (("exactly_solvable_other",), fields,
            "The couplings are one ferromagnetic rank-one block (Curie-Weiss form: A c^2 / 2 (M^2 - k)), so the "
            "weight depends on the spins only through the magnetisation M. Z is a sum over the k + 1 values of M "
            + ("with binomial weights C(k, j) exp(H M) (one field on every spin): O(n)." if fields == "O(n)" else
               "with weights built spin by spin from the fields: O(n^2).")
            + " Taken in logs, it is exact at every temperature.", 0)


register(ModuleSolver(sys.modules[__name__]))
