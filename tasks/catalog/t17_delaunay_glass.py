"""T17: +-J Ising spin glass on a random planar graph, the Delaunay triangulation of random points
(StatMechBench-v1, Tier 1).

The points come with the instance (``points``, n x 2 in the unit square) together with the edge list
of their Delaunay triangulation (``edges``, computed by the sampler with scipy so that a candidate
needs no geometry library) and one coupling J[e] in {-1, +1} per edge. The triangles carry odd
numbers of negative bonds at random, so the model is frustrated; it is planar with zero field, so
one Pfaffian (Kasteleyn, Fisher) gives Z exactly. The points are a straight-line planar embedding,
handed to the model IR as ``positions``.
"""

import numpy as np
from scipy.spatial import Delaunay, QhullError

from tasks.base import Gold, Task, get_array, get_float, sample_beta
from tasks.catalog._v1_common import V1_CITATION
from tasks.formula import Derived, Formula, Param, term
from tasks.model import IsingModel


def delaunay_edges(points: np.ndarray) -> np.ndarray:
    """(m, 2) int64 edges of the Delaunay triangulation of ``points`` (n, 2): i < j, rows sorted.

    Raises ValueError when qhull cannot triangulate (fewer than three points, all collinear)."""
    try:
        simplices = Delaunay(np.asarray(points, dtype=np.float64)).simplices
    except (QhullError, ValueError) as exc:
        raise ValueError(f"the points have no Delaunay triangulation ({str(exc).splitlines()[0]})") from None
    pairs = np.concatenate([simplices[:, [0, 1]], simplices[:, [1, 2]], simplices[:, [0, 2]]])
    return np.unique(np.sort(pairs, axis=1), axis=0).astype(np.int64)


