"""The helpers every compiled reader carries (tasks/formula_reader.py): ordinary functions, rendered
into the reader's source with inspect.getsource, so what the tests call is what a program runs.
Plain math and numpy only (the sandbox allowlist).

Every expression of a formula is evaluated once on whole index columns (int64 arrays) where the
formula's own evaluation (tasks/formula.py) takes one Python int at a time; the helpers here make
the two agree: an index that does not read the loop is repeated to the loop's length, an empty
range gives empty tables, and isqrt, round and ** act entry by entry as Python's do on one number."""

import math

import numpy as np


def _nest(cols, lo, hi):
    """One more nested loop: every row of the index columns ``cols`` repeated for lo..hi (inclusive)."""
    size = len(cols[0]) if cols else 1
    lo = np.broadcast_to(np.asarray(lo, dtype=np.int64), (size,))
    hi = np.broadcast_to(np.asarray(hi, dtype=np.int64), (size,))
    counts = np.maximum(hi - lo + 1, 0)
    start = np.repeat(np.cumsum(counts) - counts, counts)
    new = np.repeat(lo, counts) + np.arange(int(counts.sum()), dtype=np.int64) - start
    return tuple(np.repeat(c, counts) for c in cols) + (new,)


def _param(params, key):
    if key not in params:
        raise ValueError(f"missing parameter {key!r}")
    return np.asarray(params[key])


def _index(x):
    x = np.asarray(x)
    if x.dtype.kind == "f":
        if not np.all(x == np.round(x)):
            raise ValueError("a variable index is not an integer")
        x = x.astype(np.int64)
    return x.astype(np.int64)


def _flat(shape, index, offset=0, count=None):
    """Flat position of the entries ``index`` (one array or number per axis) of an array of ``shape``;
    with ``count``, a (count,) array (a fixed index such as s[0] is repeated once per loop row)."""
    if len(index) != len(shape):
        raise ValueError(f"a variable has {len(index)} indices where its array has {len(shape)} axes")
    target = np.broadcast(*index).shape if count is None else (int(count),)
    flat = np.zeros(target, dtype=np.int64)
    for size, i in zip(shape, index):
        i = np.broadcast_to(_index(i), target)
        if np.any(i < 0) or np.any(i >= size):
            raise ValueError(f"a variable index lies outside the shape {shape}")
        flat = flat * size + i
    return flat + offset


def _isqrt(x):
    """math.isqrt of a number, or entry by entry of an integer array (a loop index column)."""
    if np.ndim(x) == 0:
        return math.isqrt(x.item() if isinstance(x, np.ndarray) else x)
    x = np.asarray(x)
    if x.dtype.kind not in "iu" or np.any(x < 0):
        raise ValueError("isqrt takes non-negative integers")
    r = np.floor(np.sqrt(x.astype(np.float64))).astype(np.int64)
    r = r - (r * r > x)                      # the float root may be one off either way for large x
    return r + ((r + 1) * (r + 1) <= x)


def _round(x, *digits):
    """Python's round of a number, or entry by entry of an array (round() refuses arrays)."""
    if np.ndim(x) == 0:
        return round(x.item() if isinstance(x, np.ndarray) else x, *digits)
    x = np.asarray(x)
    if not digits:
        return np.round(x)                   # half to even, as round() does; exact at 0 digits
    return np.array([round(v, *digits) for v in x.ravel().tolist()], dtype=np.float64).reshape(x.shape)


def _pow(x, y):
    """x ** y as Python computes it on numbers: an integer to a negative integer power is a float
    (numpy refuses that on integer arrays)."""
    if np.ndim(x) == 0 and np.ndim(y) == 0:
        return np.asarray(x).item() ** np.asarray(y).item()
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype.kind in "iu" and y.dtype.kind in "iu" and np.any(y < 0):
        x = x.astype(np.float64)
    return x ** y


def _values(x, size):
    return np.broadcast_to(np.asarray(x, dtype=np.float64), (size,)).astype(np.float64)


def _merge_terms(parts):
    """[(idx (m, k), w)] merged: each product sorted, a variable twice cancels (s s = 1), equal products
    added, zero weights dropped; returns [(idx, w)] one entry per order k >= 1 and the constant."""
    by_order, constant = {}, 0.0
    for idx, w in parts:
        w = np.asarray(w, dtype=np.float64)
        if len(w) == 0:                      # an empty range (lo > hi): nothing to add
            continue
        idx = np.sort(np.asarray(idx, dtype=np.int64).reshape(len(w), -1), axis=1)
        twice = np.zeros(len(w), dtype=bool)
        if idx.shape[1] > 1:
            twice = np.any(idx[:, 1:] == idx[:, :-1], axis=1)
        rows = [(idx[~twice], w[~twice])]
        for r in np.flatnonzero(twice):
            vals, counts = np.unique(idx[r], return_counts=True)
            odd = vals[counts % 2 == 1]
            rows.append((odd.reshape(1, -1), w[r:r + 1]))
        for i, ww in rows:
            if i.shape[1] == 0:
                constant += float(ww.sum())
            elif len(ww):
                by_order.setdefault(i.shape[1], []).append((i, ww))
    terms = []
    for k in sorted(by_order):
        idx = np.concatenate([i for i, _ in by_order[k]])
        w = np.concatenate([ww for _, ww in by_order[k]])
        uniq, inv = np.unique(idx, axis=0, return_inverse=True)
        summed = np.bincount(inv.ravel(), weights=w, minlength=len(uniq))
        keep = summed != 0.0
        if np.any(keep):
            terms.append((uniq[keep], summed[keep]))
    return terms, constant


def _geometry(shape, terms, n, arrays):
    """(positions, coords) inferred from the pair terms and the shape; see tasks/formula_reader.py."""
    pairs = [i for i, _ in terms if i.shape[1] == 2]
    pairs = np.concatenate(pairs) if pairs else np.zeros((0, 2), dtype=np.int64)
    positions, coords = None, None
    if len(shape) == 2:
        R, C = shape
        coords = np.stack(np.divmod(np.arange(n), C), 1).astype(np.int64)
        r, c = np.divmod(pairs, C)
        dr, dc = r[:, 1] - r[:, 0], c[:, 1] - c[:, 0]
        if len(pairs) and np.all(np.maximum(np.abs(dr), np.abs(dc)) <= 1):
            positions = np.stack([coords[:, 1], -coords[:, 0]], 1).astype(np.float64)
    elif len(shape) == 1:
        for a in arrays:
            if a.dtype.kind == "f" and a.shape == (n, 2) and np.all(np.isfinite(a)):
                return a.astype(np.float64), None
        if len(pairs):
            d = np.abs(pairs[:, 1] - pairs[:, 0])
            site = np.arange(n)
            if np.all(d == 1):
                positions = np.stack([site, np.zeros(n)], 1).astype(np.float64)
            elif n >= 3 and np.all((d == 1) | (d == n - 1)):
                angle = 2 * np.pi * site / n
                positions = np.stack([np.cos(angle), np.sin(angle)], 1)
    return positions, coords


FUNCTIONS = (_nest, _param, _index, _flat, _isqrt, _round, _pow, _values, _merge_terms, _geometry)
IMPORTS = """\
import math

import numpy as np
"""
