"""log |Pf A| of a sparse real skew-symmetric matrix whose entries span many orders of magnitude:
a multifrontal skew elimination with 2 x 2 pivots, in double-double arithmetic (numpy only).

Not a template: helper functions that the planar_pfaffian template renders into its programs.

Why. At low temperature the domain-wall Kasteleyn matrix holds 1s and weights exp(-2 beta |J|).
Its Pfaffian is a sum of positive terms, and log Pf is well conditioned in the nonzero entries
(d log Pf / d log A_ij is the probability that edge ij is matched, at most 1), but an
elimination that perturbs the zero entries by eps * |A| is not: a Schur complement entry whose
exact value is of order x^(k+1) computed as the difference of two terms of order x^k keeps an
absolute error eps x^k. A float64 sparse LU (SuperLU) lost 4.1 in log Z on an 8 x 8 +-J grid at
beta = 12; complete 2 x 2 pivoting in float64 still lost 0.19 on 12 x 12 at beta = 20. In
double-double (106 bits) with complete pivoting the same grids are right to 1e-12 up to
beta |J| = 50 (measured against the transfer matrix); the margin shrinks with the grid (64 x 64
drifts from beta |J| ~ 18, so the caller switches to its ground-state line at 12). Here:

- ordering: nested dissection by coordinates (recursive bisection along the longer side, never
  through a group of nodes: the caller's gadgets of one face; the separator is the nodes next to
  the cut on the side with fewer of them), leaves of at most ``LEAF`` nodes;
- fronts: each tree node gathers its own nodes, the nodes its children could not eliminate
  ("delayed"), and every later node they touch; children's Schur complements are added in;
- pivots: a pair (i, j) of fully summed nodes is acceptable when |S_ij| is at least
  ``THRESHOLD`` times the largest entry of rows i and j in the front; the largest acceptable one
  goes first (as in the planar oracle); without one, the rest is delayed to the parent (the root
  takes every remaining node, so it pivots completely);
- arithmetic: every front is a pair (hi, lo) of float64 arrays, a double-double number hi + lo
  (``double_double``); each rank-2 update touches only the rows where its vectors are nonzero;
- stacking: the tree goes level by level from the leaves, and a level's fronts of at most
  ``STACK_MAX`` indices (on a 64 x 64 grid about 2000 of its 2040 fronts) are zero-padded into
  3-D stacks and eliminated together, each by the same pivot rule (vectorised argmax per front),
  so the Python overhead is paid once per pivot pair of a stack, not of every front (it was 3.4 of
  the 4.5 s of a cold n = 4096 call). The stacked update forms D = X - X^T, X = u w^T in
  double-double, so those fronts stay exactly skew.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.sparse import coo_matrix

from search.structural.templates import double_double, skew_bounds
from search.structural.templates.double_double import _dd_add, _dd_div, _dd_rank2_update, _dd_stack_rank2_update
from search.structural.templates.skew_bounds import EPS_DD, _bound_update, _bound_update_stack, _pivot_bounds

LEAF = 64
THRESHOLD = 0.01
STACK_MAX = 100           # fronts of at most this many indices are eliminated stacked,
STACK_ENTRIES = 80000     # in chunks of about this many entries (f^2 per front)


def _eliminate_fronts(H, L, n_full, E=None, errs=None):
    """_eliminate_front on a stack of dense fronts at once (H + L: (F, f, f), zero-padded, in place;
    front b pivots among its first ``n_full[b]`` indices): one pivot pair of every front per step,
    chosen per front by the same rule. Returns (log |pivot| of every pair, flat), the permutation
    applied to each front (F, f) and the number of indices eliminated in each (F,). With ``E``
    (F, f, f): the entries' error bounds, updated alongside (``skew_bounds``), and the bound of
    every pivot's log appended to ``errs``."""
    F, f, _ = H.shape
    perm = np.tile(np.arange(f), (F, 1))
    done = np.zeros(F, dtype=np.int64)
    live = np.asarray(n_full) >= 2
    logs = []
    k = 0
    while True:
        live &= n_full - k >= 2
        if not live.any():
            break
        nb = int(np.flatnonzero(live)[-1]) + 1             # fronts past the last live one are finished
        top = int(n_full[:nb][live[:nb]].max())
        Hb, Lb, pb, lv = H[:nb], L[:nb], perm[:nb], live[:nb]
        Eb = E[:nb] if E is not None else None
        A = np.abs(Hb[:, k:top, k:])
        rowmax = A.max(axis=2)
        full = np.arange(top - k) < (n_full[:nb] - k)[:, None]
        C = A[:, :, :top - k] * full[:, None, :]           # partners among the fully summed only
        part = C.argmax(axis=2)
        val = np.take_along_axis(C, part[:, :, None], 2)[:, :, 0]
        ok = full & (val > 0.0) & (val >= THRESHOLD * np.maximum(rowmax, np.take_along_axis(rowmax, part, 1)))
        lv &= ok.any(axis=1)                               # no acceptable pair: delay the rest
        if not lv.any():
            break
        b = np.arange(nb)
        i = np.argmax(np.where(ok, val, -1.0), axis=1)
        j = part[b, i]
        i, j = np.where(lv, np.minimum(i, j) + k, k), np.where(lv, np.maximum(i, j) + k, k + 1)
        for src, dst in ((i, k), (j, k + 1)):
            for M in (Hb, Lb) if Eb is None else (Hb, Lb, Eb):
                keep = M[:, dst].copy()
                M[:, dst] = M[b, src]
                M[b, src] = keep
                keep = M[:, :, dst].copy()
                M[:, :, dst] = M[b, :, src]
                M[b, :, src] = keep
            keep = pb[:, dst].copy()
            pb[:, dst] = pb[b, src]
            pb[b, src] = keep
        ph, pl = Hb[lv, k, k + 1], Lb[lv, k, k + 1]
        logs.append(np.log(np.abs(ph)) + np.log1p(pl / ph))
        if Eb is not None:
            errs.append(Eb[lv, k, k + 1] / np.abs(ph) + 4.0 * EPS_DD)
        if f > k + 2:
            r = slice(k + 2, f)
            ph, pl = np.where(lv, Hb[:, k, k + 1], 1.0)[:, None], np.where(lv, Lb[:, k, k + 1], 0.0)[:, None]
            on = lv[:, None]
            if Eb is not None:
                ua, du, wa, dw = (np.where(on, x, 0.0) for x in _pivot_bounds(Hb, Lb, Eb, ph, k, r))
                _bound_update_stack(Eb[:, r, r], Hb[:, r, r], ua, du, wa, dw)
            uh, ul = np.where(on, Hb[:, r, k], 0.0), np.where(on, Lb[:, r, k], 0.0)
            wh, wl = _dd_div(np.where(on, Hb[:, r, k + 1], 0.0), np.where(on, Lb[:, r, k + 1], 0.0), ph, pl)
            _dd_stack_rank2_update(Hb[:, r, r], Lb[:, r, r], uh, ul, wh, wl)
        done[:nb][lv] = k + 2
        k += 2
    return (np.concatenate(logs) if logs else np.zeros(0)), perm, done


