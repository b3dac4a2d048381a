"""Nishimori gauge averaging: a disorder average on the Nishimori line as one model over signs and spins.

The signs eta_b are independent with log-weight C(eta) = c_d + sum_b L_b eta_b, and each one multiplies
exactly one inner term: W_eta(s) = c_i + sum_b w_b eta_b prod_{i in S_b} s_i. The gauge s_i -> sigma_i s_i,
eta_b -> eta_b prod_{S_b} sigma_i leaves every W_eta(s) unchanged, so a gauge-invariant f(eta) averages
the same under P(eta) as under its gauge average (1/2^n) sum_sigma P(eta^sigma); on the Nishimori line
L_b = b_N w_b that average is e^(c_d) Z'_eta(b_N) / 2^n (Nishimori 1981). Hence

    R   = sum_eta P(eta) Z_eta(beta) / Z_eta(b_N) = exp((beta - b_N) c_i + c_d - n log 2) * Z_joint(beta)
    [E] = sum_eta P(eta) <-W_eta>_(b_N)           = -c_i + <-sum_b w_b eta_b prod s>_joint at b_N

with Z_joint(beta) = sum over signs and spins of exp(beta sum_b w_b eta_b prod_{S_b} s_i): a model over
both, whose every term owns its sign (so free_terms applies next). The mean-energy form needs the
weights normalised (sum_eta e^C = 1), which the step checks. Preconditions checked at run time: one
sign per inner term and one inner term per sign, fields only on the signs, L_b = b_N w_b (rtol 1e-9).
"""

from __future__ import annotations

import sys

import math

import numpy as np
from search.derivation.actions import register

NAME = "nishimori"
SUMMARY = "average over gauge orbits on the Nishimori line: the disorder average becomes one model over signs and spins"
COST = "O(n)"
LABELS = ("rbim_nishimori",)
PRESERVES_ENERGY = True
ORDER = 10                 # where a derivation search tries it among the actions
FIRST_STEP = True  # tried on every state of a problem before it is a spin model
OPTION_SPACE: dict = {}
IMPORTS = """\
import math

import math

import numpy as np
"""


def _act_nishimori(problem, options):
    """The runtime model over signs and spins (see the module docstring); ValueError off the line."""
    if problem.get("kind") != "disorder":
        raise ValueError("the Nishimori step takes a disorder average")
    N, n = int(problem["n_disorder"]), int(problem["n"])
    L = np.zeros(N)
    for idx, w in problem["disorder"]["terms"]:
        if idx.shape[1] != 1:
            raise ValueError("the signs are not independent (their weight couples them)")
        np.add.at(L, idx[:, 0], w)
    owner = np.full(N, -1, dtype=np.int64)
    parts, weights = [], []
    for idx, w in problem["inner"]["terms"]:
        signs = idx < N
        if np.any(signs.sum(axis=1) != 1) or idx.shape[1] < 2:
            raise ValueError("an inner term does not read exactly one sign")
        b = idx[signs]
        if np.any(owner[b] >= 0) or len(np.unique(b)) != len(b):
            raise ValueError("a sign multiplies more than one inner term")
        owner[b] = 1
        parts.append((idx, w))
        weights.append((b, w))
    if np.any(owner < 0):
        raise ValueError("a sign multiplies no inner term")
    w_of = np.zeros(N)
    for b, w in weights:
        w_of[b] = w
    b_ref = float(problem["reference_beta"])
    if not np.allclose(L, b_ref * w_of, rtol=1e-9, atol=1e-12):
        raise ValueError("the sign weights are off the Nishimori line (L_b != b_N w_b)")
    c_d, c_i = float(problem["disorder"]["constant"]), float(problem["inner"]["constant"])
    a = np.abs(L)
    log_mass = c_d + float(np.sum(a + np.log1p(np.exp(-2.0 * a))))
    beta = float(problem["beta"])
    model = {"n": N + n, "beta": beta, "terms": [(i, beta * w) for i, w in parts], "rank_one": [],
             "positions": None, "coords": None}
    if problem["statistic"] == "mean":
        if abs(log_mass) > 1e-9:
            raise ValueError("the sign weights do not sum to one")
        return {**model, "log_shift": 0.0, "energy_shift": -c_i, "statistic": "mean_energy"}
    return {**model, "log_shift": (beta - b_ref) * c_i + c_d - n * math.log(2.0), "energy_shift": -c_i,
            "statistic": "log_z"}


FUNCTIONS = (_act_nishimori,)
ENTRY = _act_nishimori


def admits(view) -> str | None:
    if view.kind != "disorder":
        return "not a disorder average"
    return view.nishimori_reason


def explain(view, options) -> dict:
    return {"line": "L_b = b_N w_b (the sign weight equals the reference inverse temperature times the bond)",
            "becomes": "Z_joint(beta) over signs and spins, divided by 2^n and the sign normalisation"}


register(sys.modules[__name__])
