"""Independent spins: a model whose only terms are fields is a product of one-spin sums,

    log Z = sum_i log(2 cosh K_i)        (a spin without a field: log 2),

and its mean energy is energy_shift - (1/beta) sum_i K_i tanh K_i. This is where the change to
independent term variables (T13, the disorder averages) and the summing out of a whole tree end.
O(n), exact at every temperature (log 2cosh x = |x| + log1p(exp(-2|x|))).
"""

from __future__ import annotations

import sys

import numpy as np
from search.derivation.solvers import register
from search.derivation.solvers.adapters import ModuleSolver

NAME = "product"
SUMMARY = "a product of one-spin sums (fields only)"
OPTION_SPACE: dict = {}
ORDER = 10                 # where a derivation search tries it among the solvers
CHEAP = True                 # its code is tried on every state the view holds
IMPORTS = """\
import numpy as np
"""


def _sol_product_fields(model):
    """(n,) total field of each spin; ValueError when any term has two or more spins."""
    if model["rank_one"] or any(i.shape[1] > 1 for i, _ in model["terms"]):
        raise ValueError("the model has couplings: it is not a product of one-spin sums")
    H = np.zeros(model["n"])
    for idx, w in model["terms"]:
        np.add.at(H, idx[:, 0], w)
    return H


def _sol_product(model, options):
    """sum_i log 2cosh(K_i), the log Z of independent spins (without the model's shift)."""
    a = np.abs(_sol_product_fields(model))
    return float(np.sum(a + np.log1p(np.exp(-2.0 * a))))


def _sol_product_energy(model, options):
    """The mean energy of independent spins at the model's beta (> 0), energy shift included."""
    H = _sol_product_fields(model)
    return float(model["energy_shift"] - np.sum(H * np.tanh(H)) / model["beta"])


FUNCTIONS = (_sol_product_fields, _sol_product, _sol_product_energy)
ENTRY = _sol_product
ENERGY = _sol_product_energy


def applies(view) -> str | None:
    if view.kind != "model":
        return "there is no spin model yet"
    if view.max_order > 1 or view.rank_one:
        return "the model still has couplings"
    return None


def claims(view, options):
    return (("exactly_solvable_other",), "O(n)",
            "Only one-spin terms remain, so Z is a product of n one-spin sums 2 cosh(K_i), taken in logs: O(n), "
            "exact at every temperature.", 0)


register(ModuleSolver(sys.modules[__name__]))
