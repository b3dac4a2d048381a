"""Tree-reweighted decomposition: a rigorous UPPER bound on log Z for terms of any order and fields.

Convention: the runtime model's dimensionless weights, W(s) = sum_f theta_f prod_{i in f} s_i, Z = sum_s
exp(W(s)), natural logs; the bound is on log Z without the model's ``log_shift`` (the program adds it).

log Z is convex in the weights (it is a log-sum-exp of linear functions). Split theta into T forests:
theta = (1/T) sum_t theta^t, where theta^t lives on the terms of forest t (an acyclic sub-factor-graph:
every term added joins spins in distinct components) plus every field. Jensen gives

    log Z(theta) <= (1/T) sum_t log Z(theta^t)          (Wainwright, Jaakkola and Willsky 2005)

for EVERY split that satisfies the constraint, and log Z of a forest is exact by belief propagation
(one upward pass; a term's message sums its 2^(k-1) child configurations by log-sum-exp, exact at any
temperature). The forests are built greedily (union-find), the least covered terms first, until every
term lies in some forest; a term in c_f of the T forests starts at theta^t_f = T theta_f / c_f. The split
is then improved by projected gradient descent: d/dtheta^t_f of the bound is mu^t_f / T, mu^t_f =
<prod_{i in f} s_i> in forest t (the downward pass), and moving theta^t_f against mu^t_f minus its
average over the forests holding f keeps the constraint; a step that does not lower the bound is undone
and the step halved. Every iterate is a valid split, so the returned minimum is a bound whether or not
the descent converged. At the optimum the forests agree on every shared moment (the TRW fixed point).
Rounding is the only error. Cost O(iterations * T * (terms + depth)): O(n) per pass at fixed options.
"""

from __future__ import annotations

import sys

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from search.derivation.solvers import register_answer
from search.derivation.solvers.adapters import ModuleSolver

NAME = "tree_reweighted"
ANSWER = "upper"
ORDER = 20                 # where answers.py tries it among the answer solvers
CHEAP = False
SUMMARY = "tree-reweighted decomposition into forests: a rigorous upper bound on log Z (convexity)"
OPTION_SPACE = {"forests": (6, 3, 12), "iterations": (30, 10, 150)}
IMPORTS = """\
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
"""


def _trw_terms(model):
    """(fields (n,), [(idx (F_k, k), theta (F_k,))] for k >= 2); ValueError on a rank-one block."""
    if model["rank_one"]:
        raise ValueError("the tree-reweighted bound here takes terms, not rank-one blocks")
    n = int(model["n"])
    H = np.zeros(n)
    groups = []
    for idx, w in model["terms"]:
        idx, w = np.asarray(idx, dtype=np.int64), np.asarray(w, dtype=np.float64)
        if idx.shape[1] == 1:
            H += np.bincount(idx[:, 0], weights=w, minlength=n)
        elif len(w):
            groups.append((idx, w))
    return H, groups


