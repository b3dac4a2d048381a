"""Planar zero-field Ising by Fisher's dimer mapping and a Kasteleyn Pfaffian.

Construction (written from the textbook statements of Fisher 1966 and Kasteleyn 1963, not from
the project's oracles):

1. The straight-line embedding gives a rotation system (darts sorted by angle around each spin)
   and so the faces of the plane graph (cycles of phi(d) = rho(reverse(d))).
2. Z as a sum over subgraphs with weights, in one of three forms (the plan's ``form``):
   ``low_temperature`` (default): a configuration is fixed, up to a global flip, by the set of
   bonds it cuts, and a cut of a plane graph is an even subgraph of the dual, so
   Z = 2^c exp(beta sum J) sum_{C even in G*} prod_{e in C} exp(-2 beta J_e), c the number of
   connected components. The weights are positive for either sign of J: no cancellation.
   ``domain_walls``: the unsatisfied bonds, weights exp(-2 beta |J_e|) <= 1, form a subgraph of
   the dual that is odd exactly at the frustrated faces (a pendant node per frustrated face).
   ``high_temperature``: Z = 2^n prod cosh(beta J) sum_{C even in G} prod tanh(beta J_e); signed
   weights, exact but cancelling for frustrated samples at low temperature.
   Bridges of G are loops of G* (a factor 1 + w each) and are never in an even subgraph of G.
3. Even subgraphs of a graph with a rotation system = perfect matchings of a decorated graph:
   a vertex of degree k is split along a path into k - 2 vertices of degree 3 (internal edges of
   weight 1 keep the bijection), each replaced by the gadget {t0, t1, t2, x} with edges t0-x,
   t1-x, t2-x, t0-t1 (one internal completion for every even set of used terminals, none for odd);
   a vertex of degree 2 becomes the edge t0-t1.
4. A Kasteleyn orientation of the decorated plane graph (on every face but one per component an
   odd number of edges agrees with the face's traversal) from a spanning tree of its faces: the
   edges off the tree are oriented arbitrarily and each tree edge's orientation is the parity of
   its subtree, one sparse unit-triangular solve. Then |Pf A| = sum over matchings, and
   log |Pf A| = 1/2 log |det A| from the diagonal of a sparse LU with a minimum-degree ordering
   of A^T A (``MMD_AT_PLUS_A`` is useless here: A^T + A = 0 for a skew matrix, and it runs ~100x slower).

Exact at every temperature. Step 4 in float64 is exact only while it is warm: on +-J grids the
sparse LU (any form) lost 4.1 in log Z on 8 x 8 at beta = 12 (8e-4 at beta = 8 in the domain-wall
form), because an elimination that perturbs the zero entries of A by eps |A| is not accurate for a
matrix whose entries span exp(-2 beta |J|) .. 1: log Pf is well conditioned in the nonzero
entries (d log Pf / d log A_ij is the probability that edge ij is matched) but a Schur complement
entry of order x^(k+1) computed as a difference of terms of order x^k keeps an error eps x^k. So:

- beta max|J| <= WARM_BETA_J (3): the plan's form and solver in float64 (measured <= 1e-11).
- colder, up to TRUSTED_BETA_J (12; TRUSTED_DISTINCT_BETA_J = 25 when most magnitudes differ,
  so no exact cancellation): the domain-wall form (every weight in (0, 1], a sum of positive
  terms), eliminated by ``skew_elimination``: nested dissection that keeps a face's gadgets
  together, 2 x 2 pivots chosen by size among each front's fully summed nodes, double-double
  (106-bit) arithmetic. Measured against the transfer matrix on +-J grids up to 20 x 20 and the
  triangular antiferromagnet (relative error <= 2e-16 in log Z for beta |J| = 4 .. 25), and equal
  to the planar oracle's certified value on 64 x 64 +-J at beta |J| = 6 .. 10.
- colder still: a value only with a bound that vouches for it (``cold_line``): the same
  elimination with a running error analysis (``skew_bounds``) at the requested beta, else the
  ground-state line of couplings that are integer multiples of one unit, certified from two
  vouched references (E0 fixed on its lattice, the remaining excitations bracketed rigorously),
  else ArithmeticError naming the limit. Fixed precision does run out: 106 bits no longer hold
  the Schur complements' exp(-2 beta |J|)^k terms (64 x 64 +-J drifts from beta |J| ~ 18), and
  a large model may not reach its ground-state line while the elimination still resolves it
  (a 32 x 32 triangular antiferromagnet has states 2|J| .. 14|J| above its two ground states whose
  number outweighs exp(-2 beta |J| k) until beta |J| is well past 12). An earlier version read
  E0 and log g0 off unbounded runs at beta |J| = 10 and 12 and was wrong there by 60 in log Z at
  beta |J| = 20 (issue 36).

The cold route costs more: about 0.4 s at n = 1024 and 1.9 s at n = 4096 for beta |J| in [6, 12]
(one core, the small fronts eliminated stacked); the bounded elimination about 1.5 times that,
and the line up to seven bounded runs.
"""

