"""A parity-constrained sum whose weight couples variables, as Ising layers on the dual graphs (the toric
code under depolarizing noise: Bombin, Andrist, Ohzeki, Katzgraber and Martin-Delgado, PRX 2, 021004
(2012)).

dual_rbim (search/derivation/actions/dual_rbim.py) takes independent variables and one family of
conditions holding every variable twice. Here the variables fall into blocks, each the variables of one
family of conditions on a periodic grid that holds each of them exactly twice (for the depolarizing
toric code: the x bits with the vertex conditions, the z bits with the plaquette conditions). Each block
is a graph drawn on its grid; its faces (traced as dual_rbim traces them) are cycles. If the faces of all
blocks generate the solutions of the homogeneous system (every face satisfies every condition, and
rank A + rank(faces) = number of variables, over GF(2)), the solutions are x1 + sum_f sigma_f (face f),
each reached 2^(F - rank) times, and with t_f = (-1)^(sigma_f), eta_b = (-1)^(x1_b),

    s_b = -eta_b t_f t_g   (f, g the faces on the two sides of variable b in its block),

so a monomial w prod_{b in T} s_b of the weight becomes w prod_b (-eta_b) times the product of the face
spins met an odd number of times: pair terms within a block, and four-spin terms where the weight
couples variables of two blocks (the Y error: x_b z_b). The result is an Ising model with multi-spin
terms over the faces of every block, numbered block after block (faces of one block row by row of the
grid cells they sit in, when they tile the grid). No polynomial method is known for it in general: the
step is a checked reduction, and what follows it is the exact exponential solver or bounds.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from search.derivation.actions import register
from search.derivation.actions.dual_rbim import _act_dual_faces, _act_dual_gf2
from search.derivation.runtime import _rt_merge

NAME = "dual_layers"
SUMMARY = ("parity-constrained sum whose weight couples variables -> Ising layers on the faces of each block's "
           "drawing, coupled by multi-spin terms (couplings from a reference solution)")
COST = "O(n^3)"
LABELS: tuple[str, ...] = ()
PRESERVES_ENERGY = False
ORDER = 25                 # after dual_rbim, which takes the independent case
FIRST_STEP = True          # tried on every state of a problem before it is a spin model
OPTION_SPACE: dict = {}
IMPORTS = """\
import math

