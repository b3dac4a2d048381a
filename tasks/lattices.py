"""Open-grid geometry shared by the lattice tasks: edge lists in the task cards' Jh/Jv order,
and the gauge transformation of grid parameters."""

from __future__ import annotations

import numpy as np


def open_grid_edges(rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """(horizontal, vertical) nearest-neighbour pairs of an open rows x cols grid, site r*cols + c.

    Horizontal pairs (r, c)-(r, c+1) in row-major order over (r, c < cols-1), so they match
    ``Jh.ravel()`` of a (rows, cols-1) array; vertical pairs (r, c)-(r+1, c) in row-major order over
    (r < rows-1, c), matching ``Jv.ravel()`` of a (rows-1, cols) array.
    """
    r, c = np.divmod(np.arange(rows * cols), cols)
    right = (r * cols + c)[c < cols - 1]
    down = (r * cols + c)[r < rows - 1]
    return np.stack([right, right + 1], 1), np.stack([down, down + cols], 1)


def grid_gauge(params: dict, signs, rows: int, cols: int, keys=("Jh", "Jv"), field: str | None = None) -> dict:
    """Parameters after s -> g s on an open grid: Jh[r][c] *= g[r,c] g[r,c+1], Jv[r][c] *= g[r,c] g[r+1,c],
    and the field (if named) h[r][c] *= g[r,c]."""
    g = np.asarray(signs, dtype=float).reshape(rows, cols)
    out = dict(params)
    out[keys[0]] = (np.asarray(params[keys[0]], dtype=float) * g[:, :-1] * g[:, 1:]).tolist()
    out[keys[1]] = (np.asarray(params[keys[1]], dtype=float) * g[:-1, :] * g[1:, :]).tolist()
    if field is not None:
        out[field] = (np.asarray(params[field], dtype=float) * g).tolist()
    return out
