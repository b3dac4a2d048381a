"""The plainest possible exact log Z: evaluate H on every configuration with numpy.

It is the independent reference that the fast methods are tested against, so it uses
nothing but ``IsingModel.energy`` and a log-sum-exp. Practical to n of about 22.
"""

from __future__ import annotations

import numpy as np

from tasks.model import IsingModel

MAX_NAIVE_N = 24


def all_spins(n: int, start: int = 0, stop: int | None = None) -> np.ndarray:
    """Configurations start..stop-1 (binary counting, bit i of the index -> spin i) as +-1, shape (k, n)."""
    stop = 2**n if stop is None else stop
    idx = np.arange(start, stop, dtype=np.int64)
    bits = (idx[:, None] >> np.arange(n, dtype=np.int64)) & 1
    return (2 * bits - 1).astype(np.int8)


def naive_log_z(model: IsingModel, chunk: int = 1 << 16) -> float:
    """log Z by full enumeration in chunks (natural log)."""
    if model.n > MAX_NAIVE_N:
        raise ValueError(f"naive enumeration is limited to n <= {MAX_NAIVE_N}, got {model.n}")
    total = 2**model.n
    parts = []
    for start in range(0, total, chunk):
        e = model.energy(all_spins(model.n, start, min(total, start + chunk)))
        x = -model.beta * e
        m = x.max()
        parts.append(m + np.log(np.exp(x - m).sum()))
    parts = np.array(parts)
    m = parts.max()
    return float(m + np.log(np.exp(parts - m).sum()))


def ground_state_energy(model: IsingModel, chunk: int = 1 << 16) -> float:
    """min_s H(s) by full enumeration (same size limit as ``naive_log_z``)."""
    if model.n > MAX_NAIVE_N:
        raise ValueError(f"naive enumeration is limited to n <= {MAX_NAIVE_N}, got {model.n}")
    total = 2**model.n
    return float(min(model.energy(all_spins(model.n, s, min(total, s + chunk))).min() for s in range(0, total, chunk)))