from __future__ import annotations

import sys

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import splu

from search.structural.templates import Claims, render, register
from search.structural.templates import (cold_decimal, cold_line, cold_sweep, ground_state, plane_dimers, skew_decimal,
                                        skew_elimination)
from search.structural.templates.cold_decimal import _cd_checked_log_pf
from search.structural.templates.cold_line import _cold_log_z
from search.structural.templates.cold_sweep import _narrow_sweep_log_z
from search.structural.templates.plane_dimers import (_cycles, _decorate, _face_groups, _kasteleyn_orientation,
                                                      _plane_darts, _positions_among, _rotation)
from search.structural.templates.ground_state import _frustrated_faces, _ground_walls
from search.structural.templates.skew_elimination import _node_positions, skew_log_abs_pfaffian

NAME = "planar_pfaffian"
#: the order in which the structural proposer tries templates when no plan is preferred by structure
ORDER = 30
OPTION_SPACE = {
    "form": ("low_temperature", "domain_walls", "high_temperature"),
    "permc_spec": ("MMD_ATA", "COLAMD"),
    "solver": ("sparse_lu", "dense"),
}
IMPORTS = """\
import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix, csc_matrix, hstack
from scipy.sparse.csgraph import breadth_first_order, connected_components, reverse_cuthill_mckee
from scipy.sparse.linalg import spsolve_triangular, splu
"""

#: at or below this beta * max|J| the plan's float64 route is exact (measured: 1e-11 in log Z on 16 x 16)
WARM_BETA_J = 3.0
#: gadgets of one face that the cold route's ordering keeps together (as the planar oracle does)
FACE_GROUP_UNITS = 4
#: up to this beta * max|J| the double-double elimination is trusted without a bound (measured: <= 2e-16
#: relative in log Z against the transfer matrix on +-J grids to 20 x 20 and the triangular
#: antiferromagnet); with most magnitudes distinct (no exact cancellation) up to the second
TRUSTED_BETA_J = 12.0
TRUSTED_DISTINCT_BETA_J = 25.0



def _pfaffian_log(n_nodes, edges, weights, ranks, options, xy=None, bounded=False):
    """log |Pf A| = log (weighted number of perfect matchings) of the decorated plane graph. With
    ``xy`` (positions of the first nodes, for the ordering): the stable double-double elimination,
    and with ``bounded`` also a bound on its error: (log |Pf A|, bound)."""
    if n_nodes == 0:
        return (0.0, 0.0) if bounded else 0.0
    o = _kasteleyn_orientation(n_nodes, edges, ranks)
    u = np.where(o == 0, edges[:, 0], edges[:, 1])
    v = np.where(o == 0, edges[:, 1], edges[:, 0])
    if xy is not None:
        A = coo_matrix((np.r_[weights, -weights], (np.r_[u, v], np.r_[v, u])), shape=(n_nodes, n_nodes)).tocsr()
        pattern = coo_matrix((np.ones(2 * len(u)), (np.r_[u, v], np.r_[v, u])), shape=(n_nodes, n_nodes)).tocsr()
        known, known_xy, group = xy
        return skew_log_abs_pfaffian(A, _node_positions(n_nodes, pattern, known, known_xy), group, bounded)
    if options.get("solver") == "dense":
        A = np.zeros((n_nodes, n_nodes))
        np.add.at(A, (u, v), weights)
        np.add.at(A, (v, u), -weights)
        return 0.5 * float(np.linalg.slogdet(A)[1])
    A = coo_matrix((np.r_[weights, -weights], (np.r_[u, v], np.r_[v, u])), shape=(n_nodes, n_nodes)).tocsc()
    lu = splu(A, permc_spec=options.get("permc_spec", "MMD_ATA"))
    return 0.5 * float(np.sum(np.log(np.abs(lu.U.diagonal()))))


