"""Exact log of a parity-constrained sum (tasks/formula_extras.py ``ConstrainedSum``) by variable
elimination over the variables and the conditions themselves: no mapping to another model, so it is an
independent reference for the derivations that map such sums to Ising models on dual graphs.

Input is what the sum's compiled reader returns (tasks/formula_reader.py, kind "constrained"): the weight
as monomials in s_b = 2 x_b - 1 (x_b = 1 where variable b takes its upper value) plus a constant, and the
conditions as rows over the 0/1 values. Every monomial is a factor (log weights over the 2^k values of its
variables); a condition on at most ``DIRECT_ROW`` variables is one factor (0 or -inf); a longer one is a
chain of three-variable XOR factors through auxiliary bits, so no table is larger than the elimination
needs. Variables are summed out along a greedy min-degree order by log-sum-exp (scipy's, which keeps -inf
for a forbidden assignment and never mixes signs), so it is exact to rounding at any weights, tiny
probabilities included. Cost O(sum over steps of 2^(clique)); a clique over ``MAX_WIDTH`` raises TooLarge.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.sparse import coo_matrix
from scipy.special import logsumexp

from evaluators.oracles.base import TooLarge
from evaluators.oracles.elimination_order import MIN_DEGREE, MIN_FILL, greedy_order

MAX_WIDTH = 22          # largest table: 2^22 float64 = 32 MiB
DIRECT_ROW = 3          # a condition on more variables becomes a chain of XOR factors


def _monomial_table(k: int, w: float) -> np.ndarray:
    """w * prod_j s_j over the 2^k values (index 0 -> s = -1, index 1 -> s = +1)."""
    s = np.array([-1.0, 1.0])
    prod = np.ones(())
    for _ in range(k):
        prod = np.multiply.outer(prod, s)
    return w * prod


def _parity_table(k: int, rhs: int) -> np.ndarray:
    """0 where the k bits sum to rhs (mod 2), -inf elsewhere."""
    bits = np.indices((2,) * k).sum(axis=0) if k else np.zeros(())
    return np.where(bits % 2 == rhs % 2, 0.0, -np.inf)


def _factors(read: dict) -> tuple[list, int, float]:
    """(factors [(variables tuple, log table)], number of variables with auxiliaries, constant)."""
    n_vars = int(read["n_vars"])
    factors = []
    for idx, w in read["terms"]:
        idx = np.asarray(idx, dtype=np.int64)
        for row, weight in zip(idx.tolist(), np.asarray(w, dtype=np.float64).tolist()):
            factors.append((tuple(row), _monomial_table(len(row), weight)))
    aux = n_vars
    for c in read["constraints"]:
        row_of, var, rhs = (np.asarray(c[k]) for k in ("row_of", "var", "rhs"))
        for r in range(len(rhs)):
            counts = np.bincount(var[row_of == r], minlength=n_vars)
            members = np.flatnonzero(counts % 2).tolist()        # a variable twice in a row cancels
            if len(members) <= DIRECT_ROW:
                factors.append((tuple(members), _parity_table(len(members), int(rhs[r]))))
                continue
            prev = members[0]                                     # c_1 = x_1, c_j = c_(j-1) + x_j, r = c_last + x_k
            for x in members[1:-1]:
                factors.append(((prev, x, aux), _parity_table(3, 0)))
                prev, aux = aux, aux + 1
            factors.append(((prev, members[-1]), _parity_table(2, int(rhs[r]))))
    return factors, aux, float(read["constant"])


def _order(n: int, factors: list, max_width: int) -> list[int]:
    """The better of the min-fill and min-degree orders of the factor graph's primal graph
    (:mod:`evaluators.oracles.elimination_order`); TooLarge when both exceed ``max_width``."""
    pairs = [(a, b) for vs, _ in factors for a in vs for b in vs if a != b]
    rows = np.array([a for a, _ in pairs], dtype=np.int64)
    cols = np.array([b for _, b in pairs], dtype=np.int64)
    graph = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n)).tocsr()
    graph.sum_duplicates()
    best = None
    for criterion in (MIN_FILL, MIN_DEGREE):
        order, _, width = greedy_order(graph.indptr, graph.indices, criterion, max_width)
        if width >= 0 and (best is None or width < best[1]):
            best = (order, width)
    if best is None:
        raise TooLarge(f"no elimination order keeps the tables within 2^{max_width} entries")
    return [int(v) for v in best[0]]


def _aligned(vs: tuple, table: np.ndarray, scope: list) -> np.ndarray:
    """``table`` over the distinct variables ``vs`` broadcast to the axes of ``scope``."""
    pos = [scope.index(v) for v in vs]
    table = np.transpose(table, np.argsort(pos))
    shape = [1] * len(scope)
    for p in sorted(pos):
        shape[p] = 2
    return table.reshape(shape)


def constrained_log_value(read: dict, max_width: int = MAX_WIDTH) -> float:
    """Natural log of the constrained sum read (-inf when no assignment satisfies the conditions)."""
    factors, n, total = _factors(read)
    total += sum(float(t) for vs, t in factors if not vs)
    live = [(vs, t) for vs, t in factors if vs]
    buckets: dict[int, list] = {}
    order = _order(n, live, max_width)
    rank = {v: k for k, v in enumerate(order)}
    for vs, t in live:
        buckets.setdefault(min(vs, key=rank.get), []).append((vs, t))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)          # -inf - -inf inside logsumexp's guard
        for v in order:
            bucket = buckets.pop(v, [])
            if not bucket:
                total += float(np.log(2.0))                       # a variable in no factor
                continue
            scope = sorted({a for vs, _ in bucket for a in vs}, key=rank.get)
            if len(scope) > max_width:
                raise TooLarge(f"eliminating a variable joins {len(scope)} others (limit {max_width})")
            table = sum(_aligned(vs, t, scope) for vs, t in bucket)
            table = np.broadcast_to(table, (2,) * len(scope))
            out = logsumexp(table, axis=scope.index(v))
            rest = tuple(a for a in scope if a != v)
            if not rest:
                total += float(out)
                continue
            buckets.setdefault(min(rest, key=rank.get), []).append((rest, np.asarray(out)))
    return float(total)
