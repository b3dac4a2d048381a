"""The planar Pfaffian template's double-double skew elimination (rendered into P04's programs),
against a dense determinant and against itself in another elimination order."""

import numpy as np
import pytest
from scipy.sparse import coo_matrix

from search.structural.templates import double_double, planar_pfaffian, skew_elimination
from search.structural.templates.skew_elimination import skew_log_abs_pfaffian


def _random_skew(rng, n, degree):
    """A sparse skew matrix on a random geometric graph (node positions returned), entries of
    either sign spanning six orders of magnitude, plus a perfect matching so it is nonsingular."""
    xy = rng.uniform(size=(n, 2))
    degree = min(degree, n - 1)
    d = np.linalg.norm(xy[:, None] - xy[None], axis=2)
    near = np.argsort(d, axis=1)[:, 1:degree + 1]
    u, v = np.repeat(np.arange(n), degree), near.ravel()
    perm = rng.permutation(n)
    half = n // 2
    u, v = np.r_[u, perm[:half]], np.r_[v, perm[half:2 * half]]
    keep = u != v
    u, v = u[keep], v[keep]
    w = rng.choice([-1.0, 1.0], len(u)) * 10.0 ** rng.uniform(-6.0, 0.0, len(u))
    A = coo_matrix((np.r_[w, -w], (np.r_[u, v], np.r_[v, u])), shape=(n, n)).tocsr()
    return A, xy


@pytest.mark.parametrize("rows,leaf", [(48, 64), (5, 8)])
def test_skew_elimination_matches_the_dense_determinant(monkeypatch, rows, leaf):
    """log |Pf A| = 1/2 log |det A|; small blocks and leaves force the blocked update's mirror, the
    gathered (sparse) update, delayed pivots and many fronts; groups of up to 6 nodes kept together.
    Every front goes through the one-front path here (the stacked one: test_template_skew_stacked)."""
    monkeypatch.setattr(double_double, "ROWS", rows)
    monkeypatch.setattr(skew_elimination, "STACK_MAX", 0)
    monkeypatch.setattr(skew_elimination, "LEAF", leaf)
    rng = np.random.default_rng(3)
    for n in (2, 10, 60, 240):
        for _ in range(3):
            A, xy = _random_skew(rng, n, int(rng.integers(2, 6)))
            group = np.repeat(np.arange(n), rng.integers(1, 7, n))[:n]
            ref = 0.5 * np.linalg.slogdet(A.toarray())[1]
            for g in (None, group):
                got = skew_log_abs_pfaffian(A, xy, g)
                assert abs(got - ref) <= 1e-9 * max(1.0, abs(ref)), (n, got, ref)


def test_skew_elimination_of_a_singular_matrix_is_minus_infinity():
    rng = np.random.default_rng(4)
    A, xy = _random_skew(rng, 41, 3)                     # odd order: Pf = 0
    assert skew_log_abs_pfaffian(A, xy) == -np.inf


def test_cold_route_does_not_depend_on_the_elimination_order(monkeypatch):
    """32 x 32 +-J at beta |J| = 9 (the ladder's cold draw): faces kept together (4 gadgets per
    group) and single gadgets give different fronts and delayed pivots but the same log Z."""
    rng = np.random.default_rng(5)
    L = 32
    n = L * L
    r, c = np.divmod(np.arange(n), L)
    right, down = (r * L + c)[c < L - 1], (r * L + c)[r < L - 1]
    edges = np.concatenate([np.stack([right, right + 1], 1), np.stack([down, down + L], 1)])
    positions = np.stack([c, -r], 1).astype(float)
    J = rng.choice([-1.0, 1.0], len(edges))
    values = []
    for units in (4, 1):
        monkeypatch.setattr(planar_pfaffian, "FACE_GROUP_UNITS", units)
        values.append(planar_pfaffian._method_log_z(edges, J, np.zeros(n), [], positions, 9.0, n, {}))
    assert abs(values[0] - values[1]) <= 1e-13 * abs(values[0]), values


@pytest.mark.parametrize("zeros", [0, 12])
def test_double_double_rank2_update_is_exact_to_2_to_the_minus_100(monkeypatch, zeros):
    """(H + L) - (u w^T - w u^T) against rational arithmetic, entries of mixed sign and size; some
    rows of u and w zero (the gathered path), blocks of 5 rows (the mirrored part)."""
    from fractions import Fraction

    monkeypatch.setattr(double_double, "ROWS", 5)
    rng = np.random.default_rng(6)
    m = 20

    def dd(shape):
        hi = rng.choice([-1.0, 1.0], shape) * 10.0 ** rng.uniform(-8.0, 2.0, shape)
        return hi, hi * 2.0 ** -60 * rng.uniform(-1.0, 1.0, shape)

    (uh, ul), (wh, wl) = dd(m), dd(m)
    dead = rng.choice(m, zeros, replace=False)
    uh[dead] = ul[dead] = wh[dead] = wl[dead] = 0.0
    Hh, Hl = dd((m, m))
    Hh, Hl = np.triu(Hh, 1) - np.triu(Hh, 1).T, np.triu(Hl, 1) - np.triu(Hl, 1).T   # skew, normalised
    F = np.vectorize(Fraction, otypes=[object])
    u, w, S = F(uh) + F(ul), F(wh) + F(wl), F(Hh) + F(Hl)
    exact = S - (np.outer(u, w) - np.outer(w, u))
    scale = np.abs(Hh) + np.abs(np.outer(uh, wh)) + np.abs(np.outer(wh, uh))
    H, L = Hh.copy(), Hl.copy()
    double_double._dd_rank2_update(H, L, uh, ul, wh, wl)
    err = np.abs((F(H) + F(L) - exact).astype(float))
    assert np.all(err <= 2.0 ** -100 * scale), float(np.max(err / np.maximum(scale, 1e-300)))