def _method_log_z(edges, J, h, rank_one, positions, beta, n, options):
    """Natural log Z of a zero-field planar pair model with a straight-line embedding ``positions``.

    Warm (beta max|J| <= WARM_BETA_J): the plan's form and solver in float64. Colder, up to
    TRUSTED_BETA_J (TRUSTED_DISTINCT_BETA_J when most magnitudes differ): the domain-wall form by
    the double-double skew elimination. Colder still: only a value the running error bound vouches
    for, directly or through the certified ground-state line (``cold_line``); else the exact sweep of a
    narrow model (``cold_sweep``); else the domain walls in decimal arithmetic, checked at two
    precisions (``cold_decimal``); else ArithmeticError naming every limit."""
    if rank_one or np.any(np.asarray(h) != 0.0):
        raise ValueError("the Pfaffian route needs zero fields and no rank-one blocks")
    if positions is None:
        raise ValueError("the Pfaffian route needs a planar straight-line embedding")
    edges, J = _merged(edges, J, n)
    aJ = np.abs(J)
    trusted = TRUSTED_BETA_J if len(np.unique(aJ)) < len(aJ) / 2 else TRUSTED_DISTINCT_BETA_J
    if beta * float(aJ.max(initial=0.0)) <= trusted:
        return _walls_log_z(edges, J, positions, beta, n, options, False)

    face = _cycles(_plane_darts(n, edges[:, 0], edges[:, 1], positions)[2])[0]
    negative = (J < 0).astype(np.float64)

    def ground(multiples):
        return _ground_walls(face, multiples, negative)

    try:
        return _cold_log_z(lambda b: _walls_log_z(edges, J, positions, b, n, options, True), ground, beta, aJ,
                           f"{n} spins ({len(aJ)} couplings)", trusted, bool(_frustrated_faces(face, negative).any()))
    except ArithmeticError as refused:           # a narrow model still has an exact route (cold_sweep)
        try:
            return _narrow_sweep_log_z(edges, J, positions, beta, n, refused)
        except ArithmeticError as too_wide:      # and any model the decimal elimination (cold_decimal)
            try:
                return _walls_log_z(edges, J, positions, beta, n, options, False, in_decimal=True)
            except ArithmeticError as decimal_refused:
                raise ArithmeticError(f"{too_wide}; {decimal_refused}") from None


