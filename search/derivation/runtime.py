"""The model a derivation transforms, as plain numpy: shared helpers that are rendered into every
derivation program (their source, via inspect.getsource) and called by the engine in-process.

A runtime model is a dict::

    {"n": spins, "beta": the instance's inverse temperature (energies need it),
     "terms": [(idx (m, k) int64 sorted rows, K (m,))] one entry per order k >= 1, merged,
     "rank_one": [(u (n,), A)], "log_shift": float, "energy_shift": float,
     "positions": (n, 2) or None, "coords": (n, 2) array coordinates of the spins or None,
     "statistic": "log_z" | "mean_energy"}

Weights are dimensionless (K = beta * w), so every step is defined at beta = 0 too:

    log Z = log_shift + log sum_s exp(sum_k K_k prod_{i in S_k} s_i + sum_blocks (A/2)[(u.s)^2 - |u|^2]).

A step keeps that total fixed: what it moves out of the model goes into ``log_shift``, so "log Z
before = log Z after + change" is the change of ``log_shift``. For a disorder average whose quantity
is a mean energy (``statistic`` "mean_energy"), only steps that are bijections of the variables are
taken, and the quantity is energy_shift - <sum K prod s> / beta.
"""

from __future__ import annotations

import numpy as np

IMPORTS = """\
import math

import numpy as np
"""


def _rt_start(read):
    """The runtime model of a compiled reader's dict (kind "z"); other kinds pass through unchanged
    (their first step turns them into a model)."""
    if read.get("kind") != "z":
        return read
    beta = float(read["beta"])
    terms = [(np.asarray(i, dtype=np.int64), beta * np.asarray(w, dtype=np.float64)) for i, w in read["terms"]]
    blocks = [(np.asarray(u, dtype=np.float64), beta * float(a)) for u, a in read["rank_one"]]
    return {"n": int(read["n"]), "beta": beta, "terms": terms, "rank_one": blocks,
            "log_shift": beta * float(read["constant"]), "energy_shift": -float(read["constant"]),
            "positions": read.get("positions"), "coords": read.get("coords"), "statistic": "log_z"}


def _rt_merge(parts):
    """[(idx (m, k), K)] with equal sorted products added and zero weights dropped, one entry per order."""
    by_order = {}
    for idx, w in parts:
        idx = np.asarray(idx, dtype=np.int64)
        if len(w) and idx.ndim == 2 and idx.shape[1]:
            by_order.setdefault(idx.shape[1], []).append((np.sort(idx, axis=1), np.asarray(w, dtype=np.float64)))
    out = []
    for k in sorted(by_order):
        idx = np.concatenate([i for i, _ in by_order[k]])
        w = np.concatenate([x for _, x in by_order[k]])
        uniq, inv = np.unique(idx, axis=0, return_inverse=True)
        total = np.bincount(inv.ravel(), weights=w, minlength=len(uniq))
        keep = total != 0.0
        if np.any(keep):
            out.append((uniq[keep], total[keep]))
    return out


def _rt_pairs(model):
    """(edges (m, 2), K (m,), H (n,)) of a model whose terms have at most two spins."""
    n = model["n"]
    edges, K, H = np.zeros((0, 2), dtype=np.int64), np.zeros(0), np.zeros(n)
    for idx, w in model["terms"]:
        if idx.shape[1] == 1:
            np.add.at(H, idx[:, 0], w)
        elif idx.shape[1] == 2:
            edges, K = idx, w
        else:
            raise ValueError(f"the model has terms on {idx.shape[1]} spins; this method takes pairs and fields")
    return edges, K, H


def _rt_neighbour_pairs(model):
    """(a, b) arrays of the distinct pairs of spins that share a term (a < b)."""
    n = model["n"]
    keys = [np.zeros(0, dtype=np.int64)]
    for idx, _ in model["terms"]:
        k = idx.shape[1]
        for x in range(k):
            for y in range(x + 1, k):
                lo, hi = np.minimum(idx[:, x], idx[:, y]), np.maximum(idx[:, x], idx[:, y])
                keys.append(lo * n + hi)
    key = np.unique(np.concatenate(keys))
    return key // n, key % n


