"""Chains and rings: products of 2 x 2 transfer matrices, with fields, open or periodic.

Every component of a graph of maximum degree 2 is a path, a ring or a single spin. A depth-first
walk (scipy, from a virtual root joined to one start per component: an end of each path, the
smallest spin of each ring) lists every component's spins in order. Along a component with
couplings K_i = beta J_i and fields H_i = beta h_i,

    T_i(s, s') = exp(H_i s + K_i s s'),   Z_path = sum_{s, s'} [T_0 ... T_{L-2}](s, s') exp(H_{L-1} s'),
    Z_ring = tr(T_0 ... T_{L-1}) with the closing coupling in T_{L-1}.

Each T_i is kept as its entries' logs and the product is taken in the log domain (a 2 x 2 product
is a log-sum-exp of two terms per entry), either by a pairwise tree reduction (vectorised, log2 L
rounds) or by a sequential sweep. All entries are positive, so nothing cancels, and no entry can
underflow (linear 2 x 2 products lost the whole product to 0 x 0 = NaN at beta |J| = 1000 once the
matrices' large entries sat in different places): exact at every temperature, O(n).
"""

from __future__ import annotations

import sys

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components, depth_first_order

from search.structural.templates import Claims, render, register

NAME = "chain"
#: the order in which the structural proposer tries templates when no plan is preferred by structure
ORDER = 20
OPTION_SPACE = {
    "product": ("pairwise", "sequential"),
}
IMPORTS = """\
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components, depth_first_order
"""


def _chain_couplings(edges, J, n):
    """Merged couplings (i < j, non-zero) of a graph that must have maximum degree 2."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    J = np.asarray(J, dtype=np.float64).reshape(-1)
    lo, hi = np.minimum(edges[:, 0], edges[:, 1]), np.maximum(edges[:, 0], edges[:, 1])
    key, inv = np.unique(lo * n + hi, return_inverse=True)
    Jm = np.bincount(inv.ravel(), weights=J, minlength=len(key))
    keep = Jm != 0.0
    a, b, Jm = key[keep] // n, key[keep] % n, Jm[keep]
    if len(a) and np.bincount(np.r_[a, b], minlength=n).max() > 2:
        raise ValueError("a spin has more than two neighbours: not a chain")
    return a, b, Jm


def _log_product(logs, sequential):
    """Entrywise log of the 2 x 2 product M_0 M_1 ... given the entrywise logs of the M_i, (m, 2, 2)."""
    def mul(A, B):                            # log of A @ B from logs, for stacks of 2 x 2 matrices
        return np.logaddexp(A[..., :, 0, None] + B[..., None, 0, :], A[..., :, 1, None] + B[..., None, 1, :])

    if sequential:
        P = logs[0]
        for M in logs[1:]:
            P = mul(P, M)
        return P
    log_eye = np.array([[0.0, -np.inf], [-np.inf, 0.0]])
    while len(logs) > 1:
        if len(logs) % 2:
            logs = np.concatenate([logs, log_eye[None]])
        logs = mul(logs[0::2], logs[1::2])
    return logs[0]


def _method_log_z(edges, J, h, rank_one, positions, beta, n, options):
    """Natural log Z of a model whose components are paths and rings (any couplings and fields)."""
    if rank_one:
        raise ValueError("the chain template does not take rank-one blocks")
    a, b, Jm = _chain_couplings(edges, J, n)
    H = beta * np.asarray(h, dtype=np.float64).reshape(-1)
    m = len(a)
    adj = coo_matrix((Jm, (a, b)), shape=(n, n)).tocsr()
    n_comp, comp = connected_components(adj, directed=False)
    deg = np.bincount(np.r_[a, b], minlength=n)
    # start of each component: an end (degree <= 1) if it has one, else its smallest spin
    start = np.full(n_comp, 2 * n, dtype=np.int64)
    np.minimum.at(start, comp, np.where(deg <= 1, 0, n) + np.arange(n))
    start = start % n
    root = coo_matrix((np.ones(n_comp), (np.full(n_comp, n), start)), shape=(n + 1, n + 1))
    big = (coo_matrix((np.ones(m), (a, b)), shape=(n + 1, n + 1)) + root).tocsr()
    order = depth_first_order(big, n, directed=False, return_predecessors=False)[1:]
    ring = np.bincount(comp, weights=deg == 2, minlength=n_comp) == np.bincount(comp, minlength=n_comp)
    ring &= np.bincount(comp, minlength=n_comp) >= 3
    sym = adj + adj.T
    nxt_K = np.zeros(n)                       # coupling from order[k] to the next spin of its component
    same = comp[order[:-1]] == comp[order[1:]]
    nxt_K[:-1][same] = beta * np.asarray(sym[order[:-1][same], order[1:][same]]).ravel()
    total = 0.0
    bounds = np.flatnonzero(np.r_[True, comp[order[1:]] != comp[order[:-1]], True])
    s = np.array([1.0, -1.0])
    for c0, c1 in zip(bounds[:-1], bounds[1:]):
        seg = order[c0:c1]
        Hs, Ks = H[seg], nxt_K[c0:c1].copy()
        if ring[comp[seg[0]]]:
            Ks[-1] = beta * float(sym[seg[-1], seg[0]])
            E = Hs[:, None, None] * s[None, :, None] + Ks[:, None, None] * np.outer(s, s)[None]
        else:
            Hs_last = Hs[-1]
            E = Hs[:-1, None, None] * s[None, :, None] + Ks[:-1, None, None] * np.outer(s, s)[None]
            E = np.concatenate([E, (Hs_last * s)[None, :, None] + np.zeros((1, 2, 2))])
        P = _log_product(E, options.get("product") == "sequential")
        if ring[comp[seg[0]]]:
            total += float(np.logaddexp(P[0, 0], P[1, 1]))
        else:
            # the last matrix carries exp(H s') in every row: summing (s, s') counts it twice
            total += float(np.logaddexp.reduce(P.ravel())) - np.log(2.0)
    return total


FUNCTIONS = (_chain_couplings, _log_product, _method_log_z)


def source(options: dict) -> str:
    return render(IMPORTS, FUNCTIONS)


def applies(view) -> str | None:
    if view.max_order > 2:
        return "terms on three or more spins"
    if view.rank_one:
        return "an all-to-all rank-one block is not a chain"
    if not view.family.chain:
        return "some spin has more than two neighbours: the graph is not a chain"
    return None


def claims(view, options: dict) -> Claims:
    fields = "with site fields, " if view.has_fields else ""
    return Claims(
        tractable_class="transfer_matrix",
        complexity_O="O(n)",
        confidence=0.95,
        justification=(f"Every spin has at most two neighbours, so the model is a 1D chain ({fields}open or periodic). "
                       f"Summing the spins one after another is a product of 2 x 2 transfer matrices "
                       f"T(s, s') = exp(beta h s + beta J s s'), multiplied in the log domain (log-sum-exp entries); "
                       f"Z is the sum of the product's entries (open ends) or its trace (a ring). That is O(n) work "
                       f"and exact at every temperature since all entries are positive."),
        cost_rank=0,
    )


register(sys.modules[__name__])
