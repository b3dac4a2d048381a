"""Sums over T-joins of an R x C torus grid, one per homology class, from four Kasteleyn Pfaffians.

Pure numpy and scipy (no numba): the derivation solver ``torus_pfaffian`` renders these functions into
its programs, and the oracle ``torus_pfaffian`` runs them with its own Pfaffian.

The quantity. Vertex (r, c), horizontal edge h(r, c) = (r, c)-(r, c+1 mod C), vertical edge
v(r, c) = (r, c)-(r+1 mod R, c), positive weights x given by their natural logs, a 0/1 terminal array t
(an even number of ones). A T-join is an edge set U whose odd-degree vertices are exactly the
terminals; its class is (a, b) = (parity of the h(r, C-1) in U, parity of the v(R-1, c) in U).
W_ab = sum over T-joins of class (a, b) of prod_{e in U} x_e. Returned as log W (2 x 2; -inf for 0).

Dimers (as evaluators/oracles/dual_pfaffian.py): vertex v becomes two 3-port units joined by a link
edge, ports E, N, L0 and W, S, L1; a triangle unit is perfectly matchable after removing the odd
subsets of its ports matched outside, the 'even' unit (a centre X joined to E, N, L0, and the edge
N-L0) after removing the even subsets, each in one way. Two triangles: even parity at v; an even
unit first: odd parity (a terminal). External edge E(r, c)-W(r, c+1) is h(r, c), S(r, c)-N(r+1, c)
is v(r, c). Perfect matchings of this graph H are the T-joins, weight for weight.

Kasteleyn on the torus. H is drawn on the torus (rotation system from the drawing, V - E + F = 0
checked) and oriented so that EVERY face has an odd number of edges along its boundary walk (a
spanning tree of H, then the cotree edges fixed leaf-first on a spanning tree of the faces; possible
on the torus because the number of nodes is even). Then the sign of a matching's term in Pf(A)
depends only on its class; flipping the sign of the wrap edges h(., C-1) (s1 = -1) and v(R-1, .)
(s2 = -1) multiplies the class (a, b) by s1^a s2^b, so

    Pf(A_s) = sum_ab s1^a s2^b eps_ab W_ab,   W_ab = (1/4) sum_s s1^a s2^b eps_ab Pf(A_s)

(the four-Pfaffian formula: one sector per periodic/antiperiodic pair), each Pfaffian by skew
elimination with complete pivoting (``_tt_pfaffian``). eps_ab is read off one explicit
matching per class (a reference T-join, plus a row loop for a, a column loop for b): the sign of its
term in the Pfaffian expansion. Everything is combined in logs with signs.

Accuracy: each Pf_s carries a relative rounding error d, so W_ab has an absolute error about
d max|Pf|: a class much less likely than the others (ratio below 1e-12, say) is lost in float64.
``_tt_class_logs`` returns log max|Pf| too, so a caller can tell.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import breadth_first_order

# node offsets inside a vertex's block: E, N, L0, W, S, L1 (and X, the even unit's centre, for terminals)
_TT_XY = np.array([[0.3, 0.0], [0.0, 0.3], [0.1, 0.1], [-0.3, 0.0], [0.0, -0.3], [-0.1, -0.1], [0.2, 0.12]])


def _tt_graph(R, C, t):
    """(a, b, key_a, key_b, kind, n_nodes, base): the edges a-b of H with the angles of their darts at
    each end, kind 0 internal, 1 horizontal external, 2 vertical external (row-major r, c order)."""
    t = np.asarray(t, dtype=np.int64).ravel()
    size = 6 + t
    base = np.cumsum(size) - size
    n_nodes = int(size.sum())
    tri0 = np.array([[0, 1], [1, 2], [2, 0]])
    even0 = np.array([[6, 0], [6, 1], [6, 2], [1, 2]])
    rest = np.array([[3, 4], [4, 5], [5, 3], [2, 5]])
    pieces = []
    for sel, pat in ((t == 0, tri0), (t == 1, even0), (np.ones(len(t), bool), rest)):
        b = base[sel]
        pieces.append(np.stack([(b[:, None] + pat[:, 0]).ravel(), (b[:, None] + pat[:, 1]).ravel(),
                                np.repeat(np.arange(len(t))[sel], len(pat)),
                                np.tile(pat[:, 0], len(b)), np.tile(pat[:, 1], len(b))], 1))
    internal = np.concatenate(pieces)
    d = _TT_XY[internal[:, 4]] - _TT_XY[internal[:, 3]]
    key_a = np.arctan2(d[:, 1], d[:, 0])
    key_b = np.arctan2(-d[:, 1], -d[:, 0])
    r, c = np.divmod(np.arange(R * C), C)
    right, down = r * C + (c + 1) % C, ((r + 1) % R) * C + c
    a = np.concatenate([internal[:, 0], base + 0, base + 4])
    b = np.concatenate([internal[:, 1], base[right] + 3, base[down] + 1])
    m = R * C
    key_a = np.concatenate([key_a, np.zeros(m), np.full(m, -np.pi / 2)])
    key_b = np.concatenate([key_b, np.full(m, np.pi), np.full(m, np.pi / 2)])
    kind = np.concatenate([np.zeros(len(internal), np.int64), np.ones(m, np.int64), np.full(m, 2, np.int64)])
    return a, b, key_a, key_b, kind, n_nodes, base


def _tt_cycles(perm):
    """Cycle id of every element of a permutation, and the number of cycles."""
    cid = np.full(len(perm), -1, np.int64)
    k = 0
    for s in range(len(perm)):
        if cid[s] >= 0:
            continue
        x = s
        while cid[x] < 0:
            cid[x] = k
            x = perm[x]
        k += 1
    return cid, k


def _tt_kasteleyn(a, b, key_a, key_b, n_nodes):
    """+-1 per edge: orienting a -> b times it makes every face of the drawing odd (see above)."""
    E = len(a)
    tail = np.concatenate([a, b])
    order = np.lexsort((np.concatenate([key_a, key_b]), tail))
    sigma = np.empty(2 * E, np.int64)                  # next dart counter-clockwise around its tail
    nxt = np.roll(order, -1)
    last = np.r_[tail[order][1:] != tail[order][:-1], True]
    first = np.r_[True, last[:-1]]
    nxt[last] = order[first]
    sigma[order] = nxt
    sigma_inv = np.empty_like(sigma)
    sigma_inv[sigma] = np.arange(2 * E)
    rev = (np.arange(2 * E) + E) % (2 * E)
    face, F = _tt_cycles(sigma_inv[rev])
    if n_nodes - E + F != 0:
        raise ValueError(f"the drawing is not a torus (V - E + F = {n_nodes - E + F})")
    g = coo_matrix((np.arange(1, E + 1), (a, b)), shape=(n_nodes, n_nodes)).tocsr()
    g = (g + g.T).tocsr()
    _, pred = breadth_first_order(g, 0, directed=False, return_predecessors=True)
    in_tree = np.zeros(E, bool)
    v = np.flatnonzero(pred >= 0)
    in_tree[np.asarray(g[pred[v], v]).ravel().astype(np.int64) - 1] = True
    cotree = np.flatnonzero(~in_tree)
    adj = [[] for _ in range(F)]
    for e in cotree:
        adj[face[e]].append((face[e + E], e))
        adj[face[e + E]].append((face[e], e))
    parent_edge = np.full(F, -1, np.int64)
    parent = np.full(F, -1, np.int64)
    seen = np.zeros(F, bool)
    seen[0] = True
    bfs = [0]
    for f in bfs:
        for h, e in adj[f]:
            if not seen[h]:
                seen[h], parent[h], parent_edge[h] = True, f, e
                bfs.append(h)
    if len(bfs) != F:
        raise ValueError("the faces are not connected through the cotree")
    acc = (np.bincount(face[:E], minlength=F) % 2 == 0).astype(np.int64)   # faces needing a flip
    sign = np.ones(E)
    for f in reversed(bfs[1:]):
        if acc[f]:
            sign[parent_edge[f]] = -1.0
            acc[f] ^= 1
            acc[parent[f]] ^= 1
    if acc[0]:
        raise ValueError("the root face is even: the node count is odd")
    return sign


def _tt_reference_joins(R, C, t):
    """(used_h, used_v) boolean (R, C) arrays of one T-join per class: index 2 a + b."""
    t = np.asarray(t, dtype=np.int64).reshape(R, C)
    # each terminal (r, c): along row r to column 0 (h(r, 0..c-1)), then up column 0 (v(0..r-1, 0))
    col_mask = np.arange(C)[None, :] < np.arange(C)[:, None]          # [c, k]: k < c
    h0 = (t @ col_mask) % 2                                             # h(r, k) used by terminals right of k
    rows_t = t.sum(axis=1) % 2
    v0 = np.zeros((R, C), np.int64)
    v0[:, 0] = (np.cumsum(rows_t[::-1])[::-1] - rows_t) % 2             # v(k, 0) used by odd rows below k
    joins = []
    for cls in range(4):
        h, v = h0.copy(), v0.copy()
        if cls >> 1:
            h[0, :] ^= 1
        if cls & 1:
            v[:, 0] ^= 1
        joins.append((h.astype(bool), v.astype(bool)))
    return joins


def _tt_matching_sign(R, C, t, base, n_nodes, used_h, used_v, edge_sign_of):
    """Sign of the term of the matching of T-join (used_h, used_v) in Pf of the matrix whose entry
    (i, j) has sign edge_sign_of(i, j) (a dict)."""
    t = np.asarray(t, dtype=np.int64).ravel()
    uh, uv = used_h.ravel(), used_v.ravel()
    r, c = np.divmod(np.arange(R * C), C)
    sE, sS = uh, uv
    sW, sN = uh[r * C + (c - 1) % C], uv[((r - 1) % R) * C + c]
    x = (1 + sW + sS) % 2                                               # the link edge L0-L1 is matched
    pairs = []
    for v in range(R * C):
        bv = base[v]
        if uh[v]:
            pairs.append((bv + 0, base[r[v] * C + (c[v] + 1) % C] + 3))
        if uv[v]:
            pairs.append((bv + 4, base[((r[v] + 1) % R) * C + c[v]] + 1))
        if x[v]:
            pairs.append((bv + 2, bv + 5))
        free1 = [bv + k for k, used in ((3, sW[v]), (4, sS[v]), (5, x[v])) if not used]
        if len(free1) == 2:
            pairs.append(tuple(free1))
        free0 = [bv + k for k, used in ((0, sE[v]), (1, sN[v]), (2, x[v])) if not used]
        if len(free1) not in (0, 2) or len(free0) % 2 != (1 if t[v] else 0):
            raise ValueError("the reference edge set is not a T-join of the terminals")
        if t[v] and len(free0) == 3:
            pairs += [(bv + 6, bv + 0), (bv + 1, bv + 2)]
        elif t[v]:
            pairs.append((bv + 6, free0[0]))
        elif len(free0) == 2:
            pairs.append(tuple(free0))
    perm = np.array([k for p in pairs for k in p], np.int64)
    if len(perm) != n_nodes or len(np.unique(perm)) != n_nodes:
        raise ValueError("the reference matching is not perfect")
    sign = 1.0 if (n_nodes - _tt_cycles(perm)[1]) % 2 == 0 else -1.0
    for i, j in pairs:
        sign *= edge_sign_of[(i, j)]
    return sign


def _tt_pfaffian(A):
    """(log |Pf A|, sign) of a real skew-symmetric matrix (overwritten) by skew Gaussian elimination with
    complete 2 x 2 pivoting: each step moves the largest |A_ij| left to (k, k+1) (a symmetric swap
    flips the sign) and takes the Schur complement A' = A + (u A_(k+1) - w A_k) / A_(k,k+1), u, w the
    pivot columns; Pf A = prod of the pivots. Relative accuracy holds at low temperature too (the
    small weights never pivot while a weight-1 entry is left); O(N^3), numpy per step."""
    A = np.array(A, dtype=np.float64)
    N = A.shape[0]
    if N % 2:
        return -np.inf, 0.0
    logabs, sign = 0.0, 1.0
    for k in range(0, N, 2):
        S = A[k:, k:]
        flat = int(np.argmax(np.abs(S)))                 # |S| is symmetric with a zero diagonal
        i, j = sorted(divmod(flat, S.shape[0]))
        if S[i, j] == 0.0:
            return -np.inf, 0.0
        for src, dst in ((k + i, k), (k + j, k + 1)):
            if src != dst:
                A[[src, dst], :] = A[[dst, src], :]
                A[:, [src, dst]] = A[:, [dst, src]]
                sign = -sign
                if k + j == dst:
                    j = src - k
        piv = A[k, k + 1]
        logabs += float(np.log(abs(piv)))
        sign = -sign if piv < 0 else sign
        if k + 2 < N:
            cols = np.stack([A[k + 2:, k], -A[k + 2:, k + 1]], 1) / piv
            A[k + 2:, k + 2:] += cols @ A[[k + 1, k], k + 2:]
    return logabs, sign


def _tt_sectors(log_xh, log_xv, t, pfaffian, sparse=False):
    """(eps (4,), class signs in the order 2 a + b; [pfaffian(A_s) for the sectors (s1, s2) = (1, 1),
    (1, -1), (-1, 1), (-1, -1)]) for the R x C torus with log edge weights log_xh, log_xv (R x C) and
    terminals t (R x C, 0/1, an even number of ones): see the module docstring. A_s is dense, or with
    sparse a scipy CSR matrix whose nodes come vertex by vertex in row-major order (6 + t[r, c] each)."""
    log_xh, log_xv = np.asarray(log_xh, dtype=np.float64), np.asarray(log_xv, dtype=np.float64)
    R, C = log_xh.shape
    t = np.asarray(t, dtype=np.int64).reshape(R, C)
    a, b, ka, kb, kind, N, base = _tt_graph(R, C, t)
    sign = _tt_kasteleyn(a, b, ka, kb, N)
    if max(float(np.max(log_xh)), float(np.max(log_xv))) > 0.0:
        raise ValueError("edge weights must be <= 1 (domain walls, or p / (1 - p) with p <= 1/2)")
    w = np.ones(len(a))
    w[kind == 1] = np.exp(log_xh.ravel())
    w[kind == 2] = np.exp(log_xv.ravel())
    r, c = np.divmod(np.arange(R * C), C)
    wrap_h = (kind == 1) & np.r_[np.zeros(int(np.sum(kind == 0)), bool), c == C - 1, np.zeros(R * C, bool)]
    wrap_v = (kind == 2) & np.r_[np.zeros(int(np.sum(kind == 0)), bool), np.zeros(R * C, bool), r == R - 1]
    sign_of = {}
    for i, j, s in zip(a.tolist(), b.tolist(), sign.tolist()):
        sign_of[(i, j)], sign_of[(j, i)] = s, -s
    eps = np.array([_tt_matching_sign(R, C, t, base, N, h, v, sign_of) for h, v in _tt_reference_joins(R, C, t)])
    pfs = []
    for s1, s2 in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
        val = sign * w * np.where(wrap_h, s1, 1.0) * np.where(wrap_v, s2, 1.0)
        if sparse:
            A = coo_matrix((np.concatenate([val, -val]), (np.concatenate([a, b]), np.concatenate([b, a]))),
                           shape=(N, N)).tocsr()
        else:
            A = np.zeros((N, N))
            A[a, b] = val
            A[b, a] = -val
        pfs.append(pfaffian(A))
    return eps, pfs


def _tt_class_logs(log_xh, log_xv, t, pfaffian=None, sparse=False):
    """(log W (2 x 2, index [a, b]), log max_s |Pf A_s|) for the R x C torus with log edge weights
    log_xh, log_xv (R x C) and terminals t (R x C, 0/1): see the module docstring. pfaffian(A) ->
    (log |Pf A|, sign) of each sector's matrix (dense, or sparse: :func:`_tt_sectors`)."""
    R, C = np.shape(log_xh)
    if R < 3 or C < 3:
        raise ValueError("the torus needs both sides >= 3")
    if np.sum(t) % 2:
        return np.full((2, 2), -np.inf), -np.inf                       # no T-join has an odd terminal set
    eps, pfs = _tt_sectors(log_xh, log_xv, t, pfaffian if pfaffian is not None else _tt_pfaffian, sparse)
    logs = np.array([lp for lp, _ in pfs], dtype=np.float64)
    signs = np.array([sg for _, sg in pfs], dtype=np.float64)
    top = float(np.max(logs))
    out = np.full((2, 2), -np.inf)
    if not np.isfinite(top):                    # every sector singular: the weights underflowed (extreme cold)
        return out, top
    for cls in range(4):
        ca, cb = cls >> 1, cls & 1
        coef = np.array([1, (-1) ** cb, (-1) ** ca, (-1) ** (ca + cb)]) * eps[cls] * signs
        total = float(np.sum(coef * np.exp(logs - top))) / 4.0
        out[ca, cb] = top + np.log(total) if total > 0.0 else -np.inf
    return out, top