def _node_positions(n_nodes, adj, known, known_xy):
    """Coordinates for every node: the given ones, the rest the mean of already placed neighbours."""
    xy = np.full((n_nodes, 2), np.nan)
    xy[known] = known_xy
    for _ in range(n_nodes):
        missing = np.isnan(xy[:, 0])
        if not missing.any():
            break
        have = (~missing).astype(np.float64)
        total = adj @ np.where(missing[:, None], 0.0, xy)
        count = adj @ have
        fill = missing & (count > 0)
        if not fill.any():
            xy[missing] = 0.0
            break
        xy[fill] = total[fill] / count[fill][:, None]
    return xy


def _node_groups(adj, group):
    """Groups for the dissection: ``group`` (one label per node), with every node of degree 1 moved
    into its neighbour's group (a pendant's single edge is in every matching)."""
    group = np.asarray(group, dtype=np.int64).copy()
    deg = np.diff(adj.indptr)
    pend = np.flatnonzero(deg == 1)
    group[pend] = group[adj.indices[adj.indptr[pend]]]
    return np.unique(group, return_inverse=True)[1].ravel()


def _csr_entries(M, nodes):
    """(position in ``nodes``, index into M.indices / M.data) of every stored entry of those rows."""
    deg = M.indptr[nodes + 1] - M.indptr[nodes]
    rows = np.repeat(np.arange(len(nodes)), deg)
    return rows, np.repeat(M.indptr[nodes] - np.cumsum(deg) + deg, deg) + np.arange(int(deg.sum()))


