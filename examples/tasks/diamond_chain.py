"""A user task file: the Ising diamond chain with random couplings and fields.

The diamond chain (nodal spins joined by pairs of decorating spins, the pair itself coupled) is
the Ising model of azurite, Cu3(CO3)2(OH)2. Load it with ``evolve --task-file THIS_FILE ...``
or ``task_files: [THIS_FILE]`` in a run config; the framework needs no other change.
"""

import numpy as np

from tasks.base import Gold, Task, get_array, get_float, sample_beta
from tasks.formula import Derived, Formula, Param, term
from tasks.model import IsingModel


def cells(n: int) -> int:
    """The number of diamonds L, with n = 3 L + 1 spins; ValueError for other n."""
    if n < 4 or (n - 1) % 3:
        raise ValueError(f"DIAMOND: n must be 3*L + 1 with L >= 1, got n={n}")
    return (n - 1) // 3


class DiamondChain(Task):
    id = "DIAMOND"
    title = "Ising diamond chain with random couplings and fields (open)"
    tier = 1
    citation = "User task file examples/tasks/diamond_chain.py (statmech-evolve README worked example)."
    canonical = """\
You are given an **Ising diamond chain** with L diamonds and open ends: nodal spins
sigma_0, ..., sigma_L, and in diamond k (k = 0, ..., L-1) two decorating spins a_k, b_k,
each coupled to both sigma_k and sigma_{k+1} and to each other; all spins are in {-1,+1},
n = 3 L + 1. Spin indices: sigma_k is spin 3k, a_k is spin 3k+1, b_k is spin 3k+2.
H = - sum_{k=0}^{L-1} ( J[k][0] sigma_k a_k + J[k][1] sigma_k b_k
                       + J[k][2] a_k sigma_{k+1} + J[k][3] b_k sigma_{k+1} + K[k] a_k b_k )
    - sum_{k=0}^{L} h_node[k] sigma_k - sum_{k=0}^{L-1} ( h_dec[k][0] a_k + h_dec[k][1] b_k ).
Implement
def Z_efficient(params: dict, n: int) -> float:
    # params has "beta" (float), "J" (L x 4 nested list), "K" (list of length L),
    # "h_node" (list of length L+1), "h_dec" (L x 2 nested list); L = (n - 1) // 3
computing Z = sum over all 2^n spin states of exp(-beta * H) in time polynomial in n."""
    paraphrased = """\
There are L+1 hub variables x_0, ..., x_L and, for each k = 0, ..., L-1, two side variables
y_k and z_k; every variable is -1 or +1 and n = 3 L + 1 counts them all. Real weights:
J[k][0..3] and K[k] for each k, u[k] for each hub (given as "h_node") and v[k][0], v[k][1]
for the side variables (given as "h_dec"). Compute
Z = sum over all 2^n assignments of
exp( beta * sum_{k<L} ( J[k][0] x_k y_k + J[k][1] x_k z_k + J[k][2] y_k x_{k+1}
                      + J[k][3] z_k x_{k+1} + K[k] y_k z_k + v[k][0] y_k + v[k][1] z_k )
   + beta * sum_{k<=L} u[k] x_k )
for params {"beta", "J", "K", "h_node", "h_dec"} and n, in time polynomial in n."""
    hint = "Summing out the two spins of one diamond leaves a coupling between neighbouring nodal spins."
    gold = Gold("transfer_matrix", "O(n)")
    probe_sizes = (7, 10, 13)                       # L = 2, 3, 4: brute force checks these
    ladder_sizes = (301, 1501, 4501)                # exact oracles check these

    #: optional: the exponent as a structured expression (tasks/formula.py) gives generated paraphrases
    #: and lets the offline proposers compile a reader for the task and derive programs from it
    formula = Formula(
        shape=("n",),
        params=(Param("beta", "a real number"), Param("J", "an L x 4 nested list of real numbers"),
                Param("K", "a list of L real numbers"), Param("h_node", "a list of L + 1 real numbers"),
                Param("h_dec", "an L x 2 nested list of real numbers")),
        terms=(term("J[k][0] * s[3 * k] * s[3 * k + 1]", ("k", "0", "L - 1")),
               term("J[k][1] * s[3 * k] * s[3 * k + 2]", ("k", "0", "L - 1")),
               term("J[k][2] * s[3 * k + 1] * s[3 * k + 3]", ("k", "0", "L - 1")),
               term("J[k][3] * s[3 * k + 2] * s[3 * k + 3]", ("k", "0", "L - 1")),
               term("K[k] * s[3 * k + 1] * s[3 * k + 2]", ("k", "0", "L - 1")),
               term("h_node[k] * s[3 * k]", ("k", "0", "L")),
               term("h_dec[k][0] * s[3 * k + 1]", ("k", "0", "L - 1")),
               term("h_dec[k][1] * s[3 * k + 2]", ("k", "0", "L - 1"))),
        derived=(Derived("L", "(n - 1) // 3"),),
        size_note="n = 3*L + 1 with L >= 1",
    )

    def check_size(self, n):
        cells(n)

    def sample_params(self, rng, n):
        L = cells(n)
        return {
            "beta": sample_beta(rng),
            "J": rng.uniform(-1.5, 1.5, size=(L, 4)).tolist(),
            "K": rng.uniform(-1.5, 1.5, size=L).tolist(),
            "h_node": rng.uniform(-1.0, 1.0, size=L + 1).tolist(),
            "h_dec": rng.uniform(-1.0, 1.0, size=(L, 2)).tolist(),
        }

    def flip_fields(self, params):
        return {**params, "h_node": (-np.asarray(params["h_node"])).tolist(),
                "h_dec": (-np.asarray(params["h_dec"])).tolist()}

    def to_model(self, params, n):
        L = cells(n)
        beta = get_float(params, "beta")
        J = get_array(params, "J", (L, 4))
        K = get_array(params, "K", (L,))
        h_node = get_array(params, "h_node", (L + 1,))
        h_dec = get_array(params, "h_dec", (L, 2))
        node, a, b = 3 * np.arange(L), 3 * np.arange(L) + 1, 3 * np.arange(L) + 2
        edges = np.concatenate([np.stack(pair, 1) for pair in
                                ((node, a), (node, b), (a, node + 3), (b, node + 3), (a, b))])
        couplings = np.concatenate([J[:, 0], J[:, 1], J[:, 2], J[:, 3], K])
        h = np.zeros(n)
        h[0::3], h[1::3], h[2::3] = h_node, h_dec[:, 0], h_dec[:, 1]
        return IsingModel.from_arrays(n, beta, edges, couplings, h)


TASK = DiamondChain()
