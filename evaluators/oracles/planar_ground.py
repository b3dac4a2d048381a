"""The exact ground-state energy of a zero-field planar model whose couplings are integer multiples
of one unit, for the certified cold line of :mod:`evaluators.oracles.planar_cold`.

Energies in units of the coupling unit u (K_e = tau m_e sign(J_e), m_e integers): a configuration's
unsatisfied bonds form a T-join of the dual graph (T = the frustrated faces, an odd number of
negative couplings around them), so E0 / u = -sum m + 2 min_U sum_{e in U} m_e over T-joins U.

Two proofs, the cheap one first:

- a sandwich from two certified evaluations of log Z at t1 < t2 (natural log Z(t) of the couplings
  at unit t): e0 <= (log Z(t1) - log Z(t2)) / (t2 - t1), since every state's weight falls by at
  least exp(-(t2 - t1) e0); e0 >= -log Z(t2) / t2, since Z >= exp(-t e0). One lattice point
  (-sum m + 2k) between them is e0. It closes when log(degeneracy) < 2 t2.
- a minimum-weight T-join as an integer program (HiGHS through scipy.optimize.milp: y_e in {0, 1}
  on the dual edges, z_f >= 0 integer, sum_{e at f} y_e - 2 z_f = [f in T]), accepted only when
  the T-join it returns passes an integer parity check and the solver's dual bound exceeds its
  cost - 1 (integer costs: nothing cheaper exists). Checked against a networkx minimum-weight
  perfect matching of the expanded dual in tests/test_planar_cold.py.

Why not the slope alone (as this module's caller did): states 2u above a few ground states,
numerous enough, look like a ground-state line of their own wherever they outweigh the ground
states, so two temperatures rounded to the lattice can land a point too high with a bracket that
looks tight (the 16 x 16 triangular antiferromagnet read E0 = -253 off beta|J| = 6 and 12 for -255).
"""

from __future__ import annotations

import math
import time

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix, hstack

from evaluators.oracles.base import TooLarge

#: the integer program's time limit when no budget is given (seconds)
MILP_TIME_S = 30.0


def sandwich_e0(v1: float, b1: float, v2: float, b2: float, t1: float, t2: float, total: int) -> int | None:
    """e0 when the certified values log Z(t1) = v1 +- b1, log Z(t2) = v2 +- b2 (t1 < t2) leave one
    lattice point -total + 2k between the bounds of the module docstring, else None."""
    noise = 4e-16 * (abs(v1) + abs(v2))
    upper = (v1 - v2 + b1 + b2 + noise) / (t2 - t1)
    lower = -(v2 + b2 + noise) / t2
    k_lo, k_hi = math.ceil((lower + total) / 2.0), math.floor((upper + total) / 2.0)
    return 2 * k_lo - total if k_lo == k_hi else None


def min_t_join(face_a: np.ndarray, face_b: np.ndarray, n_faces: int, multiples: np.ndarray,
               negative: np.ndarray, seconds: float = MILP_TIME_S) -> int:
    """min over T-joins of sum m_e (edge e borders faces face_a[e], face_b[e]; T = faces with an odd
    number of ``negative`` edges), proved optimal; TooLarge when not proved within ``seconds``."""
    odd = (np.bincount(face_a, weights=negative, minlength=n_faces)
           + np.bincount(face_b, weights=negative, minlength=n_faces)).astype(np.int64) % 2
    if not odd.any():
        return 0
    e = np.flatnonzero(face_a != face_b)          # a bridge borders one face: never in a minimal T-join
    k = len(e)
    ends = np.r_[face_a[e], face_b[e]]
    incidence = coo_matrix((np.ones(2 * k), (ends, np.r_[np.arange(k), np.arange(k)])), shape=(n_faces, k))
    slack = coo_matrix((np.full(n_faces, -2.0), (np.arange(n_faces), np.arange(n_faces))), shape=(n_faces, n_faces))
    cost = np.r_[np.asarray(multiples, dtype=np.float64)[e], np.zeros(n_faces)]
    started = time.monotonic()
    res = milp(cost, constraints=LinearConstraint(hstack([incidence, slack]).tocsr(), odd, odd),
               integrality=np.ones(k + n_faces),
               bounds=Bounds(0.0, np.r_[np.ones(k), np.bincount(ends, minlength=n_faces) // 2]),
               options={"time_limit": max(float(seconds), 0.1), "mip_rel_gap": 0.0})
    spent = time.monotonic() - started
    if res.x is None:
        raise TooLarge(f"the exact ground-state energy (a minimum-weight T-join of the dual graph, {n_faces} faces) "
                       f"was not found in {spent:.0f} s")
    y = np.rint(res.x[:k])
    walls = int(np.asarray(multiples, dtype=np.int64)[e] @ y.astype(np.int64))
    parity = np.bincount(ends, weights=np.r_[y, y], minlength=n_faces).astype(np.int64) % 2
    if np.abs(res.x[:k] - y).max(initial=0.0) > 1e-6 or not np.array_equal(parity, odd):
        raise TooLarge("the integer program's ground state failed its parity check")
    lower = getattr(res, "mip_dual_bound", None)
    if lower is None or not lower > walls - 1 + 1e-6:
        raise TooLarge(f"the exact ground-state energy was not proved in {spent:.0f} s (a minimum-weight T-join of "
                       f"the dual graph, {n_faces} faces: between {lower} and {walls} units)")
    return walls
