"""The dissection's sort (counting sort on coordinate ranks) against numpy's stable sort of the
coordinates themselves: the same order, ties included, on both of its branches."""

from __future__ import annotations

import numpy as np

from evaluators.oracles.linalg.nested_dissection import coordinate_ranks, stable_order


def test_stable_order_is_numpys_stable_argsort_of_the_coordinates():
    rng = np.random.default_rng(4)
    for trial in range(200):
        N = int(rng.integers(1, 400))
        # few distinct values (many ties, the counting branch) or spread ones (the mergesort branch)
        distinct = int(rng.choice([1, 3, 20, 10 * N]))
        coords = rng.integers(0, distinct, (N, 2)) * 0.5 - rng.choice([0.0, 1e9])
        ranks = coordinate_ranks(coords)
        seg = rng.permutation(N)[: int(rng.integers(0, N + 1))].astype(np.int64)
        for axis in (0, 1):
            expected = seg[np.argsort(coords[seg, axis], kind="stable")]
            assert np.array_equal(stable_order(seg, ranks[:, axis]), expected), (trial, axis)


def test_ranks_keep_the_order_and_ties_of_the_coordinates():
    coords = np.array([[0.5, -1.0], [0.25, 2.0], [0.5, 2.0], [-3.0, -1.0]])
    assert coordinate_ranks(coords).tolist() == [[2, 0], [1, 1], [2, 1], [0, 0]]
