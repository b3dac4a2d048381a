"""A parity-constrained sum as a sum over gauge spins on the short cycles of its constraint graph, for a
graph with no drawing on a 2D grid (the surface code with faulty measurements: its space-time graph gives
the 3D random-plaquette gauge model; Dennis, Kitaev, Landahl and Preskill, J. Math. Phys. 43, 4452 (2002)).

The sum runs over 0/1 variables x on the solutions of parity conditions A x = r (mod 2), the weight any
polynomial in s_b = 2 x_b - 1. The solutions are x1 + ker A (x1 by Gaussian elimination over GF(2)).
The graph: the conditions are taken shortest first, those of families (stated for every value of
indices: local checks) before single ones (a class, a homology), each kept as a vertex while no variable
lies in more than two kept conditions; a variable is the edge between its kept conditions, or between its
one kept condition and a boundary vertex (which has no condition), or a loop at the boundary. Every cycle
of this graph satisfies the kept conditions; those that satisfy the others too (the global ones: T18's
homology; T25's class condition is kept, a vertex the left boundary's edges end on) lie in ker A. The
short cycles are found by length, 1, 2, 3, ... (a depth-first search from each vertex through
higher-numbered ones): a cycle of length k is kept when it is in ker A and is not a sum of kept shorter
cycles (a relevant cycle: every cycle of one length that is new, not a basis of them, so the gauge
redundancy of the lattice's plaquettes is kept and no bent cycle is), until the kept cycles span ker A
(rank A + rank = number of variables, over GF(2)); past CYCLE_MAX_LENGTH edges, or a search budget of
CYCLE_BUDGET steps, the step refuses. Then with t_f = (-1)^(sigma_f) on the F kept cycles and
eta_b = (-1)^(x1_b), every solution is x1 + sum_f sigma_f g_f, reached 2^(F - rank) times, and

    s_b = -eta_b prod_(f contains b) t_f,

so a monomial w prod_(b in T) s_b of the weight becomes w prod_b (-eta_b) times the product of the spins
of the cycles met an odd number of times by T. For the space-time graph of the surface code the kept
cycles are its plaquettes (3-cycles through the boundary vertices on the rough boundaries; the temporal
plaquettes of the boundary columns' vertical edges are sums of those and are left out, a gauge fixed
there), a variable's field becomes the product of the (up to four) plaquettes around its edge, and the
result is the random-plaquette gauge model. No polynomial method is known for it: the
step is a checked reduction, and what follows it is an exact exponential solver or bounds. Where the
conditions are drawn on a grid or in the plane, dual_rbim, face_dual and dual_layers give the faces
directly (and a lattice the solvers use); this step is for the graphs they cannot draw.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from search.derivation.actions import ACTIONS, register
from search.derivation.actions.dual_rbim import _act_dual_gf2
from search.derivation.runtime import _rt_merge

NAME = "cycle_dual"
SUMMARY = ("parity-constrained sum on a graph not drawn on a grid -> gauge spins on its short cycles (relevant "
           "cycles by length; a variable's term becomes the product of the cycles through it)")
COST = "O(n^3)"
LABELS: tuple[str, ...] = ()
PRESERVES_ENERGY = False
ORDER = 35                 # after dual_rbim, dual_layers and face_dual, which draw the graph (see admits)
FIRST_STEP = True          # tried on every state of a problem before it is a spin model
OPTION_SPACE: dict = {}
IMPORTS = """\
import math

