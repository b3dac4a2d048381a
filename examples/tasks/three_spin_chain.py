"""A user task file written with a formula only: an open chain of three-spin interactions in fields.

Each term couples three consecutive spins, J[i] s_i s_{i+1} s_{i+2}; no pair coupling, so neither a
2 x 2 transfer matrix nor a Pfaffian applies as written. The interaction hypergraph has treewidth 2:
the derivation engine ends in variable elimination along a greedy order (a table over three spins at
each step), the polynomial fallback for bounded treewidth:

    evolve derive --task-file examples/tasks/three_spin_chain.py --task THREESPIN
"""

import numpy as np

from tasks.base import Gold, Task, get_array, get_float, sample_beta
from tasks.formula import Formula, Param, term
from tasks.model import IsingModel


class ThreeSpinChain(Task):
    id = "THREESPIN"
    title = "Open chain of three-spin interactions with random couplings and fields"
    tier = 1
    citation = "User task file examples/tasks/three_spin_chain.py (statmech-evolve, issue 31)."
    canonical = """\
You are given an open chain of n Ising spins s_0, ..., s_{n-1} in {-1,+1} (n >= 3) with a three-spin
interaction between every three consecutive spins and a field on every spin:
H = - sum_{i=0}^{n-3} J[i] s_i s_{i+1} s_{i+2} - sum_{i=0}^{n-1} h[i] s_i.
Implement
def Z_efficient(params: dict, n: int) -> float:
    # params has "beta" (float), "J" (list of length n - 2), "h" (list of length n)
computing Z = sum over all 2^n spin states of exp(-beta * H) in time polynomial in n."""
    paraphrased = """\
Variables x_0, ..., x_{n-1} each take the values -1 and +1 (n >= 3). With real weights J[0..n-3] and
h[0..n-1], compute Z = sum over all 2^n assignments of
exp( beta * sum_{i<=n-3} J[i] x_i x_{i+1} x_{i+2} + beta * sum_{i<n} h[i] x_i )
for params {"beta", "J", "h"} and n, in time polynomial in n."""
    gold = Gold("treewidth_bounded", "O(n)")
    probe_sizes = (6, 9, 12)                         # brute force checks these
    ladder_sizes = (300, 3000, 30_000)               # exact oracles (variable elimination) check these

    formula = Formula(
        shape=("n",),
        params=(Param("beta", "a real number"), Param("J", "a list of n - 2 real numbers"),
                Param("h", "a list of n real numbers")),
        terms=(term("J[i] * s[i] * s[i + 1] * s[i + 2]", ("i", "0", "n - 3")),
               term("h[i] * s[i]", ("i", "0", "n - 1"))),
        size_note="n >= 3",
    )

    def check_size(self, n):
        if n < 3:
            raise ValueError(f"THREESPIN: n must be at least 3, got n={n}")

    def sample_params(self, rng, n):
        return {"beta": sample_beta(rng), "J": rng.uniform(-1.5, 1.5, size=n - 2).tolist(),
                "h": rng.uniform(-1.0, 1.0, size=n).tolist()}

    def flip_fields(self, params):
        # s -> -s flips every odd-order term: the three-spin couplings change sign with the fields
        return {**params, "J": (-np.asarray(params["J"])).tolist(), "h": (-np.asarray(params["h"])).tolist()}

    def to_model(self, params, n):
        self.check_size(n)
        beta = get_float(params, "beta")
        J = get_array(params, "J", (n - 2,))
        h = get_array(params, "h", (n,))
        i = np.arange(n - 2)
        terms = [(int(a), int(a) + 1, int(a) + 2) for a in i] + [(int(k),) for k in range(n)]
        return IsingModel(n=n, terms=tuple(terms), weights=np.concatenate([J, h]), beta=beta)


TASK = ThreeSpinChain()
