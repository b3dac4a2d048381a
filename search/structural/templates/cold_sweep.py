"""The planar Pfaffian's last cold resort on narrow models: the exact transfer-matrix sweep in logs.
Not a template: helper functions that the planar_pfaffian template renders into its programs.

Why. A frustrated planar model whose couplings have no common unit (a Gaussian glass) has no
ground-state line, and colder than beta|J| ~ 20 .. 25 the double-double elimination no longer
vouches for its value, so the Pfaffian route raises. Where the model is narrow (a sweep frontier
of W spins with n 2^W at most COLD_SWEEP_MAX_WORK: a 16 x 16 grid, a 32 x 32 brick wall) the
row transfer of ``row_transfer`` on log weights is exact at every beta, at a cost n 2^W that this
cap bounds: the program's claimed growth is unchanged (the fallback is bounded by a constant), and a
wider model still raises, naming both limits. Measured (numpy, one thread): an 8 x 8 Gaussian glass
at beta|J| = 1179 in 0.05 s, 16 x 16 in about 2 s, a 32 x 32 brick-wall (honeycomb) Gaussian glass
(W = 17, n 2^W = 2^27) at beta|J| = 580 in 4.1 s; the ladder gives a call 20 s.
"""

from __future__ import annotations

import numpy as np

from search.structural.templates import row_transfer, small_arrays
from search.structural.templates.row_transfer import _frontier_width, _sweep, _sweep_order

#: the most work the cold fallback takes on: spins x 2^(frontier width) (2^27: about 4 s here)
COLD_SWEEP_MAX_WORK = 1 << 27


def _narrow_sweep_log_z(edges, J, positions, beta, n, refused):
    """Natural log Z of the zero-field pair model (``edges`` (m, 2), couplings ``J``, no repeats) by
    the log-domain sweep along the narrowest order; ``refused``: the ArithmeticError of the cold
    route, raised again (with the sweep's width) when n 2^width is beyond COLD_SWEEP_MAX_WORK."""
    order = _sweep_order(n, edges, "min_frontier", positions)
    width = _frontier_width(n, edges, order)
    if n * 2.0 ** width > COLD_SWEEP_MAX_WORK:
        raise ArithmeticError(f"{refused}; the exact sweep's frontier is {width} spins ({n} spins x 2^{width} "
                              f"states > 2^{COLD_SWEEP_MAX_WORK.bit_length() - 1})") from None
    return _sweep(edges, J, np.zeros(n), order, beta, n, True)


FUNCTIONS = (row_transfer._frontier_width, row_transfer._lattice_side, _sweep_order, *small_arrays.FUNCTIONS,
             _sweep, _narrow_sweep_log_z)


def constants() -> str:
    """The module's constants as program text."""
    return (f"COLD_SWEEP_MAX_WORK = {COLD_SWEEP_MAX_WORK!r}\nMAX_FRONTIER = {row_transfer.MAX_FRONTIER!r}\n"
            + small_arrays.CONSTANTS)
