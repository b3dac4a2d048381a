"""A user task file written with a formula only: the Ising model on a decorated square torus.

Every bond of an L x L torus carries a decorating spin between its two end spins (Syozi's decorated
lattice). The file gives the formula and the parameter sampler; nothing tells the framework how to
solve it. The derivation engine finds, from the formula alone, that summing out the decorating spins
(decoration-iteration) leaves a homogeneous nearest-neighbour torus, which Kaufman's formula solves:

    evolve derive --task-file examples/tasks/decorated_torus.py --task DECORATED
"""

import numpy as np

from tasks.base import Gold, Task, get_float, sample_beta
from tasks.formula import Derived, Formula, Param, term
from tasks.model import IsingModel, Lattice


def side(n: int) -> int:
    """L with n = 3 L^2 (L >= 3), or ValueError."""
    L = int(round((n / 3) ** 0.5))
    if 3 * L * L != n or L < 3:
        raise ValueError(f"DECORATED: n must be 3*L*L with L >= 3, got n={n}")
    return L


def decorated_bonds(L: int) -> tuple[np.ndarray, np.ndarray]:
    """(edges of the horizontal bonds' halves, of the vertical bonds' halves). Site (r, k) of the
    L x 3L array is r*3L + k: node (r, 3c), its right decorator (r, 3c+1), its lower one (r, 3c+2)."""
    r, c = np.divmod(np.arange(L * L), L)
    node = r * 3 * L + 3 * c
    right = node + 1
    below = node + 2
    right_node = r * 3 * L + 3 * ((c + 1) % L)
    lower_node = ((r + 1) % L) * 3 * L + 3 * c
    h = np.concatenate([np.stack([node, right], 1), np.stack([right, right_node], 1)])
    v = np.concatenate([np.stack([node, below], 1), np.stack([below, lower_node], 1)])
    return h, v


class DecoratedTorus(Task):
    id = "DECORATED"
    title = "Ising model on a decorated square torus (a spin on every bond)"
    tier = 1
    citation = "User task file examples/tasks/decorated_torus.py (statmech-evolve README, derivations)."
    square_lattice = False
    formula = Formula(
        shape=("L", "3 * L"),
        params=(Param("beta", "a real number"), Param("Jh", "a real number (horizontal bonds)"),
                Param("Jv", "a real number (vertical bonds)")),
        terms=(term("Jh * s[r][3 * c] * s[r][3 * c + 1]", ("r", "0", "L - 1"), ("c", "0", "L - 1")),
               term("Jh * s[r][3 * c + 1] * s[r][3 * ((c + 1) % L)]", ("r", "0", "L - 1"), ("c", "0", "L - 1")),
               term("Jv * s[r][3 * c] * s[r][3 * c + 2]", ("r", "0", "L - 1"), ("c", "0", "L - 1")),
               term("Jv * s[r][3 * c + 2] * s[(r + 1) % L][3 * c]", ("r", "0", "L - 1"), ("c", "0", "L - 1"))),
        derived=(Derived("L", "isqrt(n // 3)"),),
        size_note="n = 3*L*L with L >= 3",
    )
    canonical = """\
n = 3 L^2 spins s[r][k] in {-1, +1} (L >= 3) on an L x 3L array: for each r, c in 0..L-1 the spin
s[r][3c] sits on the site (r, c) of an L x L torus, s[r][3c+1] on the bond from (r, c) to (r, c+1 mod L)
and s[r][3c+2] on the bond from (r, c) to (r+1 mod L, c); each bond spin is coupled to both ends.
H = - sum_{r,c} ( Jh s[r][3c] s[r][3c+1] + Jh s[r][3c+1] s[r][3((c+1) mod L)]
                 + Jv s[r][3c] s[r][3c+2] + Jv s[r][3c+2] s[(r+1) mod L][3c] ).
Implement
def Z_efficient(params: dict, n: int) -> float:
    # params has "beta", "Jh", "Jv" (floats); L = isqrt(n // 3)
computing Z = sum over all 2^n spin states of exp(-beta * H) in time polynomial in n."""
    paraphrased = canonical
    gold = Gold("transfer_matrix", "O(n)")      # Kaufman: the row-to-row transfer matrix diagonalised
    probe_sizes = (27,)                     # L = 3: 27 spins, checked by brute force
    ladder_sizes = (48, 75, 108, 147, 300)  # exact oracles (a transfer matrix) check these

    def check_size(self, n):
        side(n)

    def sample_params(self, rng, n):
        side(n)
        return {"beta": sample_beta(rng), "Jh": float(rng.uniform(-1.5, 1.5)), "Jv": float(rng.uniform(-1.5, 1.5))}

    def to_model(self, params, n):
        L = side(n)
        beta, Jh, Jv = get_float(params, "beta"), get_float(params, "Jh"), get_float(params, "Jv")
        h, v = decorated_bonds(L)
        J = np.concatenate([np.full(len(h), Jh), np.full(len(v), Jv)])
        return IsingModel.from_arrays(n, beta, np.concatenate([h, v]), J, lattice=Lattice(L, 3 * L, True, True))


TASK = DecoratedTorus()
