"""Ghost spin: fields as couplings to one extra spin s_0, h_i s_i = h_i s_i s_0.

With s_0 summed the new model counts every configuration twice (the global flip), so log Z changes by
-log 2 (docs/derivations.md, "Ghost spin"). The step is worth taking when the result keeps a solvable
structure: a planar drawing stays planar when the field-carrying spins lie on one face and the ghost
is drawn inside it. The ghost goes at the centroid of the field-carrying spins ("centroid": a ring
drawn on a circle becomes a wheel) or above the drawing ("outside": a path becomes a fan); the planar
solver proves the resulting drawing planar before it trusts it.
"""

from __future__ import annotations

import sys

import math

import numpy as np

from search.derivation.runtime import _rt_merge
from search.derivation.actions import register

NAME = "ghost_spin"
SUMMARY = "fields as couplings to one extra spin (Z doubles), keeping a planar drawing when the ghost fits"
COST = "O(n)"
LABELS: tuple[str, ...] = ()
PRESERVES_ENERGY = False
ORDER = 100                 # where a derivation search tries it among the actions
FIRST_STEP = False
OPTION_SPACE = {"place": ("centroid", "outside")}
IMPORTS = """\
import math

import math

import numpy as np
"""


def _act_ghost_spin(model, options):
    """The model with spin n (the ghost) joined to every spin with a field; log_shift - log 2."""
    n = model["n"]
    parts, H = [], np.zeros(n)
    for idx, w in model["terms"]:
        if idx.shape[1] == 1:
            np.add.at(H, idx[:, 0], w)
        else:
            parts.append((idx, w))
    sites = np.flatnonzero(H)
    parts.append((np.stack([sites, np.full(len(sites), n)], 1), H[sites]))
    positions = model["positions"]
    if positions is not None:
        pos = np.asarray(positions, dtype=np.float64)
        if options.get("place", "centroid") == "centroid":
            ghost = pos[sites].mean(axis=0) if len(sites) else pos.mean(axis=0)
        else:
            span = float(np.ptp(pos[:, 1])) + 1.0
            ghost = np.array([pos[:, 0].mean(), pos[:, 1].max() + span])
        positions = np.vstack([pos, ghost])
    blocks = [(np.append(u, 0.0), a) for u, a in model["rank_one"]]
    return {**model, "n": n + 1, "terms": _rt_merge(parts), "rank_one": blocks, "positions": positions, "coords": None,
            "log_shift": model["log_shift"] - math.log(2.0)}


FUNCTIONS = (_act_ghost_spin,)
ENTRY = _act_ghost_spin


def admits(view) -> str | None:
    if view.kind != "model" or view.statistic != "log_z":
        return "needs a spin model whose quantity is log Z"
    if not view.has_fields:
        return "there are no fields"
    if view.max_order > 2 or view.rank_one:
        return "the ghost is useful for pair models only"
    if not view.has_positions and (view.family is None or view.family.planar is not True):
        return "no drawing to keep planar, and the interaction graph is not planar"
    return None


def explain(view, options) -> dict:
    return {"place": options.get("place", "centroid"), "coupling": "K(i, ghost) = K_i (the field)"}


register(sys.modules[__name__])
