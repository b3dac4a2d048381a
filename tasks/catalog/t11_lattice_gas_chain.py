"""T11: lattice gas on an open chain, nearest-neighbour attraction and chemical potential
(StatMechBench-v1, Tier 1)."""

import numpy as np

from tasks.base import Gold, Task, get_float, sample_beta
from tasks.catalog._v1_common import V1_CITATION
from tasks.formula import Formula, Param, term
from tasks.model import IsingModel, Lattice


class LatticeGasChain(Task):
    id = "T11"
    title = "1D lattice gas, nearest-neighbour attraction, chemical potential (open)"
    tier = 1
    citation = V1_CITATION
    canonical = """\
You are given a **1D lattice gas on an open chain of n sites**: occupation numbers
tau_i in {0, 1} (empty or occupied), a nearest-neighbour attraction eps between
occupied neighbours and a chemical potential mu.
Grand-canonical energy: E(tau) = -eps * sum_{i=0}^{n-2} tau_i tau_{i+1} - mu * sum_{i=0}^{n-1} tau_i.
Implement
def Z_efficient(params: dict, n: int) -> float:
    # params has "beta" (float), "eps" (float), "mu" (float)
that computes the grand partition function
Z = sum_{tau in {0,1}^n} exp(-beta * E(tau))
in time polynomial in n."""
    paraphrased = """\
n binary variables x_0, ..., x_{n-1} in {0, 1} in a row and real constants eps and mu.
Compute
Z(beta, eps, mu, n) = sum over all 2^n tuples x of
exp( beta * eps * sum_{i=0}^{n-2} x_i * x_{i+1} + beta * mu * sum_{i=0}^{n-1} x_i )
in time polynomial in n."""
    hint = "Occupation numbers are spins in disguise: tau = (1 + s) / 2."
    gold = Gold("transfer_matrix", "O(n)")
    probe_sizes = (6, 10, 14)
    ladder_sizes = (100, 1000, 10_000, 100_000)

    formula = Formula(
        shape=("n",),
        params=(Param("beta", "a real number"), Param("eps", "a real number"), Param("mu", "a real number")),
        terms=(term("eps * s[i] * s[i + 1]", ("i", "0", "n - 2")), term("mu * s[i]", ("i", "0", "n - 1"))),
        size_note="n >= 2",
        domain="01",
    )

    def sample_params(self, rng, n):
        return {"beta": sample_beta(rng), "eps": float(rng.uniform(0.2, 2.0)), "mu": float(rng.uniform(-2.0, 1.0))}

    def to_model(self, params, n):
        """tau_i = (1 + s_i)/2 turns eps tau_i tau_j + mu tau_i into spins:
        eps/4 (1 + s_i + s_j + s_i s_j) + mu/2 (1 + s_i). So J = eps/4 on each bond,
        h_i = mu/2 + (eps/4) deg(i) with deg = 1 at the two ends and 2 inside, and the constant
        n mu/2 + (n-1) eps/4; -beta E(tau) = beta (constant + sum J s s + sum h s)."""
        self.check_size(n)
        beta, eps, mu = get_float(params, "beta"), get_float(params, "eps"), get_float(params, "mu")
        i = np.arange(n - 1)
        degree = np.full(n, 2.0)
        degree[[0, -1]] = 1.0
        h = mu / 2 + eps / 4 * degree
        return IsingModel.from_arrays(n, beta, np.stack([i, i + 1], 1), eps / 4, h,
                                      constant=n * mu / 2 + (n - 1) * eps / 4, lattice=Lattice(1, n))


TASK = LatticeGasChain()
