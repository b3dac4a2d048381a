"""P04: 2D +-J Ising spin glass on an open L x L grid (StatMechBench-v0)."""

import numpy as np

from tasks.base import Gold, Task, get_array, get_float, sample_beta, square_side
from tasks.formula import Derived, Formula, Param, term
from tasks.lattices import grid_gauge, open_grid_edges
from tasks.model import IsingModel, Lattice


class PlanarGridGlass(Task):
    id = "P04"
    title = "2D Ising spin glass on planar grid (open)"
    canonical = """\
You are given a **2D Ising spin glass on an L x L OPEN-boundary planar
lattice** with random binary couplings on each edge.
H(s) = - sum_{horiz edges} Jh[r,c] * s[r,c] * s[r,c+1]
- sum_{vert edges} Jv[r,c] * s[r,c] * s[r+1,c].
Z must be polynomial in n (NOT exponential)."""
    paraphrased = """\
L x L grid of binary variables x_{r,c}; grid does NOT wrap. Each horizontal
edge carries a binary weight Jh[r][c] in {-1,+1}; each vertical edge
Jv[r][c] in {-1,+1}. Compute
Z(beta, Jh, Jv, n) = sum over all 2^n assignments x of
exp( beta * sum_{r,c: c<L-1} Jh[r][c] * x_{r,c} * x_{r,c+1}
+ beta * sum_{r,c: r<L-1} Jv[r][c] * x_{r,c} * x_{r+1,c} )"""
    hint = "The interaction graph is planar."
    gold = Gold("pfaffian", "O(n^3)")
    probe_sizes = (9, 16)
    square_lattice = True
    ladder_sizes = (64, 256, 1024, 4096)

    formula = Formula(
        shape=("L", "L"),
        params=(Param("beta", "a real number"), Param("Jh", "an L x (L-1) nested list of values in {-1, +1}"),
                Param("Jv", "an (L-1) x L nested list of values in {-1, +1}")),
        terms=(term("Jh[r][c] * s[r][c] * s[r][c + 1]", ("r", "0", "L - 1"), ("c", "0", "L - 2")),
               term("Jv[r][c] * s[r][c] * s[r + 1][c]", ("r", "0", "L - 2"), ("c", "0", "L - 1"))),
        derived=(Derived("L", "isqrt(n)"),),
        size_note="n = L*L with L >= 2",
    )

    def check_size(self, n):
        square_side(self.id, n, 2)

    def sample_params(self, rng, n):
        L = square_side(self.id, n, 2)
        return {
            "beta": sample_beta(rng),
            "Jh": rng.choice([-1.0, 1.0], size=(L, L - 1)).tolist(),
            "Jv": rng.choice([-1.0, 1.0], size=(L - 1, L)).tolist(),
        }

    def gauge(self, params, signs):
        L = len(params["Jh"])
        return grid_gauge(params, signs, L, L)

    def to_model(self, params, n):
        L = square_side(self.id, n, 2)
        beta = get_float(params, "beta")
        Jh = get_array(params, "Jh", (L, L - 1), pm_one=True)
        Jv = get_array(params, "Jv", (L - 1, L), pm_one=True)
        right, down = open_grid_edges(L, L)
        J = np.concatenate([Jh.ravel(), Jv.ravel()])
        return IsingModel.from_arrays(n, beta, np.concatenate([right, down]), J, lattice=Lattice(L, L))


TASK = PlanarGridGlass()
