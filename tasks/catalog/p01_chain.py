"""P01: 1D Ising chain, open boundaries, uniform coupling (StatMechBench-v0)."""

import numpy as np

from tasks.base import Gold, Task, get_float, sample_beta
from tasks.formula import Formula, Param, term
from tasks.model import IsingModel, Lattice


class OpenChain(Task):
    id = "P01"
    title = "1D Ising chain, OBC, uniform J"
    canonical = """\
You are given the **1D Ising chain with open boundary conditions**.
Hamiltonian: H(s) = -J * sum_{i=0}^{n-2} s_i * s_{i+1}, with s_i in {-1,+1}.
Goal: write a Python function
def Z_efficient(params: dict, n: int) -> float:
    # params has keys "beta" (float) and "J" (float)
that computes the partition function
Z(beta, J, n) = sum_{s in {-1,+1}^n} exp(-beta * H(s))
in time polynomial in n (NOT exponential)."""
    paraphrased = """\
You are given a sequence of n binary variables x_1, ..., x_n with each
x_i in {-1, +1}, plus two real parameters beta and J. Compute
Z(beta, J, n) = sum over all 2^n binary tuples (x_1,...,x_n) of
exp( beta * J * sum_{i=1}^{n-1} x_i * x_{i+1} ).
Naive enumeration of all 2^n tuples is too slow; your implementation should
run in time polynomial in n."""
    gold = Gold("transfer_matrix", "O(n)")
    probe_sizes = (6, 10, 14)
    ladder_sizes = (100, 1000, 10_000, 100_000)

    formula = Formula(
        shape=("n",),
        params=(Param("beta", "a real number"), Param("J", "a real number")),
        terms=(term("J * s[i] * s[i + 1]", ("i", "0", "n - 2")),),
        size_note="n >= 2",
    )

    def sample_params(self, rng, n):
        return {"beta": sample_beta(rng), "J": float(rng.uniform(-1.5, 1.5))}

    def to_model(self, params, n):
        self.check_size(n)
        beta, J = get_float(params, "beta"), get_float(params, "J")
        i = np.arange(n - 1)
        return IsingModel.from_arrays(n, beta, np.stack([i, i + 1], 1), J, lattice=Lattice(1, n))


TASK = OpenChain()