import numpy as np
"""


def _act_cycle_rows(problem):
    """(the rows: the variables each condition holds an odd number of times, as sorted arrays; rhs; for each
    row, whether it is its family's only one: a single condition, not one stated for every value of indices)."""
    N = int(problem["n_vars"])
    rows, rhs, single = [], [], []
    for c in problem["constraints"]:
        R = len(c["rhs"])
        key = np.sort(np.asarray(c["row_of"], dtype=np.int64) * N + np.asarray(c["var"], dtype=np.int64))
        uniq, count = np.unique(key, return_counts=True)
        odd = uniq[count % 2 == 1]                    # a variable twice in a row cancels
        row, var = np.divmod(odd, N)
        rows += np.split(var, np.searchsorted(row, np.arange(1, R)))
        single += [R == 1] * R
        rhs.append(np.asarray(c["rhs"], dtype=np.int64) % 2)
    return rows, (np.concatenate(rhs) if rhs else np.zeros(0, dtype=np.int64)), single


def _act_cycle_graph(rows, single, N):
    """(ends (N, 2) of every variable's edge, vertices, the rows left out): the rows of families first (local
    conditions, stated for every value of indices), then single conditions, each shortest first, kept while
    no variable lies in more than two kept rows; vertex k is the k-th kept row, the last vertex the boundary."""
    held = np.zeros(N, dtype=np.int64)
    kept = []
    for r in sorted(range(len(rows)), key=lambda r: (single[r], len(rows[r]), r)):
        if np.all(held[rows[r]] < 2):
            held[rows[r]] += 1
            kept.append(r)
    kept.sort()
    boundary = len(kept)
    ends = np.full((N, 2), boundary, dtype=np.int64)
    fill = np.zeros(N, dtype=np.int64)
    for k, r in enumerate(kept):
        vs = rows[r]
        ends[vs, fill[vs]] = k
        fill[vs] += 1
    chosen = set(kept)
    return ends, boundary + 1, [r for r in range(len(rows)) if r not in chosen]


def _act_cycle_adjacency(ends, V):
    """Per vertex, its (neighbour, edge) pairs; the loops (edges from a vertex to itself) apart."""
    adj = [[] for _ in range(V)]
    loops = []
    for e, (u, v) in enumerate(ends.tolist()):
        if u == v:
            loops.append(e)
        else:
            adj[u].append((v, e))
            adj[v].append((u, e))
    return adj, loops


def _act_cycle_find(adj, loops, k, budget):
    """The simple cycles of exactly k edges of the multigraph (``adj``, ``loops``) as sorted edge tuples, and
    the search steps left: from each vertex s, paths through vertices above s closed back at s (each cycle is
    met from its lowest vertex, in both directions; a set keeps one)."""
    if k == 1:
        return [(e,) for e in loops], budget
    V = len(adj)
    found = set()
    on = [False] * V

    def extend(s, x, edges):
        nonlocal budget
        for y, e in adj[x]:
            budget -= 1
            if budget < 0:
                raise ValueError(f"the search for cycles of {k} edges ran past its budget")
            if len(edges) == k - 1:
                if y == s and e != edges[-1]:
                    found.add(tuple(sorted(edges + [e])))
            elif y > s and not on[y]:
                on[y] = True
                extend(s, y, edges + [e])
                on[y] = False

    for s in range(V):
        on[s] = True
        extend(s, s, [])
        on[s] = False
    return sorted(found), budget


def _act_cycle_reduce(mask, basis):
    """``mask`` (an int over the variables) reduced by the GF(2) basis {top bit: vector}."""
    while mask:
        top = mask.bit_length() - 1
        if top not in basis:
            return mask
        mask ^= basis[top]
    return 0


def _act_cycle_basis(problem, max_length=8, budget=4_000_000):
    """(the kept cycles as edge tuples, dim ker A, x1, rank A) for the constrained sum (module docstring):
    cycles of at most ``max_length`` edges, at most ``budget`` search steps in all."""
    N = int(problem["n_vars"])
    rows, rhs, single = _act_cycle_rows(problem)
    A = np.zeros((len(rows), N), dtype=np.int64)
    for r, vs in enumerate(rows):
        A[r, vs] = 1
    rank_a, x1 = _act_dual_gf2(A, rhs)
    if x1 is None:
        raise ValueError("no assignment satisfies the parity conditions")
    need = N - rank_a
    if need == 0:
        raise ValueError("the conditions fix every variable: there is nothing to sum")
    ends, V, others = _act_cycle_graph(rows, single, N)
    adj, loops = _act_cycle_adjacency(ends, V)
    global_rows = [sum(1 << int(v) for v in rows[r]) for r in others]
    basis, kept = {}, []
    for k in range(1, max_length + 1):
        cycles, budget = _act_cycle_find(adj, loops, k, budget)
        new = []
        for cyc in cycles:
            mask = sum(1 << e for e in cyc)
            if any((mask & g).bit_count() % 2 for g in global_rows):
                continue                              # crosses a global condition: not a solution
            if _act_cycle_reduce(mask, basis):
                new.append((cyc, mask))               # not a sum of shorter cycles
        for cyc, mask in new:
            kept.append(cyc)
            rest = _act_cycle_reduce(mask, basis)
            if rest:
                basis[rest.bit_length() - 1] = rest
        if len(basis) == need:
            return kept, need, x1, rank_a
    raise ValueError(f"the cycles of up to {max_length} edges span {len(basis)} of the {need} dimensions "
                     "of the solutions")


def _act_cycle_dual(problem, options):
    """The model over gauge spins on the kept cycles whose log Z plus log_shift is the constrained sum's log."""
    if problem.get("kind") != "constrained":
        raise ValueError("the cycle step takes a parity-constrained sum")
    N = int(problem["n_vars"])
    kept, need, x1, _ = _act_cycle_basis(problem)
    F = len(kept)
    through = [[] for _ in range(N)]                  # the cycles holding each variable
    for f, cyc in enumerate(kept):
        for e in cyc:
            through[e].append(f)
    sign = -(1.0 - 2.0 * np.asarray(x1, dtype=np.float64))      # s_b = sign_b prod t_f
    by_order, const = {}, float(problem["constant"])
    for idx, w in problem["terms"]:
        for row, weight in zip(np.asarray(idx, dtype=np.int64).tolist(), np.asarray(w, dtype=np.float64).tolist()):
            if len(row) == 1:
                spins = through[row[0]]
            else:
                odd = set()
                for b in row:
                    odd ^= set(through[b])
                spins = sorted(odd)
            value = weight * float(np.prod(sign[row]))
            if not spins:
                const += value
            else:
                by_order.setdefault(len(spins), []).append((spins, value))
    terms = _rt_merge([(np.array([s for s, _ in group], dtype=np.int64), np.array([v for _, v in group]))
                       for _, group in sorted(by_order.items())])
    shift = const - (F - need) * math.log(2.0)
    return {"n": int(F), "beta": 1.0, "terms": terms, "rank_one": [], "log_shift": shift, "energy_shift": 0.0,
            "positions": None, "coords": None, "statistic": "log_z"}


#: the longest cycle the search looks for, and its budget of search steps (each a path extended by an edge)
CYCLE_MAX_LENGTH, CYCLE_BUDGET = _act_cycle_basis.__defaults__

FUNCTIONS = (_act_dual_gf2, _act_cycle_rows, _act_cycle_graph, _act_cycle_adjacency, _act_cycle_find,
             _act_cycle_reduce, _act_cycle_basis, _act_cycle_dual)
ENTRY = _act_cycle_dual


def admits(view) -> str | None:
    """Not where a first step tried before it (a smaller ORDER: the ones that draw the graph on a grid or in
    the plane) accepts every state: their faces come with the geometry the solvers after them use."""
    if view.kind != "constrained":
        return "not a parity-constrained sum"
    earlier = [a.NAME for a in ACTIONS.values()
               if a.FIRST_STEP and a.ORDER < ORDER and view.accepts.get(a.NAME, "") is None]
    if earlier:
        return f"{' and '.join(earlier)} (tried before it) map the sum with a drawing of its graph"
    return view.reason(NAME)


def explain(view, options) -> dict:
    return {"graph": "conditions kept shortest first while each variable lies in at most two (a boundary vertex "
                     "for the rest)",
            "cycles": f"relevant cycles by length up to {CYCLE_MAX_LENGTH} edges, in ker A, until they span it",
            "couplings": "w prod_b (-eta_b) on the cycles met an odd number of times",
            "reference": "x1 by Gaussian elimination over GF(2)"}


register(sys.modules[__name__])
