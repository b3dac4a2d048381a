"""Kaufman's exact partition function of the homogeneous nearest-neighbour Ising model on a torus.

For K = beta J on an m x n torus (m rows, n columns; Kaufman, Phys. Rev. 76, 1232 (1949)):

    Z = 1/2 (2 sinh 2K)^(mn/2) (Z1 + Z2 + Z3 + Z4)
    Z1 = prod_{k=0}^{n-1} 2 cosh(m g_{2k+1}/2)      Z2 = prod 2 sinh(m g_{2k+1}/2)
    Z3 = prod_{k=0}^{n-1} 2 cosh(m g_{2k}/2)        Z4 = prod 2 sinh(m g_{2k}/2)
    cosh g_l = cosh 2K* cosh 2K - sinh 2K* sinh 2K cos(pi l / n),   tanh K* = exp(-2K)

g_l > 0 for l != 0, while g_0 = 2 (K - K*) keeps its sign: Z4 < 0 above T_c, Z4 = 0 at T_c.
Because sinh 2K sinh 2K* = 1, cosh g_l - 1 = 2 sinh^2(K - K*) + 2 sin^2(pi l / 2n), that is
sinh(g_l / 2) = hypot(sinh(K - K*), sin(pi l / 2n)): g_l / 2 is an asinh of a hypot, with no
cancellation near T_c and no square that overflows at low temperature (beta J = 200) or at
tiny couplings (K = 1e-160, where K* = 184); once |K - K*| > 300, g_l / 2 = |K - K*| to the last
bit. Everything is summed in the log domain with a signed log-sum-exp; cost O(m + n) per
evaluation. Valid for every finite K: checked against enumeration, the transfer matrix and the
ground-state limit from K = 1e-300 to K = 1000 (tests/test_oracle_sweep.py).

Conventions: natural log Z; J in energy units (H = -J sum_<ij> s_i s_j), K = beta J. An
antiferromagnet on a torus with both sides even maps to the ferromagnet by flipping one
sublattice (log Z(K) = log Z(-K)); with an odd side it is frustrated and not covered here.
Couplings of one magnitude with mixed signs are the homogeneous ferromagnet after a gauge
s_i -> tau_i s_i when every cycle carries an even number of negative ones (a Mattis torus,
J xi_i xi_j: T12), found along a spanning tree and checked on every edge; Z is unchanged.
"""

from __future__ import annotations

import numpy as np

from evaluators.oracles.base import NotApplicable
from tasks.model import IsingModel

LN2 = float(np.log(2.0))


def _log_2cosh(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x)
    return ax + np.log1p(np.exp(-2.0 * ax))


def _log_abs_2sinh(x: np.ndarray) -> np.ndarray:
    """log |2 sinh x| (-inf at x = 0), accurate for small and large |x|."""
    ax = np.abs(x)
    with np.errstate(divide="ignore"):
        return ax + np.log(-np.expm1(-2.0 * ax))


#: beyond this |K - K*| (sinh would soon overflow) g_l / 2 equals |K - K*| in float64
_FAR_FROM_TC = 300.0


def _half_gammas(l: np.ndarray, n: int, dK: float) -> np.ndarray:
    """g_l / 2 for l != 0 (all positive): asinh(hypot(sinh(K - K*), sin(pi l / 2n)))."""
    s = np.sin(np.pi * l / (2.0 * n))
    if abs(dK) > _FAR_FROM_TC:
        # asinh(y) = log(2y) + O(y^-2) and 2 sinh|dK| = e^|dK| (1 - e^(-2|dK|)): both corrections < 1e-260
        return abs(dK) + 0.5 * np.log1p((2.0 * s) ** 2 * np.exp(-2.0 * abs(dK)))
    return np.arcsinh(np.hypot(np.sinh(dK), s))


def _signed_logsumexp(logs: np.ndarray, signs: np.ndarray) -> float:
    keep = signs != 0
    logs, signs = logs[keep], signs[keep]
    top = logs.max()
    total = float(np.sum(signs * np.exp(logs - top)))
    if not (np.isfinite(top) and total > 0.0):   # NaN fails both tests: never returned silently
        raise FloatingPointError(f"Kaufman sum is not a positive finite number (top {top}, sum {total})")
    return float(top + np.log(total))


