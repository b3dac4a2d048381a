"""T14: Ising antiferromagnet on an open L x L triangular lattice (StatMechBench-v1, Tier 1)."""

import numpy as np

from tasks.base import Gold, Task, get_float, sample_beta, square_side
from tasks.catalog._v1_common import V1_CITATION
from tasks.formula import Derived, Formula, Param, term
from tasks.model import IsingModel, Lattice


def triangular_edges(L: int) -> np.ndarray:
    """(3 L^2 - 4 L + 1, 2) bonds of the open L x L triangular lattice, site (r, c) = r*L + c:
    (r,c)-(r,c+1), then (r,c)-(r+1,c), then the diagonals (r,c)-(r+1,c+1)."""
    r, c = np.divmod(np.arange(L * L), L)
    site = r * L + c
    right = site[c < L - 1]
    down = site[r < L - 1]
    diag = site[(r < L - 1) & (c < L - 1)]
    return np.concatenate([np.stack([right, right + 1], 1), np.stack([down, down + L], 1),
                           np.stack([diag, diag + L + 1], 1)])


def triangular_positions(L: int) -> np.ndarray:
    """(n, 2) straight-line embedding with equilateral triangles: site (r, c) at (c - r/2, -r sqrt(3)/2)."""
    r, c = np.divmod(np.arange(L * L), L)
    return np.stack([c - r / 2.0, -r * np.sqrt(3.0) / 2.0], 1)


class TriangularAntiferromagnet(Task):
    id = "T14"
    title = "Ising antiferromagnet on an open L x L triangular lattice"
    tier = 1
    citation = V1_CITATION
    square_lattice = True
    canonical = """\
You are given the **Ising antiferromagnet on an L x L triangular lattice with open
boundaries** (a rhombus-shaped patch, n = L^2 spins s[r][c] in {-1,+1}, L >= 2, no
wrapping, zero field). Each spin is coupled to its neighbours (r, c+1), (r+1, c) and
(r+1, c+1) when they exist; every bond has the same antiferromagnetic strength J > 0,
so every triangle is frustrated.
H(s) = J * [ sum_{r, c<L-1} s[r][c] s[r][c+1] + sum_{r<L-1, c} s[r][c] s[r+1][c]
+ sum_{r<L-1, c<L-1} s[r][c] s[r+1][c+1] ].
Implement
def Z_efficient(params: dict, n: int) -> float:
    # params has "beta" (float), "J" (float > 0); L = sqrt(n)
computing Z = sum_s exp(-beta * H(s)) in time polynomial in n (NOT exponential)."""
    paraphrased = """\
L x L grid of binary variables x[r][c] in {-1,+1} (n = L^2, L >= 2); the grid does NOT
wrap. Neighbour pairs are the horizontal pairs (r,c)-(r,c+1), the vertical pairs
(r,c)-(r+1,c) and the diagonal pairs (r,c)-(r+1,c+1). A constant J > 0 is given. Compute
Z(beta, J, n) = sum over all 2^n assignments x of
exp( -beta * J * [ sum_{r, c<L-1} x[r][c] * x[r][c+1] + sum_{r<L-1, c} x[r][c] * x[r+1][c]
+ sum_{r<L-1, c<L-1} x[r][c] * x[r+1][c+1] ] )
in time polynomial in n."""
    hint = "The interaction graph is planar and there is no field."
    gold = Gold("pfaffian", "O(n^1.5)")
    probe_sizes = (9, 16)
    ladder_sizes = (64, 256, 1024, 4096, 16384)

    formula = Formula(
        shape=("L", "L"),
        params=(Param("beta", "a real number"), Param("J", "a real number > 0")),
        terms=(term("-J * s[r][c] * s[r][c + 1]", ("r", "0", "L - 1"), ("c", "0", "L - 2")),
               term("-J * s[r][c] * s[r + 1][c]", ("r", "0", "L - 2"), ("c", "0", "L - 1")),
               term("-J * s[r][c] * s[r + 1][c + 1]", ("r", "0", "L - 2"), ("c", "0", "L - 2"))),
        derived=(Derived("L", "isqrt(n)"),),
        size_note="n = L*L with L >= 2",
    )

    def check_size(self, n):
        square_side(self.id, n, 2)

    def sample_params(self, rng, n):
        self.check_size(n)
        return {"beta": sample_beta(rng), "J": float(rng.uniform(0.2, 1.5))}

    def to_model(self, params, n):
        L = square_side(self.id, n, 2)
        beta, J = get_float(params, "beta"), get_float(params, "J")
        if J <= 0.0:
            raise ValueError(f"parameter 'J' must be > 0 (antiferromagnetic), got {J}")
        # H = +J sum s s is weight -J in the convention H = -(sum w prod s)
        return IsingModel.from_arrays(n, beta, triangular_edges(L), -J, lattice=Lattice(L, L),
                                      positions=triangular_positions(L))


TASK = TriangularAntiferromagnet()
