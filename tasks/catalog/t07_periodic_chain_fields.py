"""T07: 1D Ising ring (periodic chain) with random site fields (StatMechBench-v1, Tier 1)."""

import numpy as np

from tasks.base import Gold, Task, get_array, get_float, sample_beta
from tasks.catalog._v1_common import V1_CITATION
from tasks.formula import Formula, Param, term
from tasks.model import IsingModel, Lattice


class RingWithFields(Task):
    id = "T07"
    title = "1D Ising chain with random site fields, periodic"
    tier = 1
    citation = V1_CITATION
    canonical = """\
You are given a **1D Ising chain with periodic boundary conditions (a ring) and random site fields**.
Hamiltonian: H(s) = -J * sum_{i=0}^{n-1} s_i s_{(i+1) mod n} - sum_{i=0}^{n-1} h_i s_i,
with s_i in {-1,+1} and n >= 3 (spin n-1 is coupled back to spin 0).
Implement
def Z_efficient(params: dict, n: int) -> float:
    # params has "beta" (float), "J" (float), "h" (list of length n)
that computes Z = sum_{s in {-1,+1}^n} exp(-beta * H(s)) in time polynomial in n."""
    paraphrased = """\
You are given n >= 3 binary variables x_0, ..., x_{n-1} in {-1, +1} arranged in a
closed loop (x_{n-1} is next to x_0), a constant J, and n per-position weights
h_0, ..., h_{n-1}. Compute
Z(beta, J, h, n) = sum over all 2^n tuples x of
exp( beta * J * sum_{i=0}^{n-1} x_i * x_{(i+1) mod n}
+ beta * sum_{i=0}^{n-1} h_i * x_i )
in time polynomial in n."""
    hint = "Z is the trace of a product of n 2x2 matrices."
    gold = Gold("transfer_matrix", "O(n)")
    probe_sizes = (6, 10, 14)
    ladder_sizes = (100, 1000, 10_000, 100_000)

    formula = Formula(
        shape=("n",),
        params=(Param("beta", "a real number"), Param("J", "a real number"), Param("h", "a list of n real numbers")),
        terms=(term("J * s[i] * s[(i + 1) % n]", ("i", "0", "n - 1")), term("h[i] * s[i]", ("i", "0", "n - 1"))),
        size_note="n >= 3",
    )

    def check_size(self, n):
        if n < 3:
            raise ValueError(f"{self.id}: a ring needs n >= 3 spins, got n={n}")

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
        i = np.arange(n)
        edges = np.stack([i, (i + 1) % n], 1)
        angle = 2 * np.pi * i / n                    # the ring drawn on a circle: a straight-line planar embedding
        return IsingModel.from_arrays(n, beta, edges, J, h, lattice=Lattice(1, n, periodic_cols=True),
                                      positions=np.stack([np.cos(angle), np.sin(angle)], 1))


TASK = RingWithFields()
