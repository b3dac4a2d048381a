"""T15: +-J Ising spin glass on an open L x L x L cubic lattice; a negative control
(StatMechBench-v1, Tier 1)."""

import numpy as np

from tasks.base import Gold, Task, get_array, get_float, sample_beta
from tasks.catalog._v1_common import V1_CITATION
from tasks.formula import Derived, Formula, Param, term
from tasks.model import IsingModel


def cube_side(task_id: str, n: int) -> int:
    """L with n = L^3, L >= 2, or ValueError."""
    L = int(round(n ** (1.0 / 3.0)))
    if L ** 3 != n or L < 2:
        raise ValueError(f"{task_id}: n must be L^3 with L >= 2, got n={n}")
    return L


def cubic_edges(L: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bonds of the open L^3 cube along x, y, z; site (x, y, z) = (x L + y) L + z. Each array is
    in C order over its coupling array: Jx (L-1, L, L), Jy (L, L-1, L), Jz (L, L, L-1)."""
    site = np.arange(L ** 3).reshape(L, L, L)
    return (np.stack([site[:-1].ravel(), site[1:].ravel()], 1),
            np.stack([site[:, :-1].ravel(), site[:, 1:].ravel()], 1),
            np.stack([site[:, :, :-1].ravel(), site[:, :, 1:].ravel()], 1))


class CubicGlass(Task):
    id = "T15"
    title = "3D +-J Ising spin glass on an open L x L x L cube"
    tier = 1
    citation = V1_CITATION
    canonical = """\
**3D Ising spin glass (Edwards-Anderson, +/- J) on an L x L x L cubic lattice with open
boundaries**, n = L^3 spins s[x][y][z] in {-1,+1}, L >= 2. Every nearest-neighbour bond
carries a random coupling in {-1, +1}:
H(s) = - sum_{x<L-1, y, z} Jx[x][y][z] s[x][y][z] s[x+1][y][z]
- sum_{x, y<L-1, z} Jy[x][y][z] s[x][y][z] s[x][y+1][z]
- sum_{x, y, z<L-1} Jz[x][y][z] s[x][y][z] s[x][y][z+1].
params has "beta" (float), "Jx" ((L-1) x L x L), "Jy" (L x (L-1) x L), "Jz" (L x L x (L-1))
nested lists; L = round(n^(1/3)).
"If you determine, after analysing the structure of the interaction graph,
that no polynomial-time algorithm in any class from the library applies,
state so explicitly in your justification and provide your best
implementation; the verifier will only call you at small n.\""""
    paraphrased = """\
L x L x L block of binary variables x[a][b][c] in {-1,+1} (n = L^3, L >= 2); the block
does not wrap. Each pair of neighbours along the first, second and third index carries a
weight in {-1,+1}: Jx[a][b][c] joins (a,b,c)-(a+1,b,c), Jy[a][b][c] joins (a,b,c)-(a,b+1,c),
Jz[a][b][c] joins (a,b,c)-(a,b,c+1). Compute
Z(beta, Jx, Jy, Jz, n) = sum over all 2^n assignments x of
exp( beta * sum_{a<L-1, b, c} Jx[a][b][c] * x[a][b][c] * x[a+1][b][c]
+ beta * sum_{a, b<L-1, c} Jy[a][b][c] * x[a][b][c] * x[a][b+1][c]
+ beta * sum_{a, b, c<L-1} Jz[a][b][c] * x[a][b][c] * x[a][b][c+1] )."""
    gold = Gold("no_efficient_known", "O(n 2^(n^(2/3)))")   # a slab transfer matrix over 2^(L^2) states
    probe_sizes = (8,)
    ladder_sizes = (27, 64, 125)

    formula = Formula(
        shape=("L", "L", "L"),
        params=(Param("beta", "a real number"), Param("Jx", "an (L-1) x L x L nested list of values in {-1, +1}"),
                Param("Jy", "an L x (L-1) x L nested list of values in {-1, +1}"),
                Param("Jz", "an L x L x (L-1) nested list of values in {-1, +1}")),
        terms=(term("Jx[a][b][c] * s[a][b][c] * s[a + 1][b][c]",
                    ("a", "0", "L - 2"), ("b", "0", "L - 1"), ("c", "0", "L - 1")),
               term("Jy[a][b][c] * s[a][b][c] * s[a][b + 1][c]",
                    ("a", "0", "L - 1"), ("b", "0", "L - 2"), ("c", "0", "L - 1")),
               term("Jz[a][b][c] * s[a][b][c] * s[a][b][c + 1]",
                    ("a", "0", "L - 1"), ("b", "0", "L - 1"), ("c", "0", "L - 2"))),
        derived=(Derived("L", "round(n ** (1 / 3))"),),
        size_note="n = L*L*L with L >= 2",
    )

    def check_size(self, n):
        cube_side(self.id, n)

    def _shapes(self, L):
        return {"Jx": (L - 1, L, L), "Jy": (L, L - 1, L), "Jz": (L, L, L - 1)}

    def sample_params(self, rng, n):
        L = cube_side(self.id, n)
        out = {"beta": sample_beta(rng)}
        for key, shape in self._shapes(L).items():
            out[key] = rng.choice([-1.0, 1.0], size=shape).tolist()
        return out

    def gauge(self, params, signs):
        L = len(params["Jy"])
        g = np.asarray(signs, dtype=float).reshape(L, L, L)
        return {**params,
                "Jx": (np.asarray(params["Jx"], dtype=float) * g[:-1] * g[1:]).tolist(),
                "Jy": (np.asarray(params["Jy"], dtype=float) * g[:, :-1] * g[:, 1:]).tolist(),
                "Jz": (np.asarray(params["Jz"], dtype=float) * g[:, :, :-1] * g[:, :, 1:]).tolist()}

    def to_model(self, params, n):
        L = cube_side(self.id, n)
        beta = get_float(params, "beta")
        J = [get_array(params, key, shape, pm_one=True).ravel() for key, shape in self._shapes(L).items()]
        return IsingModel.from_arrays(n, beta, np.concatenate(cubic_edges(L)), np.concatenate(J))


TASK = CubicGlass()
