"""Closed forms and O(n) exact methods: chains, zero-field forests, Mattis (rank-one) models.

Conventions: natural log Z at ``model.beta``; weights in energy units, Boltzmann factor
exp(beta * w * prod s); ``model.constant`` adds beta * constant to log Z.

- ``forest_log_z``: zero field, pair couplings on an acyclic graph (open chains included):
  Z = 2^n prod_e cosh(beta J_e), i.e. the open chain's 2 prod 2 cosh(beta J_i).
- ``chain_log_z``: every spin has at most two partners (open paths, rings, isolated spins),
  any couplings and fields: 2x2 transfer matrices in the log domain, O(n) in numba.
- ``mattis_log_z``: the only interaction is one rank-one block -(a/2)[(u.s)^2 - |u|^2] with
  u_i in {-c, 0, +c}; the gauge t_i = sign(u_i) s_i gives the Curie-Weiss model, summed over the
  magnetisation M with binomial weights (uniform gauged field, O(n)) or, for arbitrary fields,
  a log-domain DP over M (O(n^2)).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.special import gammaln, logsumexp

from evaluators.oracles.base import NotApplicable, TooLarge
from tasks.model import IsingModel

LN2 = float(np.log(2.0))
MATTIS_DP_MAX_N = 20_000      # the O(n^2) field DP beyond this takes more than seconds
_DENSE_RANK_ONE_MAX_N = 64    # chains/forests read rank-one blocks only through dense couplings


def _log_2cosh(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x)
    return ax + np.log1p(np.exp(-2.0 * ax))


def _pairwise_reason(model: IsingModel) -> str | None:
    if any(w != 0.0 for _, w in model.higher_order):
        return "has interactions on three or more spins"
    if any(a != 0.0 for _, a in model.rank_one) and model.n > _DENSE_RANK_ONE_MAX_N:
        return "has rank-one (all-to-all) couplings"
    return None


# -- forests (zero field) --------------------------------------------------------------------


def forest_applies(model: IsingModel) -> str | None:
    """None when the model is zero-field, pairwise and its coupling graph has no cycle."""
    reason = _pairwise_reason(model)
    if reason is not None:
        return reason
    if model.has_fields:
        return "has nonzero fields"
    edges, _ = model.couplings
    if len(edges) == 0:
        return None
    g = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(model.n, model.n))
    n_comp, _ = connected_components(g, directed=False)
    if len(edges) != model.n - n_comp:
        return "the coupling graph has a cycle"
    return None


def forest_log_z(model: IsingModel) -> float:
    """log Z = n log 2 + sum_e log cosh(beta J_e) for a zero-field forest (open chains: 2 prod 2 cosh)."""
    reason = forest_applies(model)
    if reason is not None:
        raise NotApplicable(reason)
    _, J = model.couplings
    x = model.beta * J
    return float(model.n * LN2 + np.sum(_log_2cosh(x) - LN2) + model.beta * model.constant)


# -- chains with fields ----------------------------------------------------------------------


@njit(cache=True)
def _walk_paths_and_rings(n, nbr, deg):
    """Order spins component by component (paths from an end, rings from any spin).

    nbr: (n, 2) partner table (-1 = none). Returns (order, comp_start, is_ring)."""
    order = np.empty(n, dtype=np.int64)
    seen = np.zeros(n, dtype=np.bool_)
    starts = np.empty(n + 1, dtype=np.int64)
    ring = np.zeros(n, dtype=np.bool_)
    pos = 0
    nc = 0
    for phase in range(2):  # paths (and isolated spins) first, whatever is left is rings
        for s in range(n):
            if seen[s] or (phase == 0 and deg[s] == 2):
                continue
            starts[nc] = pos
            ring[nc] = phase == 1
            nc += 1
            prev, cur = -1, s
            while cur != -1 and not seen[cur]:
                seen[cur] = True
                order[pos] = cur
                pos += 1
                nxt = nbr[cur, 0] if nbr[cur, 0] != prev else nbr[cur, 1]
                if nbr[cur, 0] == nbr[cur, 1]:  # an isolated spin (both -1)
                    nxt = -1
                prev, cur = cur, nxt
    starts[nc] = pos
    return order, starts[: nc + 1], ring[:nc]


@njit(cache=True)
def _logaddexp(a, b):
    if a < b:
        a, b = b, a
    return a + np.log1p(np.exp(b - a))


@njit(cache=True)
def _path_log_z(x_field, x_bond, s0):
    """Sweep a path with 2x2 transfer matrices in the log domain.

    x_field: beta*h along the path, x_bond[i]: beta*J between spin i and i+1; s0 = 0: the first
    spin is free, s0 = -1 or +1: it is fixed (its field still counted). Returns (lm, lp, scale):
    log weights of the last spin being -1 / +1 are scale + lm / scale + lp, max(lm, lp) = 0. The
    scale is summed with Kahan compensation, so log Z keeps ~1e-16 relative error at any length."""
    if s0 == 0:
        lm, lp = -x_field[0], x_field[0]
    elif s0 > 0:
        lm, lp = -np.inf, x_field[0]
    else:
        lm, lp = -x_field[0], -np.inf
    scale, comp = 0.0, 0.0
    for i in range(x_field.shape[0]):
        if i > 0:
            k = x_bond[i - 1]
            nm = _logaddexp(lm + k, lp - k) - x_field[i]
            np_ = _logaddexp(lm - k, lp + k) + x_field[i]
            lm, lp = nm, np_
        top = max(lm, lp)
        lm -= top
        lp -= top
        y = top - comp                     # Kahan: scale += top
        t = scale + y
        comp = (t - scale) - y
        scale = t
    return lm, lp, scale


@njit(cache=True)
def _chain_components_log_z(order, starts, ring, xh, bond_next, bond_close):
    total, comp = 0.0, 0.0
    for c in range(ring.shape[0]):
        idx = order[starts[c]:starts[c + 1]]
        xf = xh[idx]
        xb = bond_next[starts[c]:starts[c + 1]]
        if not ring[c]:
            lm, lp, sc = _path_log_z(xf, xb, 0)
            part = sc + _logaddexp(lm, lp)
        else:
            k = bond_close[c]
            lm, lp, sc_up = _path_log_z(xf, xb, 1)
            up = _logaddexp(lm - k, lp + k)
            lm, lp, sc_down = _path_log_z(xf, xb, -1)
            down = _logaddexp(lm + k, lp - k)
            part = sc_up + _logaddexp(up, down + (sc_down - sc_up))
        y = part - comp
        t = total + y
        comp = (t - total) - y
        total = t
    return total


def _chain_structure(model: IsingModel):
    """(edges, J, partner table, degree) or a reason string."""
    reason = _pairwise_reason(model)
    if reason is not None:
        return reason
    edges, J = model.couplings
    deg = np.bincount(edges.ravel(), minlength=model.n)
    if len(deg) and deg.max(initial=0) > 2:
        return f"spin {int(np.argmax(deg))} has {int(deg.max())} coupling partners (a chain has at most 2)"
    nbr = np.full((model.n, 2), -1, dtype=np.int64)
    both = np.concatenate([edges, edges[:, ::-1]])
    both = both[np.argsort(both[:, 0], kind="stable")]
    slot = np.arange(len(both)) - np.searchsorted(both[:, 0], both[:, 0])
    nbr[both[:, 0], slot] = both[:, 1]
    return edges, J, nbr, deg


def chain_applies(model: IsingModel) -> str | None:
    """None when every spin has at most two coupling partners (paths and rings), pairwise terms only."""
    s = _chain_structure(model)
    return s if isinstance(s, str) else None


def chain_log_z(model: IsingModel) -> float:
    """Exact log Z of open or periodic chains (any couplings, any fields) by 2x2 log-domain transfer matrices."""
    s = _chain_structure(model)
    if isinstance(s, str):
        raise NotApplicable(s)
    edges, J, nbr, deg = s
    beta = model.beta
    order, starts, ring = _walk_paths_and_rings(model.n, nbr, deg)
    # coupling between consecutive spins of the walk (and the closing bond of each ring)
    key = edges[:, 0] * model.n + edges[:, 1]
    sort = np.argsort(key)
    key, Js = key[sort], J[sort]

    def bond(a, b):
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        k = lo * model.n + hi
        i = np.clip(np.searchsorted(key, k), 0, max(len(key) - 1, 0))
        found = (key[i] == k) if len(key) else np.zeros(len(k), dtype=bool)
        return np.where(found, Js[i] if len(key) else 0.0, 0.0)

    bond_next = np.zeros(model.n)
    bond_next[:-1] = bond(order[:-1], order[1:])
    comp_last = starts[1:] - 1
    bond_next[comp_last] = 0.0                      # no bond across components
    bond_close = bond(order[starts[:-1]], order[comp_last]) * ring
    log_z = _chain_components_log_z(order, starts, ring, beta * model.fields, beta * bond_next, beta * bond_close)
    return float(log_z + beta * model.constant)


# -- Mattis / Curie-Weiss -----------------------------------------------------------------------


def _mattis_structure(model: IsingModel):
    if len(model.rank_one) != 1:
        return f"needs exactly one rank-one block, got {len(model.rank_one)}"
    if any(w != 0.0 for t, w in zip(model.terms, model.weights) if len(t) >= 2):
        return "has pair or higher couplings besides the rank-one block"
    u, a = model.rank_one[0]
    mag = np.abs(u[u != 0.0])
    if len(mag) and not np.all(mag == mag[0]):
        return "the rank-one vector has entries of different magnitudes (not a Mattis pattern)"
    return u, a


def mattis_applies(model: IsingModel) -> str | None:
    """None when the only interaction is one rank-one block with pattern entries in {-c, 0, +c}."""
    s = _mattis_structure(model)
    return s if isinstance(s, str) else None


@njit(cache=True)
def _magnetisation_log_weights(x):
    """log c_k, k = number of +1 spins, with c_k = sum over configs with k up of exp(sum_i x_i t_i)."""
    n = x.shape[0]
    lc = np.full(n + 1, -np.inf)
    lc[0] = 0.0
    for i in range(n):
        up, down = x[i], -x[i]
        for k in range(i + 1, 0, -1):
            a = lc[k - 1] + up
            b = lc[k] + down
            lc[k] = _logaddexp(a, b) if b > -np.inf else a
        lc[0] = lc[0] + down
    return lc


def mattis_log_z(model: IsingModel) -> float:
    """Exact log Z of one Mattis block -(a/2)[(u.s)^2 - |u|^2], u_i in {-c, 0, +c}, with any fields.

    After t_i = sign(u_i) s_i the block is (a c^2 / 2)(M^2 - m) in -beta H / beta, M = sum of the
    m gauged spins; spins with u_i = 0 are free (log 2 cosh beta h_i each). A uniform gauged field
    is summed in O(m) with log-binomials; other fields use an O(m^2) DP over M.
    """
    s = _mattis_structure(model)
    if isinstance(s, str):
        raise NotApplicable(s)
    u, a = s
    beta, h = model.beta, model.fields
    on = u != 0.0
    free = float(np.sum(_log_2cosh(beta * h[~on])))
    m = int(on.sum())
    if m == 0:
        return free + beta * model.constant
    coup = a * float(np.abs(u[on][0])) ** 2
    hg = h[on] * np.sign(u[on])                         # field on the gauged spins
    k = np.arange(m + 1)                                 # number of +1 gauged spins
    M = (2 * k - m).astype(np.float64)
    if np.all(hg == hg[0]):
        log_c = gammaln(m + 1) - gammaln(k + 1) - gammaln(m - k + 1) + beta * hg[0] * M
    else:
        if m > MATTIS_DP_MAX_N:
            raise TooLarge(f"non-uniform fields need an O(m^2) DP; m = {m} > {MATTIS_DP_MAX_N}")
        log_c = _magnetisation_log_weights(beta * hg)
    terms = log_c + 0.5 * beta * coup * (M * M - m)
    return float(logsumexp(terms) + free + beta * model.constant)


# -- dispatch -------------------------------------------------------------------------------

_FORMS = (("forest", forest_applies, forest_log_z), ("chain", chain_applies, chain_log_z),
          ("mattis", mattis_applies, mattis_log_z))


def closed_form_applies(model: IsingModel) -> str | None:
    """None when one of the closed forms here applies, else the reasons of all of them."""
    reasons = []
    for name, applies, _ in _FORMS:
        r = applies(model)
        if r is None:
            return None
        reasons.append(f"{name}: {r}")
    return "; ".join(reasons)


def closed_form_log_z(model: IsingModel) -> float:
    """log Z by the first closed form that applies (forest, chain, Mattis), else NotApplicable."""
    for _, applies, log_z in _FORMS:
        if applies(model) is None:
            return log_z(model)
    raise NotApplicable(closed_form_applies(model))
