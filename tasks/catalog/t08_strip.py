"""T08: Ising model on a 3 x L strip with random couplings and fields (StatMechBench-v1, Tier 1)."""

import numpy as np

from tasks.base import Gold, Task, get_array, get_float, sample_beta
from tasks.catalog._v1_common import V1_CITATION
from tasks.formula import Derived, Formula, Param, term
from tasks.lattices import grid_gauge, open_grid_edges
from tasks.model import IsingModel, Lattice

WIDTH = 3


def strip_length(task_id: str, n: int) -> int:
    """L with n = 3 L, L >= 2, or ValueError."""
    if n % WIDTH or n < 2 * WIDTH:
        raise ValueError(f"{task_id}: n must be {WIDTH}*L with L >= 2, got n={n}")
    return n // WIDTH


class RandomStrip(Task):
    id = "T08"
    title = "Ising model on a 3 x L strip, random couplings and fields (open)"
    tier = 1
    citation = V1_CITATION
    canonical = """\
You are given an **Ising model on a 3 x L strip** (3 rows, L columns, open boundaries)
with random couplings on every nearest-neighbour bond and random site fields; n = 3 L.
Spin s[r][c] in {-1,+1}, r = 0, 1, 2, c = 0, ..., L-1.
H(s) = - sum_{r, c<L-1} Jh[r][c] * s[r][c] * s[r][c+1]
- sum_{r<2, c} Jv[r][c] * s[r][c] * s[r+1][c]
- sum_{r, c} h[r][c] * s[r][c].
Implement
def Z_efficient(params: dict, n: int) -> float:
    # params has "beta" (float), "Jh" (3 x (L-1) nested list), "Jv" (2 x L nested list),
    # "h" (3 x L nested list); L = n // 3
computing Z = sum_s exp(-beta * H(s)) in time polynomial in n (NOT exponential)."""
    paraphrased = """\
3 x L grid of binary variables x[r][c] in {-1,+1} (r = 0, 1, 2; c = 0, ..., L-1);
the grid does NOT wrap and n = 3 L. Each horizontal neighbour pair carries a real
weight Jh[r][c], each vertical pair a real weight Jv[r][c], each variable a real
weight h[r][c]. Compute
Z(beta, Jh, Jv, h, n) = sum over all 2^n assignments x of
exp( beta * sum_{r, c<L-1} Jh[r][c] * x[r][c] * x[r][c+1]
+ beta * sum_{r<2, c} Jv[r][c] * x[r][c] * x[r+1][c]
+ beta * sum_{r, c} h[r][c] * x[r][c] )
in time polynomial in n."""
    hint = "The strip is only three sites wide."
    gold = Gold("transfer_matrix", "O(n)")   # O(n 2^W) with the width W = 3 fixed
    probe_sizes = (6, 12, 15)
    ladder_sizes = (90, 900, 3000, 9000)

    formula = Formula(
        shape=("3", "L"),
        params=(Param("beta", "a real number"), Param("Jh", "a 3 x (L-1) nested list of real numbers"),
                Param("Jv", "a 2 x L nested list of real numbers"), Param("h", "a 3 x L nested list of real numbers")),
        terms=(term("Jh[r][c] * s[r][c] * s[r][c + 1]", ("r", "0", "2"), ("c", "0", "L - 2")),
               term("Jv[r][c] * s[r][c] * s[r + 1][c]", ("r", "0", "1"), ("c", "0", "L - 1")),
               term("h[r][c] * s[r][c]", ("r", "0", "2"), ("c", "0", "L - 1"))),
        derived=(Derived("L", "n // 3"),),
        size_note="n = 3*L with L >= 2",
    )

    def check_size(self, n):
        strip_length(self.id, n)

    def sample_params(self, rng, n):
        L = strip_length(self.id, n)
        return {
            "beta": sample_beta(rng),
            "Jh": rng.uniform(-1.5, 1.5, size=(WIDTH, L - 1)).tolist(),
            "Jv": rng.uniform(-1.5, 1.5, size=(WIDTH - 1, L)).tolist(),
            "h": rng.uniform(-1.0, 1.0, size=(WIDTH, L)).tolist(),
        }

    def flip_fields(self, params):
        return {**params, "h": (-np.asarray(params["h"], dtype=float)).tolist()}

    def gauge(self, params, signs):
        L = len(params["h"][0])
        return grid_gauge(params, signs, WIDTH, L, field="h")

    def to_model(self, params, n):
        L = strip_length(self.id, n)
        beta = get_float(params, "beta")
        Jh = get_array(params, "Jh", (WIDTH, L - 1))
        Jv = get_array(params, "Jv", (WIDTH - 1, L))
        h = get_array(params, "h", (WIDTH, L))
        right, down = open_grid_edges(WIDTH, L)
        edges = np.concatenate([right, down])
        J = np.concatenate([Jh.ravel(), Jv.ravel()])
        return IsingModel.from_arrays(n, beta, edges, J, h.ravel(), lattice=Lattice(WIDTH, L))


TASK = RandomStrip()
