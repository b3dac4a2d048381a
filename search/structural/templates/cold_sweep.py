"""The planar Pfaffian's last cold resort on narrow models: the exact transfer-matrix sweep in logs.
Not a template: helper functions that the planar_pfaffian template renders into its programs.

Why. A frustrated planar model whose couplings have no common unit (a Gaussian glass) has no
ground-state line, and colder than beta|J| ~ 20 .. 25 the double-double elimination no longer
vouches for its value, so the Pfaffian route raises. Where the model is narrow (a sweep frontier
of at most COLD_SWEEP_MAX_WIDTH spins: up to a 16 x 16 grid) the row transfer of
``row_transfer`` on log weights is exact at every beta, at a cost 2^W per spin that this width
caps: the program's claimed growth is unchanged (the fallback is bounded by a constant), and a
wider model still raises, naming both limits. Measured: an 8 x 8 Gaussian glass at beta|J| = 1179
in 0.05 s, 16 x 16 in about 2 s.
"""

from __future__ import annotations

import numpy as np

from search.structural.templates import row_transfer, small_arrays
from search.structural.templates.row_transfer import _frontier_width, _sweep, _sweep_order

#: the widest frontier (spins) the cold fallback sweeps: 2^16 states per step
COLD_SWEEP_MAX_WIDTH = 16


def _narrow_sweep_log_z(edges, J, positions, beta, n, refused):
    """Natural log Z of the zero-field pair model (``edges`` (m, 2), couplings ``J``, no repeats) by
    the log-domain sweep along the narrowest order; ``refused``: the ArithmeticError of the cold
    route, raised again (with the sweep's width) when the frontier is wider than COLD_SWEEP_MAX_WIDTH."""
    order = _sweep_order(n, edges, "min_frontier", positions)
    width = _frontier_width(n, edges, order)
    if width > COLD_SWEEP_MAX_WIDTH:
        raise ArithmeticError(f"{refused}; the exact sweep's frontier is {width} spins "
                              f"(> {COLD_SWEEP_MAX_WIDTH})") from None
    return _sweep(edges, J, np.zeros(n), order, beta, n, True)


FUNCTIONS = (row_transfer._frontier_width, row_transfer._lattice_side, _sweep_order, *small_arrays.FUNCTIONS,
             _sweep, _narrow_sweep_log_z)


def constants() -> str:
    """The module's constants as program text."""
    return (f"COLD_SWEEP_MAX_WIDTH = {COLD_SWEEP_MAX_WIDTH!r}\nMAX_FRONTIER = {row_transfer.MAX_FRONTIER!r}\n"
            + small_arrays.CONSTANTS)
