"""T13: plaquette (four-spin) Ising model on an open L x L grid (StatMechBench-v1, Tier 1)."""

import numpy as np

from tasks.base import Gold, Task, get_array, get_float, sample_beta, square_side
from tasks.catalog._v1_common import V1_CITATION
from tasks.formula import Derived, Formula, Param, term
from tasks.model import IsingModel, Lattice


def plaquettes(L: int) -> np.ndarray:
    """((L-1)^2, 4) spins (r,c), (r,c+1), (r+1,c), (r+1,c+1) of each plaquette, row-major over
    (r, c < L-1) so that row k matches ``K.ravel()[k]``; site (r, c) is r*L + c."""
    r, c = np.divmod(np.arange((L - 1) ** 2), L - 1)
    top = r * L + c
    return np.stack([top, top + 1, top + L, top + L + 1], 1)


class PlaquetteGrid(Task):
    id = "T13"
    title = "Plaquette (four-spin) Ising model on an open L x L grid"
    tier = 1
    citation = V1_CITATION
    square_lattice = True
    canonical = """\
You are given the **plaquette (four-spin) Ising model on an L x L open grid**
(n = L^2 spins s[r][c] in {-1,+1}, L >= 2, no wrapping). Each of the (L-1)^2 unit
squares (plaquettes) carries a coupling K[r][c], r, c = 0, ..., L-2; there are no
two-spin couplings and no fields.
H(s) = - sum_{r<L-1, c<L-1} K[r][c] * s[r][c] * s[r][c+1] * s[r+1][c] * s[r+1][c+1].
Implement
def Z_efficient(params: dict, n: int) -> float:
    # params has "beta" (float), "K" ((L-1) x (L-1) nested list); L = sqrt(n)
computing Z = sum_s exp(-beta * H(s)) in time polynomial in n (NOT exponential)."""
    paraphrased = """\
L x L grid of binary variables x[r][c] in {-1,+1} (n = L^2, L >= 2); the grid does NOT
wrap. Each unit square with top-left corner (r, c), r, c = 0, ..., L-2, carries a real
weight K[r][c]. Compute
Z(beta, K, n) = sum over all 2^n assignments x of
exp( beta * sum_{r<L-1, c<L-1} K[r][c] * x[r][c] * x[r][c+1] * x[r+1][c] * x[r+1][c+1] )
in time polynomial in n."""
    hint = "Count how many assignments give each pattern of square products."
    gold = Gold("exactly_solvable_other", "O(n)")
    probe_sizes = (9, 16)
    #: the registry's exact method for four-spin terms is the transfer matrix (frontier L + 1)
    ladder_sizes = (36, 64, 144, 256)

    formula = Formula(
        shape=("L", "L"),
        params=(Param("beta", "a real number"), Param("K", "an (L-1) x (L-1) nested list of real numbers")),
        terms=(term("K[r][c] * s[r][c] * s[r][c + 1] * s[r + 1][c] * s[r + 1][c + 1]",
                    ("r", "0", "L - 2"), ("c", "0", "L - 2")),),
        derived=(Derived("L", "isqrt(n)"),),
        size_note="n = L*L with L >= 2",
    )

    def check_size(self, n):
        square_side(self.id, n, 2)

    def sample_params(self, rng, n):
        L = square_side(self.id, n, 2)
        return {"beta": sample_beta(rng), "K": rng.uniform(-1.5, 1.5, size=(L - 1, L - 1)).tolist()}

    def gauge(self, params, signs):
        L = len(params["K"]) + 1
        g = np.asarray(signs, dtype=float).reshape(L, L)
        K = np.asarray(params["K"], dtype=float) * g[:-1, :-1] * g[:-1, 1:] * g[1:, :-1] * g[1:, 1:]
        return {**params, "K": K.tolist()}

    def to_model(self, params, n):
        L = square_side(self.id, n, 2)
        beta = get_float(params, "beta")
        K = get_array(params, "K", (L - 1, L - 1))
        terms = tuple(tuple(p) for p in plaquettes(L).tolist())
        return IsingModel(n=n, terms=terms, weights=K.ravel(), beta=beta, lattice=Lattice(L, L))


TASK = PlaquetteGrid()
