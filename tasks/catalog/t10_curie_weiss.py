"""T10: Curie-Weiss model (all-to-all J/n couplings) in a uniform field (StatMechBench-v1, Tier 1)."""

import numpy as np

from tasks.base import Gold, Task, get_float, sample_beta
from tasks.catalog._v1_common import V1_CITATION
from tasks.formula import Formula, Param, term
from tasks.model import IsingModel


class CurieWeiss(Task):
    id = "T10"
    title = "Curie-Weiss model in a uniform field"
    tier = 1
    citation = V1_CITATION
    canonical = """\
You are given the **Curie-Weiss (mean-field Ising) model** on n spins s_i in {-1,+1}:
every pair of spins is coupled with strength J/n, and a uniform field h acts on every spin.
H(s) = -(J/n) * sum_{i<j} s_i s_j - h * sum_i s_i
     = -(J/(2n)) * [ (sum_i s_i)^2 - n ] - h * sum_i s_i.
Implement
def Z_efficient(params: dict, n: int) -> float:
    # params has "beta" (float), "J" (float), "h" (float)
computing Z = sum_s exp(-beta * H(s)) in time polynomial in n."""
    paraphrased = """\
n binary variables x_1, ..., x_n in {-1,+1} and real constants J and h. For each
assignment let S(x) = sum_i x_i. Compute
Z(beta, J, h, n) = sum over all 2^n assignments x of
exp( (beta * J / (2 n)) * (S(x)^2 - n) + beta * h * S(x) )
in time polynomial in n."""
    hint = "The energy depends on the assignment only through sum_i s_i."
    gold = Gold("exactly_solvable_other", "O(n)")
    probe_sizes = (6, 10, 14)
    ladder_sizes = (100, 1000, 10_000, 100_000)

    formula = Formula(
        shape=("n",),
        params=(Param("beta", "a real number"), Param("J", "a real number"), Param("h", "a real number")),
        terms=(term("J / n * s[i] * s[j]", ("i", "0", "n - 1"), ("j", "i + 1", "n - 1")),
               term("h * s[i]", ("i", "0", "n - 1"))),
        size_note="n >= 2",
    )

    def sample_params(self, rng, n):
        return {"beta": sample_beta(rng), "J": float(rng.uniform(0.2, 2.0)), "h": float(rng.uniform(-0.5, 0.5))}

    def flip_fields(self, params):
        return {**params, "h": -float(params["h"])}

    def critical_params(self, params, n):
        """Mean field: beta_c J = 1 (the field, if any, is kept)."""
        return self.with_beta(params, 1.0 / get_float(params, "J")), "critical: beta J = 1 (mean field)"

    def to_model(self, params, n):
        self.check_size(n)
        beta, J, h = get_float(params, "beta"), get_float(params, "J"), get_float(params, "h")
        # -(J/n) sum_{i<j} s_i s_j is one rank-one block (ones, J/n): kept unexpanded, O(n) memory
        fields = [(i,) for i in range(n)] if h != 0.0 else []
        return IsingModel(n=n, terms=tuple(fields), weights=np.full(len(fields), h), beta=beta,
                          rank_one=((np.ones(n), J / n),))


TASK = CurieWeiss()
