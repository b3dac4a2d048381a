"""The rotation-system kernels of :mod:`evaluators.oracles.planar_embedding` (counting sorts in
numba) against the numpy formulas they replace: the same rotation and the same adjacency, ties
kept in dart order; and the Euler check with given component labels against scipy's."""

from __future__ import annotations

import numpy as np

from evaluators.oracles.planar_embedding import bfs_forest, euler_holds, faces_of, graph_csr, rotation_from_keys


def numpy_rotation(tail, key):
    order = np.lexsort((key, tail))
    counts = np.bincount(tail)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    t_sorted = tail[order]
    nxt = np.arange(len(order)) + 1
    wrap = nxt == (start[t_sorted] + counts[t_sorted])
    nxt[wrap] = start[t_sorted[wrap]]
    sigma = np.empty_like(order)
    sigma[order] = order[nxt]
    return sigma


def numpy_csr(n, a, b):
    src, dst = np.concatenate([a, b]), np.concatenate([b, a])
    eid = np.concatenate([np.arange(len(a)), np.arange(len(a))])
    order = np.argsort(src, kind="stable")
    return np.concatenate([[0], np.cumsum(np.bincount(src, minlength=n))]), dst[order], eid[order]


def test_rotation_and_adjacency_match_the_numpy_sorts():
    rng = np.random.default_rng(2)
    for trial in range(200):
        n = int(rng.integers(1, 50))
        m = int(rng.integers(1, 400))
        tail = rng.integers(0, n, m)
        tail[rng.integers(m)] = rng.integers(0, 3)  # one hub of high degree now and then
        key = rng.integers(0, 3, m) if trial % 2 else rng.random(m).round(1)  # with ties
        assert np.array_equal(rotation_from_keys(tail, key), numpy_rotation(tail, key)), trial
        a, b = rng.integers(0, n, m), rng.integers(0, n, m)
        for mine, ref in zip(graph_csr(n, a, b), numpy_csr(n, a, b)):
            assert np.array_equal(mine, ref), trial
    hub = np.zeros(100, np.int64)  # degree 100: the sort for long runs
    key = rng.integers(0, 10, 100)
    assert np.array_equal(rotation_from_keys(hub, key), numpy_rotation(hub, key))


def test_euler_with_component_labels_from_bfs_matches_scipy():
    """A square grid drawn by its positions is planar; with two rotations swapped it is not."""
    side = 6
    node = np.arange(side * side).reshape(side, side)
    edges = np.concatenate([np.stack([node[:, :-1].ravel(), node[:, 1:].ravel()], 1),
                            np.stack([node[:-1, :].ravel(), node[1:, :].ravel()], 1)])
    n, m = side * side + 3, len(edges)  # three isolated nodes
    pos = np.stack(np.divmod(np.arange(side * side), side), 1).astype(float)
    tail = np.concatenate([edges[:, 0], edges[:, 1]])
    head = np.concatenate([edges[:, 1], edges[:, 0]])
    d = pos[head] - pos[tail]
    sigma = rotation_from_keys(tail, np.arctan2(d[:, 1], d[:, 0]))
    bad = sigma.copy()
    around = np.flatnonzero(tail == node[2, 2])
    bad[around[0]], bad[around[1]] = sigma[around[1]], sigma[around[0]]
    component = bfs_forest(n, *graph_csr(n, edges[:, 0], edges[:, 1]))[3]
    for s, planar in ((sigma, True), (bad, False)):
        n_faces = faces_of(s)[2]
        assert euler_holds(n, edges[:, 0], edges[:, 1], n_faces) is planar
        assert euler_holds(n, edges[:, 0], edges[:, 1], n_faces, component) is planar
    assert m == 2 * side * (side - 1)
