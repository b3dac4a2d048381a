"""Planarity proved from a drawing's rotation system (tasks/rotation_system.py)."""

import networkx as nx
import numpy as np
from scipy.spatial import Delaunay

from tasks.rotation_system import drawing_is_planar


def delaunay(n: int, seed: int):
    pts = np.random.default_rng(seed).random((n, 2))
    edges = set()
    for a, b, c in Delaunay(pts).simplices:
        edges |= {tuple(sorted(e)) for e in ((a, b), (b, c), (a, c))}
    return pts, np.array(sorted(edges))


def test_triangulations_and_grids_are_proved_planar():
    for n, seed in ((5, 0), (50, 1), (3000, 2)):
        pts, edges = delaunay(n, seed)
        assert drawing_is_planar(n, edges, pts)
    g = nx.grid_2d_graph(7, 5)
    index = {v: i for i, v in enumerate(g)}
    edges = np.array([(index[a], index[b]) for a, b in g.edges()])
    assert drawing_is_planar(35, edges, np.array(list(g), dtype=float))


def test_crossing_drawings_and_nonplanar_graphs_are_not():
    # K5 and K3,3 drawn any way: never planar
    k5 = np.array([(i, j) for i in range(5) for j in range(i + 1, 5)])
    circle = np.stack([np.cos(np.arange(5) * 2 * np.pi / 5), np.sin(np.arange(5) * 2 * np.pi / 5)], 1)
    assert not drawing_is_planar(5, k5, circle)
    k33 = np.array([(i, j) for i in range(3) for j in range(3, 6)])
    assert not drawing_is_planar(6, k33, np.random.default_rng(0).random((6, 2)))
    # a planar graph (K4) drawn with its diagonals crossing: this rotation is not a planar one
    square = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], dtype=float)
    k4 = np.array([(0, 1), (1, 2), (2, 3), (0, 3), (0, 2), (1, 3)])
    assert not drawing_is_planar(4, k4, square)
    assert drawing_is_planar(4, k4, np.array([[0, 0], [4, 0], [2, 3], [2, 1]], dtype=float))


def test_components_and_isolated_vertices_are_counted():
    pts, edges = delaunay(30, 3)
    shifted = np.concatenate([pts, pts + 5.0, [[20.0, 20.0]]])
    both = np.concatenate([edges, edges + 30])
    assert drawing_is_planar(61, both, shifted)
    assert drawing_is_planar(3, np.zeros((0, 2), dtype=int), np.zeros((3, 2)))
