"""T12: Mattis model on an L x L torus, J_ij = J xi_i xi_j on nearest neighbours
(StatMechBench-v1, Tier 1)."""

import numpy as np

from tasks.base import Gold, Task, get_array, get_float, sample_beta, square_side
from tasks.catalog._v1_common import V1_CITATION
from tasks.catalog.p03_torus import ONSAGER_KC, torus_edges
from tasks.formula import Derived, Formula, Param, term
from tasks.model import IsingModel, Lattice


class MattisTorus(Task):
    id = "T12"
    title = "Mattis model on an L x L torus"
    tier = 1
    citation = V1_CITATION
    square_lattice = True
    canonical = """\
You are given the **Mattis model on an L x L torus** (periodic boundary conditions in
both directions, n = L^2 spins, L >= 3): nearest-neighbour couplings J_ij = J * xi_i * xi_j
with J > 0 and xi a fixed +/- 1 pattern. Site (r, c) has index i = r*L + c; E is the set of
the 2 L^2 unique nearest-neighbour pairs of the torus.
H(s) = - J * sum_{(i,j) in E} xi_i xi_j s_i s_j.
Implement
def Z_efficient(params: dict, n: int) -> float:
    # params has "beta" (float), "J" (float > 0), "xi" (list of n values in {-1, +1})
computing Z = sum_s exp(-beta * H(s)) in time polynomial in n (NOT exponential)."""
    paraphrased = """\
L x L grid of binary variables x_{r,c} in {-1,+1} (n = L^2, L >= 3); the grid wraps in
both directions. E is the set of all unique neighbour pairs (2*L^2 entries); variable
(r, c) has index i = r*L + c. A constant J > 0 and a fixed vector xi in {-1,+1}^n are given.
Compute
Z(beta, J, xi, n) = sum over 2^n assignments of
exp( beta * J * sum_{(i,j) in E} xi_i * xi_j * x_i * x_j )
in time polynomial in n."""
    hint = "The couplings J xi_i xi_j factorise over the sites."
    gold = Gold("gauge", "O(n)")   # the gauge pass; Kaufman's formula for the gauged torus is O(L)
    probe_sizes = (9, 16)
    #: the oracle gauges the Mattis signs away and uses Kaufman's formula: O(n), any beta (L = 256 in seconds)
    ladder_sizes = (25, 36, 64, 100, 144, 256, 1024, 4096, 16384, 65536)

    formula = Formula(
        shape=("L", "L"),
        params=(Param("beta", "a real number"), Param("J", "a real number > 0"),
                Param("xi", "a list of n values in {-1, +1}")),
        terms=(term("J * xi[r * L + c] * xi[r * L + (c + 1) % L] * s[r][c] * s[r][(c + 1) % L]",
                    ("r", "0", "L - 1"), ("c", "0", "L - 1")),
               term("J * xi[r * L + c] * xi[(r + 1) % L * L + c] * s[r][c] * s[(r + 1) % L][c]",
                    ("r", "0", "L - 1"), ("c", "0", "L - 1"))),
        derived=(Derived("L", "isqrt(n)"),),
        size_note="n = L*L with L >= 3",
    )

    def check_size(self, n):
        square_side(self.id, n, 3)

    def sample_params(self, rng, n):
        self.check_size(n)
        return {"beta": sample_beta(rng), "J": float(rng.uniform(0.2, 1.5)),
                "xi": rng.choice([-1.0, 1.0], size=n).tolist()}

    def gauge(self, params, signs):
        return {**params, "xi": (np.asarray(params["xi"], dtype=float) * np.asarray(signs, dtype=float)).tolist()}

    def critical_params(self, params, n):
        """The gauge xi maps the instance onto the uniform ferromagnet: Onsager's K_c."""
        return self.with_beta(params, ONSAGER_KC / get_float(params, "J")), f"critical: beta J = K_c = {ONSAGER_KC:.6f}"

    def to_model(self, params, n):
        L = square_side(self.id, n, 3)
        beta, J = get_float(params, "beta"), get_float(params, "J")
        if J <= 0.0:
            raise ValueError(f"parameter 'J' must be > 0, got {J}")
        xi = get_array(params, "xi", (n,), pm_one=True)
        edges = torus_edges(L)
        return IsingModel.from_arrays(n, beta, edges, J * xi[edges[:, 0]] * xi[edges[:, 1]],
                                      lattice=Lattice(L, L, True, True))


TASK = MattisTorus()