def _trw_forests(n, groups, count, seed):
    """(T, F) bool: term f (groups concatenated) in forest t; at least ``count`` forests, more until
    every term is in one. Each forest adds terms least covered first (random ties) while they join
    spins in distinct components."""
    members = [row for idx, _ in groups for row in idx.tolist()]
    F = len(members)
    rng = np.random.default_rng(seed)
    cover = np.zeros(F, dtype=np.int64)
    rows = []
    while len(rows) < count or (F and cover.min() == 0):
        if len(rows) >= 4 * count + 4:
            raise ValueError("the terms could not all be placed in forests")
        parent = list(range(n))

        def root(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x
        take = np.zeros(F, dtype=bool)
        for f in np.lexsort((rng.random(F), cover)).tolist():
            roots = [root(i) for i in members[f]]
            if len(set(roots)) == len(roots):
                for r in roots[1:]:
                    parent[r] = roots[0]
                take[f] = True
        cover += take
        rows.append(take)
    return np.array(rows, dtype=bool).reshape(len(rows), F)


def _trw_layout(n, members, chosen):
    """The rooted structure of one forest: (levels, roots). levels[d] = [(factor ids, (F, k) spins with
    the parent spin first)] for the terms at depth d (d = 0 at the roots), grouped by arity."""
    ids = np.flatnonzero(chosen)
    if not len(ids):
        return [], np.arange(n)
    fv = np.concatenate([np.asarray(members[f]) for f in ids])
    ff = np.repeat(np.arange(len(ids)), [len(members[f]) for f in ids])
    g = coo_matrix((np.ones(len(fv)), (fv, n + ff)), shape=(n + len(ids), n + len(ids)))
    _, label = connected_components(g, directed=False)
    first = np.full(label.max() + 1, -1, dtype=np.int64)
    for v in range(n - 1, -1, -1):
        first[label[v]] = v
    roots = np.unique(first[label[:n]])
    order = np.argsort(fv, kind="stable")
    v_sorted, f_of = fv[order], ff[order]
    start = np.searchsorted(v_sorted, np.arange(n + 1))
    seen_f = np.zeros(len(ids), dtype=bool)
    parent_of = np.full(len(ids), -1, dtype=np.int64)
    frontier, levels = roots, []
    while len(frontier):
        counts = start[frontier + 1] - start[frontier]
        pos = np.repeat(start[frontier], counts) + np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        fs, par = f_of[pos], np.repeat(frontier, counts)
        new = ~seen_f[fs]
        fs, par = fs[new], par[new]
        if not len(fs):
            break
        seen_f[fs] = True
        parent_of[fs] = par
        level, nxt = {}, []
        for f, p in zip(fs.tolist(), par.tolist()):
            row = [p] + [x for x in members[ids[f]] if x != p]
            level.setdefault(len(row), ([], []))
            level[len(row)][0].append(ids[f])
            level[len(row)][1].append(row)
            nxt += row[1:]
        levels.append([(np.array(a), np.array(b, dtype=np.int64)) for a, b in level.values()])
        frontier = np.array(nxt, dtype=np.int64)
    return levels, roots


def _trw_logsumexp(x, axis):
    top = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(top, axis=axis) + np.log(np.sum(np.exp(x - top), axis=axis))


def _trw_log2cosh(x):
    a = np.abs(x)
    return a + np.log1p(np.exp(-2.0 * a))


def _trw_configs(k):
    """(2^k, k) every +-1 configuration, and its products (2^k,)."""
    c = 1.0 - 2.0 * ((np.arange(1 << k)[:, None] >> np.arange(k)) & 1)
    return c, np.prod(c, axis=1)


def _trw_forest_pass(n, layout, theta, H):
    """(log Z, mu over all terms (zero off the forest), <s_i> (n,)) of one forest with term weights
    ``theta`` (F,) and fields H (n,): an upward and a downward pass of belief propagation."""
    levels, roots = layout
    u = H.copy()                               # upward field of each spin (its own plus its children's)
    total, messages = 0.0, []
    for level in reversed(levels):
        out = []
        for fid, rows in level:
            if rows.shape[1] == 2:                 # sum_c exp(theta s_p s_c + u_c s_c) = 2cosh(u_c + theta s_p)
                plus, minus = _trw_log2cosh(u[rows[:, 1]] + theta[fid]), _trw_log2cosh(u[rows[:, 1]] - theta[fid])
            else:
                cfg, prod = _trw_configs(rows.shape[1])
                e = theta[fid][:, None] * prod[None, :] + u[rows[:, 1:]] @ cfg[:, 1:].T
                plus = _trw_logsumexp(np.where(cfg[None, :, 0] > 0, e, -np.inf), 1)
                minus = _trw_logsumexp(np.where(cfg[None, :, 0] < 0, e, -np.inf), 1)
            b = 0.5 * (plus - minus)
            total += float(np.sum(0.5 * (plus + minus)))
            out.append(b)
        for (fid, rows), b in zip(level, out):
            u += np.bincount(rows[:, 0], weights=b, minlength=n)
        messages.append(out)
    a = np.abs(u[roots])
    log_z = total + float(np.sum(a + np.log1p(np.exp(-2.0 * a))))
    field = np.zeros(n)
    field[roots] = u[roots]
    mu = np.zeros(len(theta))
    for level, out in zip(levels, reversed(messages)):
        for (fid, rows), b in zip(level, out):
            hp = field[rows[:, 0]] - b                 # the parent's field without this term's message
            if rows.shape[1] == 2:                     # two spins, coupling theta, fields hp and u_c
                th, uc = theta[fid], u[rows[:, 1]]
                mu[fid] = np.tanh(th + 0.5 * (_trw_log2cosh(hp + uc) - _trw_log2cosh(hp - uc)))
                field[rows[:, 1]] = uc + 0.5 * (_trw_log2cosh(hp + th) - _trw_log2cosh(hp - th))
                continue
            cfg, prod = _trw_configs(rows.shape[1])
            e = theta[fid][:, None] * prod[None, :] + hp[:, None] * cfg[None, :, 0] + u[rows[:, 1:]] @ cfg[:, 1:].T
            lz = _trw_logsumexp(e, 1)
            p = np.exp(e - lz[:, None])
            mu[fid] = p @ prod
            for j in range(1, rows.shape[1]):
                up = _trw_logsumexp(np.where(cfg[None, :, j] > 0, e, -np.inf), 1)
                down = _trw_logsumexp(np.where(cfg[None, :, j] < 0, e, -np.inf), 1)
                field[rows[:, j]] = 0.5 * (up - down)
    return log_z, mu, np.tanh(field)


def _sol_tree_reweighted(model, options):
    """The smallest (1/T) sum_t log Z(theta^t) found: an upper bound on log Z (without the shift)."""
    n = int(model["n"])
    H, groups = _trw_terms(model)
    if not groups:
        a = np.abs(H)
        return float(np.sum(a + np.log1p(np.exp(-2.0 * a))))
    members = [row for idx, _ in groups for row in idx.tolist()]
    theta0 = np.concatenate([w for _, w in groups])
    inside = _trw_forests(n, groups, int(options.get("forests", 6)), 2024)
    T = inside.shape[0]
    layouts = [_trw_layout(n, members, inside[t]) for t in range(T)]
    cover = inside.sum(axis=0)
    theta = np.where(inside, T * theta0[None, :] / cover[None, :], 0.0)
    fields = np.repeat(H[None, :], T, axis=0)

    def evaluate(th, fl):
        runs = [_trw_forest_pass(n, layouts[t], th[t], fl[t]) for t in range(T)]
        return (sum(r[0] for r in runs) / T, np.array([r[1] for r in runs]), np.array([r[2] for r in runs]))

    bound, mu, mag = evaluate(theta, fields)
    best, step = bound, 0.5
    for _ in range(int(options.get("iterations", 30))):
        g_term = np.where(inside, mu - (mu * inside).sum(axis=0) / cover, 0.0)
        g_field = mag - mag.mean(axis=0)
        if max(float(np.max(np.abs(g_term))), float(np.max(np.abs(g_field)))) < 1e-10:
            break                                  # the forests agree on every moment: the optimum
        trial_theta, trial_fields = theta - step * g_term, fields - step * g_field
        value, trial_mu, trial_mag = evaluate(trial_theta, trial_fields)
        if value < bound:
            theta, fields, bound, mu, mag = trial_theta, trial_fields, value, trial_mu, trial_mag
            best = min(best, bound)
            step *= 1.5
        else:
            step *= 0.5
            if step < 1e-6:
                break
    return float(best)


FUNCTIONS = (_trw_terms, _trw_forests, _trw_layout, _trw_logsumexp, _trw_log2cosh, _trw_configs, _trw_forest_pass,
             _sol_tree_reweighted)
ENTRY = _sol_tree_reweighted


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
            "A rigorous upper bound, not an exact value: log Z is convex in the weights, so splitting them over "
            "forests (acyclic sub-factor-graphs covering every term) bounds it by the average of the forests' exact "
            f"log Z (belief propagation); the split is optimised by projected gradient descent, {options.get('forests', 6)} "
            f"forests x {options.get('iterations', 30)} iterations, each O(terms + depth): O(n).", 0)


register_answer(ModuleSolver(sys.modules[__name__]))
