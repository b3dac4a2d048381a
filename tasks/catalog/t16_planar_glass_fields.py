"""T16: 2D +-J Ising spin glass in random fields on an open L x L grid; a negative control
(StatMechBench-v1, Tier 1)."""

import numpy as np

from tasks.base import Gold, Task, get_array, get_float, sample_beta, square_side
from tasks.catalog._v1_common import V1_CITATION
from tasks.formula import Derived, Formula, Param, term
from tasks.lattices import grid_gauge, open_grid_edges
from tasks.model import IsingModel, Lattice


class GridGlassInFields(Task):
    id = "T16"
    title = "2D +-J Ising spin glass in random fields (open L x L grid)"
    tier = 1
    citation = V1_CITATION
    square_lattice = True
    canonical = """\
You are given a **2D Ising spin glass in random fields on an L x L OPEN-boundary
lattice** (n = L^2 spins s[r][c] in {-1,+1}, L >= 2): binary random couplings on
each edge and a random real field on each site.
H(s) = - sum_{horiz edges} Jh[r][c] * s[r][c] * s[r][c+1]
- sum_{vert edges} Jv[r][c] * s[r][c] * s[r+1][c] - sum_{r,c} h[r][c] * s[r][c],
with Jh, Jv in {-1,+1}. params has "beta" (float), "Jh" (L x (L-1)), "Jv" ((L-1) x L)
and "h" (L x L) nested lists.
"If you determine, after analysing the structure of the interaction graph,
that no polynomial-time algorithm in any class from the library applies,
state so explicitly in your justification and provide your best
implementation; the verifier will only call you at small n.\""""
    paraphrased = """\
L x L grid of binary variables x_{r,c} in {-1,+1}; grid does NOT wrap. Each horizontal
edge carries a binary weight Jh[r][c] in {-1,+1}; each vertical edge Jv[r][c] in {-1,+1};
each variable a real weight h[r][c]. Compute
Z(beta, Jh, Jv, h, n) = sum over all 2^n assignments x of
exp( beta * sum_{r,c: c<L-1} Jh[r][c] * x_{r,c} * x_{r,c+1}
+ beta * sum_{r,c: r<L-1} Jv[r][c] * x_{r,c} * x_{r+1,c}
+ beta * sum_{r,c} h[r][c] * x_{r,c} )"""
    gold = Gold("no_efficient_known", "O(n 2^L)")   # a row transfer matrix: exp(sqrt n), not polynomial
    probe_sizes = (9, 16)
    ladder_sizes = (36, 64, 144, 256)

    formula = Formula(
        shape=("L", "L"),
        params=(Param("beta", "a real number"), Param("Jh", "an L x (L-1) nested list of values in {-1, +1}"),
                Param("Jv", "an (L-1) x L nested list of values in {-1, +1}"),
                Param("h", "an L x L nested list of real numbers")),
        terms=(term("Jh[r][c] * s[r][c] * s[r][c + 1]", ("r", "0", "L - 1"), ("c", "0", "L - 2")),
               term("Jv[r][c] * s[r][c] * s[r + 1][c]", ("r", "0", "L - 2"), ("c", "0", "L - 1")),
               term("h[r][c] * s[r][c]", ("r", "0", "L - 1"), ("c", "0", "L - 1"))),
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
            "h": rng.uniform(-1.0, 1.0, size=(L, L)).tolist(),
        }

    def flip_fields(self, params):
        return {**params, "h": (-np.asarray(params["h"], dtype=float)).tolist()}

    def gauge(self, params, signs):
        L = len(params["h"])
        return grid_gauge(params, signs, L, L, field="h")

    def to_model(self, params, n):
        L = square_side(self.id, n, 2)
        beta = get_float(params, "beta")
        Jh = get_array(params, "Jh", (L, L - 1), pm_one=True)
        Jv = get_array(params, "Jv", (L - 1, L), pm_one=True)
        h = get_array(params, "h", (L, L))
        right, down = open_grid_edges(L, L)
        return IsingModel.from_arrays(n, beta, np.concatenate([right, down]), np.concatenate([Jh.ravel(), Jv.ravel()]),
                                      h.ravel(), lattice=Lattice(L, L))


TASK = GridGlassInFields()
