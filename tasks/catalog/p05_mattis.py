"""P05: Mattis spin glass, all-to-all rank-1 couplings J_ij = xi_i xi_j (StatMechBench-v0)."""

import numpy as np

from tasks.base import Gold, Task, get_array, get_float, sample_beta
from tasks.formula import Formula, Param, term
from tasks.model import IsingModel


class MattisGlass(Task):
    id = "P05"
    title = "Mattis spin glass, rank-1 disorder"
    canonical = """\
**Mattis-like spin glass on n spins** with all-to-all coupling.
J_{ij} = xi_i * xi_j for i != j, with xi a fixed +/- 1 pattern.
H(s) = -(1/2) * sum_{i!=j} J_{ij} s_i s_j = -(1/2) * [ (sum_i xi_i s_i)^2 - n ].
Z(beta, xi, n) in time polynomial in n."""
    paraphrased = """\
n binary variables x_1,...,x_n in {-1,+1} plus a fixed pattern vector xi.
For each x define M(x) = sum_i xi_i * x_i. Compute
Z(beta, xi, n) = sum over 2^n assignments of exp( (beta/2) * (M(x)^2 - n) )."""
    hint = "The coupling matrix J_{ij} = xi_i * xi_j is rank-1."
    gold = Gold("gauge", "O(n)")
    probe_sizes = (6, 10, 12)
    ladder_sizes = (100, 1000, 10_000)

    formula = Formula(
        shape=("n",),
        params=(Param("beta", "a real number"), Param("xi", "a list of n values in {-1, +1}")),
        terms=(term("xi[i] * xi[j] * s[i] * s[j]", ("i", "0", "n - 1"), ("j", "i + 1", "n - 1")),),
        size_note="n >= 2",
    )

    def sample_params(self, rng, n):
        return {"beta": sample_beta(rng), "xi": rng.choice([-1.0, 1.0], size=n).tolist()}

    def gauge(self, params, signs):
        return {**params, "xi": (np.asarray(params["xi"], dtype=float) * np.asarray(signs)).tolist()}

    def to_model(self, params, n):
        self.check_size(n)
        beta = get_float(params, "beta")
        xi = get_array(params, "xi", (n,), pm_one=True)
        # -(1/2) [(xi.s)^2 - n] is exactly one rank-one block with weight 1
        return IsingModel(n=n, terms=(), weights=np.zeros(0), beta=beta, rank_one=((xi, 1.0),))


TASK = MattisGlass()
