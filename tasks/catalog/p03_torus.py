"""P03: 2D ferromagnetic Ising model on an L x L torus (StatMechBench-v0)."""

import numpy as np

from tasks.base import Gold, Task, get_float, sample_beta, square_side
from tasks.formula import Derived, Formula, Param, term
from tasks.model import IsingModel, Lattice


#: Onsager's critical coupling of the square-lattice Ising model, K_c = beta_c J = ln(1 + sqrt 2) / 2
ONSAGER_KC = 0.5 * float(np.log1p(np.sqrt(2.0)))


def torus_edges(L: int) -> np.ndarray:
    """(2 L^2, 2) unique nearest-neighbour pairs of the L x L torus (L >= 3), site = r*L + c."""
    r, c = np.divmod(np.arange(L * L), L)
    right = r * L + (c + 1) % L
    down = ((r + 1) % L) * L + c
    site = np.arange(L * L)
    return np.concatenate([np.stack([site, right], 1), np.stack([site, down], 1)])


class FerromagnetTorus(Task):
    id = "P03"
    title = "2D ferromagnetic Ising on L x L torus"
    canonical = """\
You are given the **2D ferromagnetic Ising model on an L x L torus**
(periodic boundary conditions in both directions).
H(s) = -J * sum_{<i,j>} s_i s_j over all nearest-neighbour pairs.
Z must be computed in time polynomial in L (so exponential in sqrt(n) is
acceptable, but exponential in n is not)."""
    paraphrased = """\
L x L grid of binary variables x_{r,c} in {-1,+1}; the grid wraps in both
directions. E is the set of all unique neighbour pairs (2*L^2 entries).
Compute Z(beta, J, n) = sum over 2^n assignments of
exp( beta * J * sum_{(i,j) in E} x_i * x_j )."""
    hint = "Consider a row-to-row transfer matrix of size 2^L by 2^L."
    gold = Gold("transfer_matrix", "O(L 2^(2L))")
    probe_sizes = (9, 16)
    square_lattice = True
    ladder_sizes = (36, 64, 144, 256, 1024, 4096)

    formula = Formula(
        shape=("L", "L"),
        params=(Param("beta", "a real number"), Param("J", "a real number > 0")),
        terms=(term("J * s[r][c] * s[r][(c + 1) % L]", ("r", "0", "L - 1"), ("c", "0", "L - 1")),
               term("J * s[r][c] * s[(r + 1) % L][c]", ("r", "0", "L - 1"), ("c", "0", "L - 1"))),
        derived=(Derived("L", "isqrt(n)"),),
        size_note="n = L*L with L >= 3",
    )

    def check_size(self, n):
        square_side(self.id, n, 3)

    def sample_params(self, rng, n):
        return {"beta": sample_beta(rng), "J": float(rng.uniform(0.2, 1.5))}

    def critical_params(self, params, n):
        J = abs(get_float(params, "J"))
        return self.with_beta(params, ONSAGER_KC / J), f"critical: beta J = K_c = {ONSAGER_KC:.6f}"

    def to_model(self, params, n):
        L = square_side(self.id, n, 3)
        beta, J = get_float(params, "beta"), get_float(params, "J")
        return IsingModel.from_arrays(n, beta, torus_edges(L), J, lattice=Lattice(L, L, True, True))


TASK = FerromagnetTorus()