def glass_edges(params: dict, n: int) -> np.ndarray:
    """The ``edges`` parameter as an (m, 2) int64 array, checked: integer pairs of distinct spins in
    [0, n), no pair twice (in either order)."""
    if "edges" not in params:
        raise ValueError("missing parameter 'edges'")
    try:
        raw = np.asarray(params["edges"], dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("parameter 'edges' must be a list of [i, j] integer pairs") from None
    if raw.ndim != 2 or raw.shape[1] != 2 or len(raw) == 0:
        raise ValueError(f"parameter 'edges' must be a non-empty list of [i, j] pairs, got shape {raw.shape}")
    if not np.all(np.isfinite(raw)) or not np.all(raw == np.round(raw)):
        raise ValueError("parameter 'edges' must hold integers")
    edges = raw.astype(np.int64)
    if np.any(edges < 0) or np.any(edges >= n):
        raise ValueError(f"parameter 'edges': every index must be a spin in [0, {n})")
    if np.any(edges[:, 0] == edges[:, 1]):
        raise ValueError("parameter 'edges' has a self loop [i, i]")
    lo, hi = edges.min(axis=1), edges.max(axis=1)
    if len(np.unique(lo * n + hi)) != len(edges):
        raise ValueError("parameter 'edges' lists some pair twice")
    return edges


def check_straight_line_planar(points: np.ndarray, edges: np.ndarray) -> None:
    """ValueError unless every edge is an edge of the points' Delaunay triangulation.

    A Delaunay triangulation is drawn by straight segments that never cross, so its subgraphs are
    planar with ``points`` as the embedding; this costs one qhull call (milliseconds at n = 2048),
    where a pairwise segment-crossing test would cost O(m^2)."""
    n = len(points)
    tri = delaunay_edges(points)
    lo, hi = edges.min(axis=1), edges.max(axis=1)
    foreign = ~np.isin(lo * n + hi, tri[:, 0] * n + tri[:, 1])
    if np.any(foreign):
        i, j = (int(v) for v in (lo[foreign][0], hi[foreign][0]))
        raise ValueError(f"parameter 'edges': [{i}, {j}] is not an edge of the Delaunay triangulation of "
                         f"'points' ({int(foreign.sum())} such pairs), so the straight-line drawing may cross")


class DelaunayGlass(Task):
    id = "T17"
    title = "+-J Ising spin glass on a random planar graph (Delaunay triangulation)"
    tier = 1
    citation = V1_CITATION
    canonical = """\
You are given a **+-J Ising spin glass on a random planar graph**: n points
p_i = points[i] = (x_i, y_i) drawn uniformly in the unit square (n >= 3), and the m edges
of their Delaunay triangulation, edges[e] = [i_e, j_e] with i_e < j_e (sorted). Drawn as
straight segments between the points, no two edges cross. Each edge carries a random
coupling J[e] in {-1,+1}; zero field; n spins s_i in {-1,+1}.
H(s) = - sum_{e=0}^{m-1} J[e] * s_{i_e} * s_{j_e}.
Implement
def Z_efficient(params: dict, n: int) -> float:
    # params has "beta" (float), "points" (n x 2 list of floats), "edges" (m x 2 list of
    # ints), "J" (list of m floats, each -1 or +1)
computing Z = sum_s exp(-beta * H(s)) in time polynomial in n (NOT exponential)."""
    paraphrased = """\
n points in the unit square, points = [[x_0, y_0], ..., [x_{n-1}, y_{n-1}]] (n >= 3), and a
list edges = [[i_0, j_0], ..., [i_{m-1}, j_{m-1}]] of m index pairs with i_e < j_e: the
segments between the paired points cut the convex hull of the points into triangles whose
circumscribed circles contain no other point, and no two segments cross. Pair e carries a
weight J[e] in {-1,+1}. With n binary variables x_0, ..., x_{n-1} in {-1,+1}, compute
Z(beta, points, edges, J, n) = sum over all 2^n assignments x of
exp( beta * sum_{e=0}^{m-1} J[e] * x_{i_e} * x_{j_e} )
in time polynomial in n."""
    hint = "The interaction graph is planar and there is no field."
    # Planar graphs have separators of O(sqrt n) vertices (Lipton-Tarjan 1979), so a nested-dissection
    # elimination of the Kasteleyn matrix costs O(n^1.5) (Lipton-Rose-Tarjan 1979); the textbook dense
    # Pfaffian is O(n^3). The oracle and the structural proposer's program eliminate sparsely, as for T14.
    gold = Gold("pfaffian", "O(n^1.5)")
    probe_sizes = (8, 12, 16)
    #: the planar oracle takes 5-70 ms here (Delaunay graphs are sparse, m ~ 3n); the family analysis
    #: (tasks/structure.py) proves planarity with networkx only up to 2048 spins, and the structural
    #: proposer's Pfaffian plan needs planarity established at every size, so the ladder stops there
    ladder_sizes = (64, 256, 1024, 2048)

    formula = Formula(
        shape=("n",),
        params=(Param("beta", "a real number"), Param("points", "an n x 2 list of points [x, y] in the unit square"),
                Param("edges", "a list of m index pairs [a, b] with a < b; drawn as straight segments between the "
                               "corresponding $points, no two pairs cross"),
                Param("J", "a list of m values in {-1, +1}")),
        terms=(term("J[k] * s[edges[k][0]] * s[edges[k][1]]", ("k", "0", "m - 1")),),
        derived=(Derived("m", "len(edges)"),),
        size_note="n >= 3; m is the number of pairs in $edges",
    )

    def check_size(self, n):
        if n < 3:
            raise ValueError(f"{self.id}: n must be at least 3 (a triangulation needs three points), got {n}")

    def sample_params(self, rng, n):
        self.check_size(n)
        points = rng.random((n, 2))
        edges = delaunay_edges(points)
        return {
            "beta": sample_beta(rng),
            "points": points.tolist(),
            "edges": edges.tolist(),
            "J": rng.choice([-1.0, 1.0], size=len(edges)).tolist(),
        }

    def gauge(self, params, signs):
        g = np.asarray(signs, dtype=float)
        e = np.asarray(params["edges"], dtype=np.int64).reshape(-1, 2)
        return {**params, "J": (np.asarray(params["J"], dtype=float) * g[e[:, 0]] * g[e[:, 1]]).tolist()}

    def to_model(self, params, n):
        self.check_size(n)
        beta = get_float(params, "beta")
        points = get_array(params, "points", (n, 2))
        edges = glass_edges(params, n)
        J = get_array(params, "J", (len(edges),), pm_one=True)
        check_straight_line_planar(points, edges)
        return IsingModel.from_arrays(n, beta, edges, J, positions=points)


TASK = DelaunayGlass()