def _dissection(adj, xy, group):
    """Nested dissection tree in postorder: a list of (own nodes, child tree ids). Cuts never pass
    through a group (the weight-1 gadget units of a face: a front then rarely delays a node whose
    large entries lie outside it); the separator is the nodes next to the cut on the side with
    fewer of them. Coordinates: each group at the mean of its nodes."""
    tree = []
    n = adj.shape[0]
    count = np.bincount(group).astype(np.float64)
    centre = np.stack([np.bincount(group, weights=xy[:, c]) / count for c in (0, 1)], 1)[group]
    side = np.zeros(n)

    def touching(nodes):
        """Which of ``nodes`` have a neighbour marked in ``side``."""
        rows, cols = _csr_entries(adj, nodes)
        return np.bincount(rows, weights=side[adj.indices[cols]], minlength=len(nodes)) > 0

    def split(idx):
        if len(idx) <= LEAF:
            tree.append((idx, []))
            return len(tree) - 1
        p = centre[idx]
        axis = int(np.argmax(p.max(axis=0) - p.min(axis=0)))
        order = idx[np.lexsort((group[idx], p[:, axis]))]
        g = group[order]
        cuts = np.flatnonzero(g[1:] != g[:-1]) + 1               # positions between two groups
        if len(cuts) == 0:
            tree.append((idx, []))
            return len(tree) - 1
        mid = int(cuts[np.argmin(np.abs(cuts - len(idx) // 2))])
        a, b = order[:mid], order[mid:]
        side[b] = 1.0
        ta = touching(a)
        side[b] = 0.0
        side[a] = 1.0
        tb = touching(b)
        side[a] = 0.0
        if ta.sum() <= tb.sum():
            separator, parts = a[ta], (a[~ta], b)
        else:
            separator, parts = b[tb], (a, b[~tb])
        kids = [split(part) for part in parts if len(part)]
        tree.append((separator, kids))
        return len(tree) - 1

    split(np.arange(n))
    return tree


def _eliminate_front(H, L, n_full, E=None, errs=None):
    """Eliminate pivot pairs among the first ``n_full`` indices of the dense front (H + L, in place);
    returns (sum of log |pivot|, permutation applied, number eliminated). With ``E``: the entries'
    error bounds, updated alongside (``skew_bounds``), each pivot's log bound appended to ``errs``."""
    f = H.shape[0]
    perm = np.arange(f)
    logs = []
    k = 0
    while n_full - k >= 2:
        # each fully summed row's largest fully summed partner, acceptable when it is at least
        # THRESHOLD times the largest entry of both rows; the largest acceptable pair goes first
        A = np.abs(H[k:n_full, k:])
        A[np.arange(n_full - k), np.arange(n_full - k)] = 0.0   # the update leaves rounding there
        rowmax = A.max(axis=1)
        part = A[:, :n_full - k].argmax(axis=1)
        val = A[np.arange(n_full - k), part]
        ok = (val > 0.0) & (val >= THRESHOLD * np.maximum(rowmax, rowmax[part]))
        if not ok.any():
            break                                          # no acceptable pair: delay the rest
        i = int(np.argmax(np.where(ok, val, -1.0)))
        i, j = min(i, int(part[i])) + k, max(i, int(part[i])) + k
        for a, b in ((i, k), (j, k + 1)):
            if a != b:
                for M in (H, L) if E is None else (H, L, E):
                    M[[a, b]] = M[[b, a]]
                    M[:, [a, b]] = M[:, [b, a]]
                perm[[a, b]] = perm[[b, a]]
        ph, pl = H[k, k + 1], L[k, k + 1]
        logs.append(math.log(abs(ph)) + math.log1p(pl / ph))
        if E is not None:
            errs.append(E[k, k + 1] / abs(ph) + 4.0 * EPS_DD)
        r = slice(k + 2, f)
        if f > k + 2:
            if E is not None:
                _bound_update(E[r, r], H[r, r], *_pivot_bounds(H, L, E, ph, k, r))
            uh, ul = H[r, k].copy(), L[r, k].copy()
            wh, wl = _dd_div(H[r, k + 1].copy(), L[r, k + 1].copy(), ph, pl)
            _dd_rank2_update(H[r, r], L[r, r], uh, ul, wh, wl)
        k += 2
    return math.fsum(logs), perm, k


def _eliminate_many(fronts, errs=None):
    """_eliminate_front on each of ``fronts`` [(H, L, n_full, E)] (E: error bounds or None): the ones
    of at most ``STACK_MAX`` indices stacked, largest first, in chunks of about ``STACK_ENTRIES``
    entries (one Python step per pivot pair of a chunk, not of every front), the larger ones singly.
    Returns (pivot logs: floats and arrays, [(permutation, number eliminated, eliminated H, L, E)
    for each front]); with bounds, the pivots' log bounds go to ``errs``."""
    logs, out = [], [None] * len(fronts)
    sizes = np.array([H.shape[0] for H, _, _, _ in fronts])
    for q in np.flatnonzero(sizes > STACK_MAX):
        H, L, n_full, E = fronts[q]
        lg, perm, done = _eliminate_front(H, L, n_full, E, errs)
        logs.append(lg)
        out[q] = (perm, done, H, L, E)
    small = [int(q) for q in np.argsort(-sizes, kind="stable") if sizes[q] <= STACK_MAX]
    while small:
        f = int(sizes[small[0]])
        chunk, small = small[:max(1, STACK_ENTRIES // (f * f))], small[max(1, STACK_ENTRIES // (f * f)):]
        n_full = np.array([fronts[q][2] for q in chunk])
        order = np.argsort(-n_full, kind="stable")             # the fronts still pivoting: a prefix
        chunk, n_full = [chunk[o] for o in order], n_full[order]
        bounded = fronts[chunk[0]][3] is not None
        Hs, Ls = np.zeros((len(chunk), f, f)), np.zeros((len(chunk), f, f))
        Es = np.zeros((len(chunk), f, f)) if bounded else None
        for b, q in enumerate(chunk):
            m = sizes[q]
            Hs[b, :m, :m], Ls[b, :m, :m] = fronts[q][0], fronts[q][1]
            if bounded:
                Es[b, :m, :m] = fronts[q][3]
        lg, perm, done = _eliminate_fronts(Hs, Ls, n_full, Es, errs)
        logs.append(lg)
        for b, q in enumerate(chunk):
            m = sizes[q]
            out[q] = (perm[b, :m], int(done[b]), Hs[b, :m, :m], Ls[b, :m, :m], Es[b, :m, :m] if bounded else None)
    return logs, out


def _assemble_front(A, rank, pos, own, parts, bounded=False):
    """The dense front of tree node ``own`` (H, L: double-double, skew): its own nodes, the nodes
    its children delayed, then every later node they touch; original entries among its own nodes'
    rows and the children's Schur complements ``parts`` [(nodes, delayed count, H, L, E)] added in.
    Returns (front nodes, H, L, number of fully summed nodes, E): E the entries' error bounds when
    ``bounded`` (the children's, plus the rounding of each addition), else None. ``pos`` is -1
    everywhere, restored."""
    full = np.concatenate([own] + [idx[:nd] for idx, nd, _, _, _ in parts]).astype(np.int64)
    rows, at = _csr_entries(A, own)
    i, j, a = own[rows], A.indices[at], A.data[at]
    up = rank[j] > rank[i]                                 # original entries, each assembled once
    i, j, a = i[up], j[up], a[up]
    pos[full] = np.arange(len(full))
    later = np.concatenate([j] + [idx[nd:] for idx, nd, _, _, _ in parts]).astype(np.int64)
    later = np.unique(later[pos[later] < 0])
    front = np.concatenate([full, later[np.argsort(rank[later], kind="stable")]])
    pos[front] = np.arange(len(front))
    f = len(front)
    H, L = np.zeros((f, f)), np.zeros((f, f))
    H[pos[i], pos[j]] += a
    H[pos[j], pos[i]] -= a
    E = np.zeros((f, f)) if bounded else None
    for idx, _, uh, ul, ue in parts:                        # children's Schur complements
        sub = np.ix_(pos[idx], pos[idx])
        H[sub], L[sub] = _dd_add(H[sub], L[sub], uh, ul)
        if bounded:
            E[sub] += ue + EPS_DD * np.abs(H[sub])
    pos[front] = -1
    return front, H, L, len(full), E


def _stored_pattern(A):
    """The 0/1 pattern of the stored entries of the sparse square ``A``, zeros too (a weight that
    underflowed keeps its edge, so the ordering sees the graph the matrix was built on)."""
    stored = A.tocoo()
    n = A.shape[0]
    return coo_matrix((np.ones(len(stored.row)), (stored.row, stored.col)), shape=(n, n)).tocsr()


def _tree_ranks(tree, n):
    """(rank, level) of a dissection tree in postorder (children first): rank[i], node i's place in the
    elimination; level[t], one more than front t's highest child (the leaves are 0)."""
    rank = np.empty(n, dtype=np.int64)
    rank[np.concatenate([own for own, _ in tree])] = np.arange(n)
    level = []
    for _, kids in tree:
        level.append(1 + max((level[c] for c in kids), default=-1))
    return rank, np.array(level)


def skew_log_abs_pfaffian(A, xy, group=None, bounded=False):
    """log |Pf A| for a sparse skew-symmetric ``A`` (scipy, n x n) whose node i sits at ``xy[i]``;
    ``group``: a label per node, nodes with one label are kept together by the ordering (default:
    every node alone). The tree is eliminated level by level from the leaves (a node's level is
    one more than its highest child's), so the many small fronts of a level go stacked. With
    ``bounded``: (log |Pf A|, a bound on its absolute error as an evaluation of the matrix given:
    the running error analysis of ``skew_bounds``, about 1.5 times the cost)."""
    A = A.tocsr()
    n = A.shape[0]
    if n == 0:
        return (0.0, 0.0) if bounded else 0.0
    pattern = _stored_pattern(A)
    group = np.arange(n) if group is None else group
    tree = _dissection(pattern, xy, _node_groups(pattern, group))
    rank, level = _tree_ranks(tree, n)
    updates = {}
    total, errs = [], []
    pos = np.full(n, -1, dtype=np.int64)                   # position of a node in the current front
    for lv in range(int(level.max()) + 1):
        ts = np.flatnonzero(level == lv)
        fronts = [_assemble_front(A, rank, pos, tree[t][0], [updates.pop(c) for c in tree[t][1]], bounded)
                  for t in ts]
        logs, out = _eliminate_many([(H, L, n_full, E) for _, H, L, n_full, E in fronts], errs)
        total.extend(logs)
        for t, (front, _, _, n_full, _), (perm, done, H, L, E) in zip(ts, fronts, out):
            updates[t] = (front[perm][done:], n_full - done, H[done:, done:].copy(), L[done:, done:].copy(),
                          None if E is None else E[done:, done:].copy())
    (rest, _, _, _, _), = updates.values()
    value = -math.inf if len(rest) else math.fsum(np.concatenate([np.ravel(x) for x in total]))
    if not bounded:
        return value                                       # -inf: singular, no perfect matching
    err = math.fsum(np.concatenate([np.ravel(x) for x in errs])) if errs else 0.0
    return value, err + 4.0 * EPS_DD * abs(value)


#: what a program that calls ``skew_log_abs_pfaffian`` renders in (after ``import math``, numpy, coo_matrix)
FUNCTIONS = double_double.FUNCTIONS + skew_bounds.FUNCTIONS + (_node_positions, _node_groups, _csr_entries, _dissection, _eliminate_front,
                                       _eliminate_fronts, _eliminate_many, _assemble_front, _stored_pattern, _tree_ranks,
                                       skew_log_abs_pfaffian)


def constants() -> str:
    """The module's constants as program text (their current values)."""
    own = "".join(f"{name} = {globals()[name]!r}\n" for name in ("LEAF", "THRESHOLD", "STACK_MAX", "STACK_ENTRIES"))
    return double_double.constants() + skew_bounds.constants() + own