def kaufman_torus_log_z(K: float, rows: int, cols: int) -> float:
    """Natural log Z of the zero-field Ising model with K = beta J on a rows x cols torus (sides >= 3)."""
    K, m, n = float(K), int(rows), int(cols)
    if m < 3 or n < 3:
        raise NotApplicable(f"the torus needs both sides >= 3 (got {m} x {n}): smaller ones double bonds")
    if not np.isfinite(K):
        raise ValueError("K must be finite")
    if K == 0.0:
        return m * n * LN2
    if K < 0.0:
        if m % 2 or n % 2:
            raise NotApplicable(f"antiferromagnet on a {m} x {n} torus with an odd side is frustrated")
        K = -K                              # sublattice gauge on the bipartite torus
    dK = K + 0.5 * np.log(np.tanh(K))       # K - K*, with K* = -1/2 log tanh K
    l_odd = np.arange(1, 2 * n, 2, dtype=np.float64)
    l_even = np.arange(2, 2 * n, 2, dtype=np.float64)
    half_odd = m * _half_gammas(l_odd, n, dK)
    half_even = m * _half_gammas(l_even, n, dK)
    half_0 = m * dK                         # m g_0 / 2 with g_0 = 2 (K - K*), signed
    log_z1 = _log_2cosh(half_odd).sum()
    log_z2 = _log_abs_2sinh(half_odd).sum()
    log_z3 = _log_2cosh(half_even).sum() + _log_2cosh(np.array([half_0]))[0]
    log_z4 = _log_abs_2sinh(half_even).sum() + _log_abs_2sinh(np.array([half_0]))[0]
    sign4 = float(np.sign(half_0))
    log_sum = _signed_logsumexp(np.array([log_z1, log_z2, log_z3, log_z4]), np.array([1.0, 1.0, 1.0, sign4]))
    two_k = 2.0 * K                         # log(2 sinh 2K), stable for small and large K
    log_2sinh = two_k + np.log(-np.expm1(-2.0 * two_k))
    return float(-LN2 + 0.5 * m * n * log_2sinh + log_sum)


def _torus_pairs(rows: int, cols: int) -> np.ndarray:
    r, c = np.divmod(np.arange(rows * cols), cols)
    site = np.arange(rows * cols)
    right = r * cols + (c + 1) % cols
    down = ((r + 1) % rows) * cols + c
    e = np.concatenate([np.stack([site, right], 1), np.stack([site, down], 1)])
    e.sort(axis=1)
    return e[np.lexsort((e[:, 1], e[:, 0]))]


def kaufman_applies(model: IsingModel) -> str | None:
    """None when the model is a homogeneous zero-field nearest-neighbour torus this module solves."""
    lat = model.lattice
    if lat is None or not lat.torus:
        return "needs a torus lattice hint (periodic rows and columns)"
    if lat.rows < 3 or lat.cols < 3:
        return f"the torus needs both sides >= 3 (got {lat.rows} x {lat.cols})"
    if any(a != 0.0 for _, a in model.rank_one):
        return "has rank-one (all-to-all) couplings"
    if any(w != 0.0 for _, w in model.higher_order):
        return "has interactions on three or more spins"
    if model.has_fields:
        return "has nonzero fields"
    edges, J = model.couplings
    if edges.shape != (2 * model.n, 2) or not np.array_equal(edges, _torus_pairs(lat.rows, lat.cols)):
        return "couplings are not exactly the nearest-neighbour pairs of the torus"
    if np.all(J == J[0]):
        if J[0] < 0 and (lat.rows % 2 or lat.cols % 2):
            return f"antiferromagnet on a {lat.rows} x {lat.cols} torus with an odd side is frustrated"
        return None
    if not np.all(np.abs(J) == abs(J[0])):
        return "couplings are not all of one magnitude"
    if _ferromagnetic_gauge(model.n, edges, J) is None:
        return "couplings of one magnitude whose signs no gauge makes equal (a frustrated cycle)"
    return None


def _ferromagnetic_gauge(n: int, edges: np.ndarray, J: np.ndarray) -> np.ndarray | None:
    """Signs tau with J_e tau_u tau_v > 0 on every edge (from a spanning forest, checked on every
    edge), or None when a cycle carries an odd number of negative couplings."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import breadth_first_order, connected_components

    graph = coo_matrix((np.sign(J), (edges[:, 0], edges[:, 1])), shape=(n, n)).tocsr()
    sym = (graph + graph.T).tocsr()
    tau = np.zeros(n)
    _, label = connected_components(sym, directed=False)
    for root in np.unique(label, return_index=True)[1]:
        order, pred = breadth_first_order(sym, int(root), directed=False, return_predecessors=True)
        tau[root] = 1.0
        for v in order[1:]:                   # each vertex after its predecessor, in BFS order
            tau[v] = tau[pred[v]] * sym[pred[v], v]
    return tau if np.all(J * tau[edges[:, 0]] * tau[edges[:, 1]] > 0) else None


def kaufman_log_z(model: IsingModel) -> float:
    """Exact natural log Z at model.beta of a zero-field NN torus whose couplings are equal, or of
    one magnitude with signs a gauge s_i -> tau_i s_i makes equal (a Mattis torus, T12: Z is
    unchanged by the gauge), else NotApplicable."""
    reason = kaufman_applies(model)
    if reason is not None:
        raise NotApplicable(reason)
    J = model.couplings[1]
    K = model.beta * (float(J[0]) if np.all(J == J[0]) else abs(float(J[0])))
    lat = model.lattice
    return kaufman_torus_log_z(K, lat.rows, lat.cols) + model.beta * model.constant
