"""The exact ground-state energy of a zero-field planar model whose couplings are integer multiples
of one unit: a minimum-weight T-join of the dual graph. With one magnitude (+-J) by pymatching's
sparse blossom (exact minimum-weight perfect matching, all weights equal so its integer weights are
exact): 10-30 ms on a 32 x 32 +-J grid, 0.8 s on 128 x 128, where the integer program took 1-22 s
on 32 x 32 (seeds 0-6) and 300 s did not prove a 64 x 64. Otherwise solved as an integer program by
HiGHS (scipy.optimize.milp) and accepted only with its proof. Not a template: helper functions that the
planar_pfaffian template renders into its programs (through ``cold_line``).

The unsatisfied bonds of a configuration form a set U of dual edges (a bond joins the two faces it
borders) that meets every frustrated face (an odd number of negative couplings around it) an odd
number of times and every other face an even number: a T-join, T the frustrated faces; conversely
every T-join is the wall set of two configurations (a global flip apart) per component. So
E0 = -sum |J| + 2 u min_U sum_{e in U} m_e (|J_e| = m_e u). The integer program: y_e in {0, 1} for
the dual edges (bridges border one face and are never needed), z_f >= 0 integer,
sum_{e at f} y_e - 2 z_f = [f in T], minimise sum m_e y_e. Accepted only when the returned y is
integral, its parity at every face is checked here in integers, and the solver's dual bound is
above (cost - 1): the costs are integers, so no T-join is cheaper.

Measured (HiGHS through scipy 1.16, one run each): 0.2 s on a 16 x 16 +-J grid, 1.0 s on 32 x 32
(E0 = -1396, as a networkx minimum-weight perfect matching of the expanded dual gives), 0.4 s on
the 32 x 32 triangular antiferromagnet (E0 = -1023), 8 s on its 64 x 64; a 64 x 64 +-J grid was not
proven optimal in 300 s (gap 1187 .. 1193 walls).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix, csc_matrix, hstack

#: the integer program's time limit (seconds); past it the ground state is not certified
GROUND_TIME_S = 5.0


def _frustrated_faces(face, negative):
    """0/1 per face of the plane graph: 1 where an odd number of negative couplings surround it.
    ``face``: the face of every dart (darts 2e and 2e + 1 are the two sides of edge e);
    ``negative``: 1.0 where J_e < 0."""
    fa, fb = face[0::2], face[1::2]
    n_faces = int(face.max()) + 1 if len(face) else 0
    return (np.bincount(fa, weights=negative, minlength=n_faces)
            + np.bincount(fb, weights=negative, minlength=n_faces)).astype(np.int64) % 2


def _matched_walls(odd, ends, k):
    """The minimum number of dual edges in a T-join (T: ``odd``), by pymatching's exact sparse
    blossom on the faces x edges incidence (``ends``: the two faces of each of the k edges, first
    ends then second ends), with its parity checked here in integers; or ArithmeticError."""
    import pymatching          # imported on first use: only a frustrated +-J model colder than the references needs it
    incidence = csc_matrix((np.ones(2 * k, dtype=np.uint8), (ends, np.r_[np.arange(k), np.arange(k)])),
                           shape=(len(odd), k))
    try:
        y = np.asarray(pymatching.Matching.from_check_matrix(incidence, weights=np.ones(k)).decode(odd.astype(np.uint8)),
                       dtype=np.int64)
    except ValueError as exc:                # no T-join: an odd number of frustrated faces in a component
        raise ArithmeticError(f"no wall set meets the frustrated faces ({exc})") from None
    if not np.array_equal(np.bincount(ends, weights=np.r_[y, y], minlength=len(odd)).astype(np.int64) % 2, odd):
        raise ArithmeticError("the matching's ground state failed its parity check")
    return int(y.sum())


def _ground_walls(face, multiples, negative):
    """min over T-joins U of sum_{e in U} m_e, proved optimal, or ArithmeticError. ``face``: the face
    of every dart (dart 2e and 2e + 1 are the two sides of edge e); ``multiples``: m_e (integers);
    ``negative``: whether J_e < 0."""
    fa, fb = face[0::2], face[1::2]
    n_faces = int(face.max()) + 1 if len(face) else 0
    odd = _frustrated_faces(face, negative)
    if not odd.any():
        return 0
    e = np.flatnonzero(fa != fb)
    k = len(e)
    ends = np.r_[fa[e], fb[e]]
    m_e = np.asarray(multiples, dtype=np.int64)[e]
    if k and np.all(m_e == m_e[0]):
        return int(m_e[0]) * _matched_walls(odd, ends, k)
    incidence = coo_matrix((np.ones(2 * k), (ends, np.r_[np.arange(k), np.arange(k)])), shape=(n_faces, k))
    slack = coo_matrix((np.full(n_faces, -2.0), (np.arange(n_faces), np.arange(n_faces))), shape=(n_faces, n_faces))
    degree = np.bincount(ends, minlength=n_faces)
    cost = np.r_[np.asarray(multiples, dtype=np.float64)[e], np.zeros(n_faces)]
    res = milp(cost, constraints=LinearConstraint(hstack([incidence, slack]).tocsr(), odd, odd),
               integrality=np.ones(k + n_faces), bounds=Bounds(0.0, np.r_[np.ones(k), degree // 2]),
               options={"time_limit": GROUND_TIME_S, "mip_rel_gap": 0.0})
    if res.x is None:
        raise ArithmeticError(f"the exact ground-state energy (a minimum-weight T-join of the dual graph) was not "
                              f"found within {GROUND_TIME_S:g} s")
    y = np.rint(res.x[:k])
    walls = int(np.asarray(multiples, dtype=np.int64)[e] @ y.astype(np.int64))
    parity = np.bincount(ends, weights=np.r_[y, y], minlength=n_faces).astype(np.int64) % 2
    lower = getattr(res, "mip_dual_bound", None)
    if np.abs(res.x[:k] - y).max(initial=0.0) > 1e-6 or not np.array_equal(parity, odd):
        raise ArithmeticError("the integer program's ground state failed its parity check")
    if lower is None or not lower > walls - 1 + 1e-6:
        raise ArithmeticError(f"the exact ground-state energy was not proven within {GROUND_TIME_S:g} s "
                              f"(minimum-weight T-join between {lower} and {walls} units)")
    return walls


FUNCTIONS = (_frustrated_faces, _matched_walls, _ground_walls)


def constants() -> str:
    """The module's constants as program text."""
    return f"GROUND_TIME_S = {GROUND_TIME_S!r}\n"