import numpy as np
"""


def _act_layers_faces(fam, N):
    """(variables of the block, face of each of its darts (2 per variable, in variable order), face count,
    labels of the faces) of one family that holds each of its variables exactly twice on a grid."""
    count = np.bincount(fam["var"], minlength=N)
    block = np.flatnonzero(count)
    local = np.full(N, -1, dtype=np.int64)
    local[block] = np.arange(len(block))
    by_var = np.argsort(local[fam["var"]], kind="stable")
    ends = fam["row_of"][by_var].reshape(len(block), 2)
    coords = np.asarray(fam["coords"], dtype=np.int64)
    shape = coords.max(axis=0) + 1
    face, tail, F = _act_dual_faces(ends[:, 0], ends[:, 1], coords, shape)
    first = np.zeros(F, dtype=np.int64)
    first[face[::-1]] = tail[::-1]
    d = coords[tail] - coords[first[face]]
    d = np.where(shape > 2, (d + shape // 2) % shape - shape // 2, d)
    centre = (coords[first] + np.stack([np.bincount(face, d[:, a], F) / np.bincount(face, minlength=F)
                                        for a in range(2)], 1)) % shape
    cell = np.floor(centre + 1e-9).astype(np.int64) % shape
    label = cell[:, 0] * shape[1] + cell[:, 1]
    if not (F == int(shape[0] * shape[1]) and len(np.unique(label)) == F):
        label = np.arange(F)
    return block, label[face], F


def _act_dual_layers(problem, options):
    """The Ising model on the faces of every block whose log Z plus log_shift is the constrained sum's log."""
    if problem.get("kind") != "constrained":
        raise ValueError("the dual step takes a parity-constrained sum")
    N = int(problem["n_vars"])
    if all(idx.shape[1] == 1 for idx, _ in problem["terms"]):
        raise ValueError("the variables are independent (dual_rbim's case)")
    fams = problem["constraints"]
    twice = [c for c in fams if c["coords"].shape[1] == 2 and set(np.bincount(c["var"]).tolist()) <= {0, 2}]
    owner = np.full(N, -1, dtype=np.int64)
    for k, c in enumerate(twice):
        vs = np.unique(c["var"])
        if np.any(owner[vs] >= 0):
            raise ValueError("two families of conditions hold the same variable twice")
        owner[vs] = k
    if len(twice) < 2 or np.any(owner < 0):
        raise ValueError("the variables do not split into blocks, each held twice by one family of conditions "
                         "on a grid")
    rows = sum(len(c["rhs"]) for c in fams)
    A, rhs, offset = np.zeros((rows, N), dtype=np.int64), np.zeros(rows, dtype=np.int64), 0
    for c in fams:
        np.add.at(A, (offset + c["row_of"], c["var"]), 1)
        rhs[offset:offset + len(c["rhs"])] = c["rhs"]
        offset += len(c["rhs"])
    A %= 2
    rank_a, x1 = _act_dual_gf2(A, rhs)
    if x1 is None:
        raise ValueError("no assignment satisfies the parity conditions")
    sides = np.zeros((N, 2), dtype=np.int64)          # the two faces of each variable, numbered globally
    F, gens = 0, []
    for c in twice:
        block, faces, count = _act_layers_faces(c, N)
        sides[block] = faces.reshape(-1, 2) + F
        G = np.zeros((count, N), dtype=np.int64)
        np.add.at(G, (faces, np.repeat(block, 2)), 1)
        gens.append(G % 2)
        F += count
    G = np.concatenate(gens)
    rank_g = _act_dual_gf2(G)[0]
    if np.any((A @ G.T) % 2) or rank_a + rank_g != N:
        raise ValueError("the faces of the drawings do not generate the solutions of the conditions")
    sign = -(1.0 - 2.0 * x1)                           # s_b = sign_b t_f t_g
    out, const = [], float(problem["constant"])
    for idx, w in problem["terms"]:
        for row, weight in zip(idx.tolist(), np.asarray(w, dtype=np.float64).tolist()):
            met = np.bincount(sides[row].ravel(), minlength=F) % 2
            spins = np.flatnonzero(met)
            value = weight * float(np.prod(sign[row]))
            if len(spins) == 0:
                const += value
            else:
                out.append((spins, value))
    by_order: dict[int, list] = {}
    for spins, value in out:
        by_order.setdefault(len(spins), []).append((spins, value))
    terms = _rt_merge([(np.array([s for s, _ in group], dtype=np.int64), np.array([v for _, v in group]))
                       for _, group in sorted(by_order.items())])
    shift = const - (F - rank_g) * math.log(2.0)
    return {"n": int(F), "beta": 1.0, "terms": terms, "rank_one": [], "log_shift": shift, "energy_shift": 0.0,
            "positions": None, "coords": None, "statistic": "log_z"}


FUNCTIONS = (_act_dual_gf2, _act_dual_faces, _act_layers_faces, _act_dual_layers)
ENTRY = _act_dual_layers


def admits(view) -> str | None:
    if view.kind != "constrained":
        return "not a parity-constrained sum"
    return view.reason(NAME)


def explain(view, options) -> dict:
    return {"blocks": "the variables each family of conditions holds twice, drawn on its grid",
            "faces": "traced from each drawing (dual_rbim's rotation system)",
            "couplings": "w prod_b (-eta_b) on the faces met an odd number of times",
            "reference": "x1 by Gaussian elimination over GF(2)"}


register(sys.modules[__name__])
