"""Mean field (Gibbs-Bogoliubov): a rigorous LOWER bound on log Z for terms of any order and fields.

Convention: the runtime model's dimensionless weights, W(s) = sum_k K_k prod_{i in S_k} s_i, Z = sum_s
exp(W(s)), natural logs; the bound is on log Z without the model's ``log_shift`` (the program adds it).

For any distribution q, log Z >= <W>_q + S(q) (Gibbs' inequality, KL(q || p) >= 0). For the product
distribution with magnetisations m_i in [-1, 1] (no term holds a spin twice, so <prod s> = prod m):

    log Z >= F(m) = sum_i [entr((1 + m_i)/2) + entr((1 - m_i)/2)] + sum_k K_k prod_{i in S_k} m_i,

entr(x) = -x log x. The bound holds for EVERY m, so it never depends on convergence: the program
returns the largest F found. F is concave in each m_i alone, maximised at m_i = tanh(h_i) with
h_i = dF/dm_i minus the entropy's part; spins of one colour of a greedy colouring share no term, so
updating a colour class at once is exact coordinate ascent and F never decreases. Restart 0 starts at
m = 0 (F = n log 2 + 0 with no fields: the infinite-temperature bound); the others from random m,
with the couplings ramped from 0.1 to 1 over the first half of the sweeps (deterministic annealing,
which escapes the worst local optima at low temperature). m = +-1 is a configuration, so the bound is
also at least -beta E(s) of the best configuration met: it stays tight to O(1) per excitation when
cold. Everything is float64 with no cancellation (entr from scipy); rounding is the only error.
Cost O(restarts * sweeps * colours * terms): O(n) at fixed options.
"""

from __future__ import annotations

import sys

import numpy as np
from scipy.special import entr

from search.derivation.solvers import register_answer
from search.derivation.solvers.adapters import ModuleSolver

NAME = "mean_field"
ANSWER = "lower"
ORDER = 10                 # where answers.py tries it among the answer solvers
CHEAP = False
SUMMARY = "Gibbs-Bogoliubov mean field: a rigorous lower bound on log Z (any product distribution)"
OPTION_SPACE = {"restarts": (6, 2, 16), "sweeps": (60, 20, 200)}
IMPORTS = """\
import numpy as np
from scipy.special import entr
"""


def _mf_factors(model):
    """[(idx (m, k), K (m,))] of the model's terms; ValueError on a rank-one block."""
    if model["rank_one"]:
        raise ValueError("the mean-field bound here takes terms, not rank-one blocks")
    return [(np.asarray(i, dtype=np.int64), np.asarray(w, dtype=np.float64)) for i, w in model["terms"] if len(w)]


def _mf_colours(n, factors):
    """(n,) colours such that no two spins of one term share one (greedy, in index order)."""
    a, b = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for idx, _ in factors:
        for x in range(idx.shape[1]):
            for y in range(idx.shape[1]):
                if x != y:
                    a.append(idx[:, x])
                    b.append(idx[:, y])
    a, b = np.concatenate(a), np.concatenate(b)
    order = np.argsort(a, kind="stable")
    a, b = a[order], b[order]
    start = np.searchsorted(a, np.arange(n + 1))
    colour = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        used = set(colour[b[start[i]:start[i + 1]]].tolist())
        c = 0
        while c in used:
            c += 1
        colour[i] = c
    return colour


def _mf_fields(n, factors, m, scale):
    """(n,) h_i = scale * sum over terms holding i of K prod_{j != i} m_j."""
    h = np.zeros(n)
    for idx, K in factors:
        mv = m[idx]
        for a in range(idx.shape[1]):
            rest = np.prod(np.delete(mv, a, axis=1), axis=1) if idx.shape[1] > 1 else 1.0
            h += np.bincount(idx[:, a], weights=scale * K * rest, minlength=n)
    return h


def _mf_value(factors, m):
    """F(m): the Gibbs-Bogoliubov lower bound at magnetisations m."""
    value = float(np.sum(entr(0.5 * (1.0 + m)) + entr(0.5 * (1.0 - m))))
    for idx, K in factors:
        value += float(K @ np.prod(m[idx], axis=1))
    return value


def _sol_mean_field(model, options):
    """The largest F(m) found: a lower bound on log Z (without the model's shift)."""
    n = int(model["n"])
    factors = _mf_factors(model)
    if n == 0:
        return 0.0
    colour = _mf_colours(n, factors)
    classes = [np.flatnonzero(colour == c) for c in range(int(colour.max()) + 1)]
    restarts, sweeps = int(options.get("restarts", 6)), int(options.get("sweeps", 60))
    rng = np.random.default_rng(12345)
    best = -np.inf
    for r in range(restarts):
        m = np.zeros(n) if r == 0 else np.tanh(2.0 * rng.standard_normal(n))
        ramp = max(1, sweeps // 2) if r > 0 else 0
        for sweep in range(sweeps):
            scale = min(1.0, 0.1 + 0.9 * sweep / ramp) if ramp else 1.0
            old = m.copy()
            for cls in classes:
                m[cls] = np.tanh(_mf_fields(n, factors, m, scale)[cls])
            if scale == 1.0:
                best = max(best, _mf_value(factors, m))
                if float(np.max(np.abs(m - old), initial=0.0)) < 1e-12:
                    break
        best = max(best, _mf_value(factors, m))
    return float(best)


FUNCTIONS = (_mf_factors, _mf_colours, _mf_fields, _mf_value, _sol_mean_field)
ENTRY = _sol_mean_field


def applies(view) -> str | None:
    if view.kind != "model":
        return "there is no spin model yet"
    if view.statistic != "log_z":
        return "it bounds log Z, not a mean energy"
    if view.rank_one:
        return "the model has a rank-one block (the bound here takes terms only)"
    return None


def claims(view, options):
    return (("no_efficient_known",), "O(n)",
            "A rigorous lower bound, not an exact value: log Z >= <W>_q + S(q) for every product distribution q "
            "(Gibbs-Bogoliubov), maximised by coordinate ascent over colour classes from several starts; "
            f"{options.get('restarts', 6)} restarts x {options.get('sweeps', 60)} sweeps, each O(terms): O(n).", 0)


register_answer(ModuleSolver(sys.modules[__name__]))
