"""P02: 1D Ising chain with random site fields, open boundaries (StatMechBench-v0)."""

import numpy as np

from tasks.base import Gold, Task, get_array, get_float, sample_beta
from tasks.formula import Formula, Param, term
from tasks.model import IsingModel, Lattice


class ChainWithFields(Task):
    id = "P02"
    title = "1D Ising chain with random site fields, OBC"
    canonical = """\
You are given a **1D Ising chain with random site fields and open boundary conditions**.
Hamiltonian: H(s) = -J * sum_{i=0}^{n-2} s_i s_{i+1} - sum_{i=0}^{n-1} h_i s_i.
Implement
def Z_efficient(params: dict, n: int) -> float:
    # params has "beta" (float), "J" (float), "h" (list of length n)"""
    paraphrased = """\
You are given a sequence of n binary variables x_1, ..., x_n in {-1, +1},
a coupling constant J, and an array of n per-position weights h_1, ..., h_n.
Compute
Z(beta, J, h, n) = sum over all 2^n tuples x of
exp( beta * J * sum_{i=1}^{n-1} x_i * x_{i+1}
+ beta * sum_{i=1}^{n} h_i * x_i )."""
    gold = Gold("transfer_matrix", "O(n)")
    probe_sizes = (6, 10, 12)
    ladder_sizes = (100, 1000, 10_000, 100_000)

    formula = Formula(
        shape=("n",),
        params=(Param("beta", "a real number"), Param("J", "a real number"), Param("h", "a list of n real numbers")),
        terms=(term("J * s[i] * s[i + 1]", ("i", "0", "n - 2")), term("h[i] * s[i]", ("i", "0", "n - 1"))),
        size_note="n >= 2",
    )

    def sample_params(self, rng, n):
        return {
            "beta": sample_beta(rng),
            "J": float(rng.uniform(-1.5, 1.5)),
            "h": rng.uniform(-1.0, 1.0, size=n).tolist(),
        }

    def flip_fields(self, params):
        return {**params, "h": [-x for x in params["h"]]}

    def to_model(self, params, n):
        self.check_size(n)
        beta, J = get_float(params, "beta"), get_float(params, "J")
        h = get_array(params, "h", (n,))
        i = np.arange(n - 1)
        return IsingModel.from_arrays(n, beta, np.stack([i, i + 1], 1), J, h, lattice=Lattice(1, n))


TASK = ChainWithFields()