def _rt_compact(model, keep):
    """The model on the spins where ``keep`` (bool (n,)) is true, renumbered in order; every term must
    lie on kept spins. The drawing and the array coordinates of the kept spins stay."""
    n = model["n"]
    keep = np.asarray(keep, dtype=bool)
    new = np.full(n, -1, dtype=np.int64)
    new[keep] = np.arange(int(keep.sum()))
    terms = []
    for idx, w in model["terms"]:
        moved = new[idx]
        if np.any(moved < 0):
            raise ValueError("a term lies on a spin that was removed")
        terms.append((moved, w))
    blocks = [(u[keep], a) for u, a in model["rank_one"]]
    positions = None if model["positions"] is None else np.asarray(model["positions"])[keep]
    coords = None if model["coords"] is None else np.asarray(model["coords"])[keep]
    return {**model, "n": int(keep.sum()), "terms": _rt_merge(terms), "rank_one": blocks,
            "positions": positions, "coords": coords}


def _rt_grid(model):
    """{rows, cols, wrap_rows, wrap_cols} when the spins fill a rows x cols sub-grid of their array in
    row-major order (``coords``; the rows and columns need not be consecutive) and every pair term joins
    nearest neighbours modulo it; None otherwise. Wrap: some pair crosses that grid's boundary."""
    coords, n = model.get("coords"), model["n"]
    if coords is None or n == 0:
        return None
    rows, r = np.unique(coords[:, 0], return_inverse=True)
    cols, c = np.unique(coords[:, 1], return_inverse=True)
    if len(rows) * len(cols) != n or not np.array_equal(r.ravel() * len(cols) + c.ravel(), np.arange(n)):
        return None
    return _rt_grid_of(model["terms"], len(rows), len(cols))


def _rt_grid_of(terms, rows, cols):
    """The grid dict when every pair term joins nearest neighbours of a rows x cols array (mod the shape)."""
    pairs = [i for i, _ in terms if i.shape[1] == 2]
    if not pairs or any(i.shape[1] > 2 for i, _ in terms):
        return None
    pairs = np.concatenate(pairs)
    r, c = np.divmod(pairs, cols)
    dr, dc = r[:, 1] - r[:, 0], c[:, 1] - c[:, 0]
    mr = (dr + rows // 2) % rows - rows // 2 if rows > 2 else dr
    mc = (dc + cols // 2) % cols - cols // 2 if cols > 2 else dc
    if not np.all(np.abs(mr) + np.abs(mc) == 1):
        return None
    return {"rows": int(rows), "cols": int(cols), "wrap_rows": bool(np.any(np.abs(dr) > 1)),
            "wrap_cols": bool(np.any(np.abs(dc) > 1))}


def _rt_torus_bonds(model, options=None):
    """(R, C, Kh, Kv) of a zero-field nearest-neighbour R x C torus (both sides >= 3): Kh[r * C + c] the
    coupling of (r, c)-(r, c+1), Kv[r * C + c] of (r, c)-(r+1, c), columns and rows modulo C and R;
    ValueError naming what the model is not. (``options`` is unused: the derivation view tries this
    on every state as it tries a solver's entry.)"""
    grid, n = _rt_grid(model), model["n"]
    if model["rank_one"] or grid is None or not (grid["wrap_rows"] and grid["wrap_cols"]):
        raise ValueError("not a nearest-neighbour torus (a grid wrapping both ways)")
    R, C = grid["rows"], grid["cols"]
    if R < 3 or C < 3 or R * C != n:
        raise ValueError("not a torus with both sides >= 3")
    edges, K, H = _rt_pairs(model)
    if np.any(H != 0.0):
        raise ValueError("the fields are not zero")
    site = np.arange(n)
    r, c = np.divmod(site, C)
    right = np.sort(np.stack([site, r * C + (c + 1) % C], 1), axis=1)
    down = np.sort(np.stack([site, ((r + 1) % R) * C + c], 1), axis=1)
    key = edges[:, 0] * n + edges[:, 1]
    order = np.argsort(key)
    where_h = np.searchsorted(key[order], right[:, 0] * n + right[:, 1])
    where_v = np.searchsorted(key[order], down[:, 0] * n + down[:, 1])
    if len(edges) != 2 * n or np.any(where_h >= len(key)) or np.any(where_v >= len(key)) \
            or np.any(key[order][where_h] != right[:, 0] * n + right[:, 1]) \
            or np.any(key[order][where_v] != down[:, 0] * n + down[:, 1]):
        raise ValueError("the couplings are not exactly the nearest-neighbour pairs of the torus")
    return R, C, K[order][where_h], K[order][where_v]


FUNCTIONS = (_rt_start, _rt_merge, _rt_pairs, _rt_neighbour_pairs, _rt_compact, _rt_grid, _rt_grid_of, _rt_torus_bonds)