def _merged(edges, J, n):
    """(edges (m, 2) with u < v, J) with repeated pairs summed and zero couplings dropped."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    J = np.asarray(J, dtype=np.float64).reshape(-1)
    lo, hi = np.minimum(edges[:, 0], edges[:, 1]), np.maximum(edges[:, 0], edges[:, 1])
    key, inv = np.unique(lo * n + hi, return_inverse=True)
    Jm = np.bincount(inv.ravel(), weights=J, minlength=len(key))
    keep = Jm != 0.0
    return np.stack([key[keep] // n, key[keep] % n], 1), Jm[keep]


def _walls_log_z(edges, J, positions, beta, n, options, bounded, in_decimal=False):
    """log Z (zero field) by the plan's route or, beyond WARM_BETA_J, the domain walls eliminated in
    double-double; with ``bounded``: (log Z, a bound on its absolute error), the elimination's
    running bound plus the rounding of the weights exp(-2 |K|) (d log Pf / d log w_e is a
    probability, so n_nodes / 2 of them at most, each (1 + 2|K|) 2^-52). ``in_decimal``: the domain
    walls eliminated in decimal arithmetic, checked at two precisions (``cold_decimal``)."""
    edges, Jm = _merged(edges, J, n)
    eu, ev = edges[:, 0], edges[:, 1]
    K = beta * Jm
    m = len(K)
    n_comp = connected_components(coo_matrix((np.ones(m), (eu, ev)), shape=(n, n)), directed=False)[0]
    tail, angle, phi = _plane_darts(n, eu, ev, positions)
    face, fpos, _ = _cycles(phi)
    bridge = np.repeat(face[0::2] == face[1::2], 2) if m else np.zeros(0, dtype=bool)
    mate = np.arange(2 * m) ^ 1
    cold = bounded or in_decimal or beta * float(np.max(np.abs(Jm), initial=0.0)) > WARM_BETA_J
    form = "domain_walls" if cold else options.get("form", "low_temperature")
    pos = np.asarray(positions, dtype=np.float64)
    dart_xy = np.repeat(0.5 * (pos[eu] + pos[ev]), 2, axis=0)      # the midpoint of each dart's bond
    if form == "domain_walls":
        # domain walls: unsatisfied bonds form a subgraph of the dual, odd exactly at frustrated faces
        w = 2.0 + np.arange(2 * m) if in_decimal else np.exp(-2.0 * np.abs(np.repeat(K, 2)))  # dart ids in decimal
        aK = np.abs(K)
        base = n_comp * np.log(2.0) + float(aK.sum()) + float(np.sum(np.log1p(np.exp(-2.0 * aK[bridge[0::2]]))))
        group, key2 = face, fpos
    elif form == "low_temperature":
        # cut sets relative to all spins up: even subgraphs of the dual with weights exp(-2 beta J_e)
        w = np.exp(-2.0 * np.repeat(K, 2))
        base = n_comp * np.log(2.0) + float(K.sum()) + float(np.sum(np.logaddexp(0.0, -2.0 * K[bridge[0::2]])))
        group, key2 = face, fpos
    else:
        w = np.tanh(np.repeat(K, 2))
        aK = np.abs(K)
        base = n * np.log(2.0) + float(np.sum(aK + np.log1p(np.exp(-2.0 * aK)) - np.log(2.0)))
        group, key2 = tail, angle
    keep = ~bridge
    if not np.any(keep):
        return (base, 0.0) if bounded else base
    position, degree = _positions_among(group, key2, keep)
    idx = np.flatnonzero(keep)
    new = np.full(2 * m, -1, dtype=np.int64)
    new[idx] = np.arange(len(idx))
    _, vertex = np.unique(group[idx], return_inverse=True)
    vertex, position, degree, mate, w = vertex.ravel(), position[idx], degree[idx], new[mate[idx]], w[idx]
    dart_xy = dart_xy[idx]
    if form == "domain_walls":
        # a frustrated face (odd number of negative bonds) gets one more half-edge, forced into every
        # matching by a pendant node, so an odd number of its walls must be unsatisfied
        n_vert = int(vertex.max()) + 1
        odd = np.bincount(vertex, weights=(np.repeat(K, 2)[idx] < 0), minlength=n_vert).astype(np.int64) % 2 == 1
        dv = np.flatnonzero(odd)
        size = np.bincount(vertex, minlength=n_vert)
        nd, D = len(dv), len(vertex)
        degree = degree + odd[vertex]
        vertex = np.r_[vertex, dv, n_vert + np.arange(nd)]
        position = np.r_[position, size[dv], np.zeros(nd, dtype=np.int64)]
        degree = np.r_[degree, size[dv] + 1, np.ones(nd, dtype=np.int64)]
        mate = np.r_[mate, D + nd + np.arange(nd), D + np.arange(nd)]
        w = np.r_[w, np.ones(2 * nd)]
        centre = np.stack([np.bincount(vertex[:D], weights=dart_xy[:, c], minlength=n_vert) for c in (0, 1)], 1)
        centre = centre[dv] / size[dv][:, None]                          # a pendant sits in its face
        dart_xy = np.r_[dart_xy, centre, centre]
    n_nodes, dedges, dweights, dranks = _decorate(vertex, position, degree, mate, w)
    xy = None
    if cold:
        half = np.flatnonzero(np.arange(len(mate)) < mate)           # _decorate's first edges, in order
        xy = (dedges[:len(half)].T.ravel(), np.r_[dart_xy[half], dart_xy[mate[half]]],
              _face_groups(vertex, degree, FACE_GROUP_UNITS))
    if in_decimal:
        return base + _cd_checked_log_pf(n_nodes, dedges, dweights, dranks, xy, np.repeat(np.abs(K), 2),
                                         float(np.max(np.abs(K), initial=0.0)))[0]
    if not bounded:
        return base + _pfaffian_log(n_nodes, dedges, dweights, dranks, options, xy)
    value, bound = _pfaffian_log(n_nodes, dedges, dweights, dranks, options, xy, True)
    return base + value, bound + 0.5 * n_nodes * (1.0 + 2.0 * float(np.abs(K).max())) * 2.0 ** -52


FUNCTIONS = ((_pfaffian_log, _method_log_z, _merged, _walls_log_z) + plane_dimers.FUNCTIONS + skew_elimination.FUNCTIONS
             + cold_line.FUNCTIONS + ground_state.FUNCTIONS + cold_sweep.FUNCTIONS + skew_decimal.FRONT_FUNCTIONS
             + cold_decimal.FUNCTIONS)


def source(options: dict) -> str:
    constants = (f"\n{plane_dimers.constants()}WARM_BETA_J = {WARM_BETA_J!r}\nFACE_GROUP_UNITS = {FACE_GROUP_UNITS!r}\n"
                 f"TRUSTED_BETA_J = {TRUSTED_BETA_J!r}\nTRUSTED_DISTINCT_BETA_J = {TRUSTED_DISTINCT_BETA_J!r}\n"
                 + skew_elimination.constants() + cold_line.constants() + ground_state.constants()
                 + cold_sweep.constants() + skew_decimal.constants() + cold_decimal.constants())
    return render(IMPORTS + "import decimal\nimport math\n" + constants, FUNCTIONS)


def applies(view) -> str | None:
    """None when the family is planar with zero fields and the reader gives an embedding."""
    if view.max_order > 2:
        return "terms on three or more spins: not an Ising pair model"
    if view.rank_one:
        return "the couplings come as an all-to-all rank-one block, which is not planar"
    if view.has_fields:
        return "non-zero fields break the dimer mapping of the zero-field planar model"
    if view.planar is not True:
        return "the interaction graph is not planar at every size"
    if not view.has_positions:
        return "the reader gives no straight-line planar embedding"
    return None


def claims(view, options: dict) -> Claims:
    dense = options.get("solver") == "dense"
    form = options.get("form", "low_temperature")
    expansion = {
        "low_temperature": "the low-temperature expansion: a configuration is its set of cut bonds, and cuts of a plane "
                           "graph are even subgraphs of the dual graph, weighted by exp(-2 beta J_e) > 0 (no "
                           "cancellation, even for frustrated couplings)",
        "domain_walls": "the domain-wall expansion: the unsatisfied bonds form a dual subgraph that is odd exactly at "
                        "the frustrated plaquettes, weighted by exp(-2 beta |J_e|)",
        "high_temperature": "the high-temperature expansion: Z = 2^n prod cosh(beta J) times a sum over even "
                            "subgraphs weighted by tanh(beta J_e)",
    }[form]
    cost = ("a dense determinant, O(n^3)" if dense else
            "a sparse LU with a minimum-degree ordering, about n^1.5 on a planar graph; at low temperature a "
            "nested-dissection skew elimination in double-double arithmetic, also about n^1.5, keeps it exact")
    return Claims(
        tractable_class="pfaffian",
        complexity_O="O(n^3)" if dense else "O(n^1.5)",
        confidence=0.9 if form == "low_temperature" else 0.75,
        justification=(f"The interaction graph is planar (a straight-line embedding is known) and there are no fields. "
                       f"Using {expansion}, Fisher's mapping turns these subgraphs into perfect matchings of a "
                       f"decorated planar graph. A Kasteleyn orientation (odd clockwise parity on every face) makes "
                       f"the weighted matching count a Pfaffian, and log Pf = 1/2 log|det A| from {cost}."),
        cost_rank=0,
    )


register(sys.modules[__name__])
