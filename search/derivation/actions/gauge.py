"""Gauge transformation: s_i -> tau_i s_i with tau chosen so that every pair coupling is ferromagnetic.

A k-spin weight K_S becomes (prod_{i in S} tau_i) K_S and Z is unchanged (docs/derivations.md, "Gauge").
The signs exist exactly when every cycle carries an even number of negative couplings (Harary 1953);
they are read off the double cover of the coupling graph (vertices (i, +) and (i, -); a bond of sign
sigma joins (i, a) to (j, a sigma)): the signs are balanced iff no (i, +) shares a component with
(i, -), and tau_i is the side of (i, +) in its root's component. For one rank-one block
(A/2)[(u.s)^2 - |u|^2] the gauge is tau = sign(u) (Mattis: u becomes |u|, Curie-Weiss form). When the signs
are frustrated the step fails at run time, and the engine records an odd cycle as the proof.
"""

from __future__ import annotations

import sys

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from search.derivation.actions import register

NAME = "gauge"
SUMMARY = "s_i -> tau_i s_i making every pair coupling ferromagnetic (or a rank-one block |u|)"
COST = "O(n)"
LABELS = ("gauge",)
PRESERVES_ENERGY = True
ORDER = 40                 # where a derivation search tries it among the actions
FIRST_STEP = False
OPTION_SPACE: dict = {}
IMPORTS = """\
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
"""


def _act_gauge_signs(n, edges, K):
    """tau in {-1, +1}^n with tau_i tau_j K_ij > 0 on every edge (ValueError: a frustrated cycle)."""
    tau = np.ones(n)
    if len(edges) == 0:
        return tau
    i, j = edges[:, 0], edges[:, 1]
    flip = (K < 0).astype(np.int64) * n
    rows = np.r_[i, i + n]
    cols = np.r_[j + flip, j + n - flip]
    _, lab = connected_components(coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(2 * n, 2 * n)),
                                  directed=False)
    if np.any(lab[:n] == lab[n:]):
        raise ValueError("the couplings are frustrated (a cycle with an odd number of negative bonds): no gauge")
    _, comp = connected_components(coo_matrix((np.ones(len(i)), (i, j)), shape=(n, n)), directed=False)
    _, first = np.unique(comp, return_index=True)
    root = first[comp]
    return np.where(lab[:n] == lab[root], 1.0, -1.0)


def _act_gauge(model, options):
    """The gauged model: every pair coupling positive (or the rank-one vector |u|); Z unchanged."""
    n = model["n"]
    pairs = [(i, w) for i, w in model["terms"] if i.shape[1] == 2]
    if model["rank_one"] and not pairs:
        if len(model["rank_one"]) != 1:
            raise ValueError("the gauge of rank-one couplings takes one block")
        u = model["rank_one"][0][0]
        tau = np.where(u < 0, -1.0, 1.0)
    else:
        if model["rank_one"]:
            raise ValueError("pair couplings and a rank-one block together: no gauge is taken")
        edges, K = pairs[0] if pairs else (np.zeros((0, 2), dtype=np.int64), np.zeros(0))
        tau = _act_gauge_signs(n, edges, K)
    terms = [(idx, w * np.prod(tau[idx], axis=1)) for idx, w in model["terms"]]
    blocks = [(u * tau, a) for u, a in model["rank_one"]]
    return {**model, "terms": terms, "rank_one": blocks}


FUNCTIONS = (_act_gauge_signs, _act_gauge)
ENTRY = _act_gauge


def admits(view) -> str | None:
    """None when some instance has signs to remove and every instance's signs are balanced."""
    if view.kind != "model":
        return "there is no spin model yet"
    if not view.negative_signs:
        return "every coupling is already ferromagnetic (nothing to gauge)"
    if view.rank_one and view.has_pairs:
        return "pair couplings and a rank-one block together"
    if not view.rank_one and not view.gauge_balanced:
        return "the signs are frustrated: " + (view.frustration or "a cycle with an odd number of negative bonds")
    return None


def explain(view, options) -> dict:
    return {"tau": "sign(u_i)" if view.rank_one else "from the double cover of the coupling graph (spanning forest)",
            "maps": "K_S -> (prod_{i in S} tau_i) K_S; fields h_i -> tau_i h_i"}


register(sys.modules[__name__])
