"""Splitting into independent components: a spin that shares no term with another is its own factor.

Z factorises over the connected components of the interaction graph; the one-spin components factor
out here, log(2 cosh K_i) each (log 2 without a field), and the spins that remain are renumbered.
The solvers of the library treat several larger components at once (chains, sweeps, contractions and
Pfaffians each handle a disjoint union), so only the single spins need this step: it is what makes,
for example, the sub-grid left by a decoration a full grid again.
"""

from __future__ import annotations

import sys

import numpy as np

from search.derivation.runtime import _rt_compact, _rt_neighbour_pairs
from search.derivation.actions import register

NAME = "components"
SUMMARY = "factor out the spins that share no term with another (log 2cosh K each)"
COST = "O(n)"
LABELS: tuple[str, ...] = ()
PRESERVES_ENERGY = False
ORDER = 90                 # where a derivation search tries it among the actions
FIRST_STEP = False
OPTION_SPACE: dict = {}
IMPORTS = """\
import numpy as np
"""


def _act_components(model, options):
    """The model without its one-spin components; log_shift gains their log 2cosh K."""
    n = model["n"]
    a, b = _rt_neighbour_pairs(model)
    joined = np.zeros(n, dtype=bool)
    joined[a] = True
    joined[b] = True
    for u, _ in model["rank_one"]:
        if np.count_nonzero(u) > 1:
            joined |= u != 0.0
    H = np.zeros(n)
    parts = []
    for idx, w in model["terms"]:
        if idx.shape[1] == 1:
            alone = ~joined[idx[:, 0]]
            np.add.at(H, idx[alone, 0], w[alone])
            parts.append((idx[~alone], w[~alone]))
        else:
            parts.append((idx, w))
    x = np.abs(H[~joined])
    shift = float(np.sum(x + np.log1p(np.exp(-2.0 * x))))
    out = _rt_compact({**model, "terms": [p for p in parts if len(p[1])]}, joined)
    out["log_shift"] = model["log_shift"] + shift
    return out


FUNCTIONS = (_act_components,)
ENTRY = _act_components


def admits(view) -> str | None:
    if view.kind != "model" or view.statistic != "log_z":
        return "needs a spin model whose quantity is log Z"
    if not view.lone_spins:
        return "every spin shares a term with another"
    if view.all_lone:
        return "every spin is alone: the product solver finishes it"
    return None


def explain(view, options) -> dict:
    return {"factor": "log(2 cosh K_i) for each spin that shares no term"}


register(sys.modules[__name__])
