"""Independent term variables: when every term owns a private spin, the term products are free.

If the terms can be removed one at a time, each through a spin that no remaining term contains
(tasks/term_independence.py), then t_(p_k) = prod_{i in S_k} s_i for each term k with its private
spin p_k, and t_i = s_i for the other spins, is a bijection of {-1, +1}^n (solve for s_{p_k} in the
reverse removal order). The weight becomes sum_k K_k t_{p_k}: a field on each private spin, nothing
else, and Z is unchanged (docs/derivations.md, "Independent term variables"; the open plaquette model T13, and the
bond variables of a disorder average after the Nishimori step). Energies are unchanged as well.
"""

from __future__ import annotations

import sys

import numpy as np
from search.derivation.actions import register

NAME = "free_terms"
SUMMARY = "change of variables to the term products t_k = prod s (each term owns a private spin)"
COST = "O(n)"
LABELS = ("exactly_solvable_other",)
PRESERVES_ENERGY = True
ORDER = 50                 # where a derivation search tries it among the actions
FIRST_STEP = False
OPTION_SPACE: dict = {}
IMPORTS = """\
import numpy as np
"""


def _act_free_terms(model, options):
    """Fields K_k on the private spins p_k: the model in the variables t (ValueError when some terms
    share all their spins)."""
    if model["rank_one"]:
        raise ValueError("rank-one blocks are not independent terms")
    n = model["n"]
    members, weights = [], []
    for idx, w in model["terms"]:
        members += idx.tolist()
        weights.append(w)
    w = np.concatenate(weights) if weights else np.zeros(0)
    holders = [[] for _ in range(n)]
    for t, spins in enumerate(members):
        for s in spins:
            holders[s].append(t)
    count = [len(h) for h in holders]
    alive = np.ones(len(w), dtype=bool)
    private = np.full(len(w), -1, dtype=np.int64)
    queue = [s for s in range(n) if count[s] == 1]
    while queue:                          # peel: a spin in exactly one live term makes that term free
        s = queue.pop()
        if count[s] != 1:
            continue
        t = next(t for t in holders[s] if alive[t])
        alive[t] = False
        private[t] = s
        for x in members[t]:
            count[x] -= 1
            if count[x] == 1:
                queue.append(x)
    if np.any(alive):
        raise ValueError("the terms are not independent: some terms share all their spins")
    return {**model, "terms": [(private[:, None], w)] if len(w) else []}


FUNCTIONS = (_act_free_terms,)
ENTRY = _act_free_terms


def admits(view) -> str | None:
    if view.kind != "model":
        return "there is no spin model yet"
    if view.rank_one:
        return "a rank-one block couples every pair"
    if view.max_order < 2:
        return "only one-spin terms: nothing to free"
    if not view.independent_terms:
        return "some terms share all their spins (they do not peel off one by one)"
    return None


def explain(view, options) -> dict:
    return {"variables": "t_k = prod_{i in S_k} s_i on a private spin of each term", "jacobian": "a bijection: Z unchanged"}


register(sys.modules[__name__])
