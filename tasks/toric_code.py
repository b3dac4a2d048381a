"""The toric code under independent bit flips: chains, syndromes, homology classes, the raw
sum over chains, and its mapping to the random-bond Ising model (Dennis, Kitaev, Landahl and
Preskill, J. Math. Phys. 43, 4452 (2002)).

Geometry on the L x L torus, vertex (r, c) = r*L + c, N = 2 L^2 edges (qubits):

- horizontal edge ``r*L + c`` joins (r, c) and (r, c+1 mod L);
- vertical edge ``L^2 + r*L + c`` joins (r, c) and (r+1 mod L, c).

A chain is e in {0,1}^N; its syndrome marks the vertices met by an odd number of its edges.
Its homology class (a, b): a = parity of its horizontal edges in column L-1 (those crossing
the seam between columns L-1 and 0), b = parity of its vertical edges in row L-1. A plaquette
boundary meets each seam in 0 or 2 edges, so chains with one syndrome differing by
plaquettes share (a, b); the loops along a row or a column flip a or b.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

#: chain enumeration visits 2^(L^2 + 1) chains: L = 4 is 131072 of them
ENUMERATION_MAX_L = 4


def horizontal(L: int, r, c):
    return (np.asarray(r) % L) * L + np.asarray(c) % L


def vertical(L: int, r, c):
    return L * L + (np.asarray(r) % L) * L + np.asarray(c) % L


def syndrome(L: int, chain: np.ndarray) -> np.ndarray:
    """(L, L) 0/1 array: vertices met by an odd number of the chain's edges."""
    e = np.asarray(chain, dtype=np.int64).reshape(2, L, L)
    h, v = e[0], e[1]
    # vertex (r, c) meets h(r, c), h(r, c-1), v(r, c), v(r-1, c)
    return (h + np.roll(h, 1, axis=1) + v + np.roll(v, 1, axis=0)) % 2


def homology(L: int, chain: np.ndarray) -> tuple[int, int]:
    e = np.asarray(chain, dtype=np.int64).reshape(2, L, L)
    return int(e[0][:, L - 1].sum() % 2), int(e[1][L - 1, :].sum() % 2)


def reference_chain(L: int, defects: np.ndarray, target: tuple[int, int]) -> np.ndarray:
    """A chain with the given (L, L) syndrome and homology class ``target``.

    Each defect (r, c) is joined to (0, 0) along row r to column 0, then up column 0; the
    paths' sum has the syndrome (the defects are even in number, so (0, 0) cancels). A row or
    column loop then sets the class.
    """
    e = np.zeros(2 * L * L, dtype=np.int8)
    for r, c in zip(*np.nonzero(defects)):
        e[horizontal(L, r, np.arange(c))] ^= 1
        e[vertical(L, np.arange(r), 0)] ^= 1
    a, b = homology(L, e)
    if a != target[0]:
        e[horizontal(L, 0, np.arange(L))] ^= 1
    if b != target[1]:
        e[vertical(L, np.arange(L), 0)] ^= 1
    return e


def plaquette_edges(L: int, r, c) -> np.ndarray:
    """The four edges around the plaquette whose top-left vertex is (r, c)."""
    return np.array([horizontal(L, r, c), horizontal(L, r + 1, c), vertical(L, r, c), vertical(L, r, c + 1)])


def check_params(L: int, params: dict) -> tuple[float, np.ndarray, tuple[int, int]]:
    """(p, defects (L, L) int8, (a, b)) from a parameter dictionary, or ValueError."""
    for key in ("p", "syndrome", "homology"):
        if key not in params:
            raise ValueError(f"missing parameter {key!r}")
    try:
        p = float(params["p"])
        defects = np.asarray(params["syndrome"], dtype=np.int64)
        cls = tuple(int(x) for x in params["homology"])
    except (TypeError, ValueError):
        raise ValueError("parameters: 'p' a number, 'syndrome' an L x L array of 0/1, 'homology' [a, b]") from None
    if not 0.0 < p < 0.5:
        raise ValueError(f"parameter 'p' must lie in (0, 0.5), got {p}")
    if defects.shape != (L, L) or not np.all((defects == 0) | (defects == 1)):
        raise ValueError(f"parameter 'syndrome' must be an {L} x {L} array of 0/1")
    if defects.sum() % 2:
        raise ValueError("parameter 'syndrome' has an odd number of defects: no chain on a torus has it")
    if len(cls) != 2 or any(x not in (0, 1) for x in cls):
        raise ValueError("parameter 'homology' must be [a, b] with a, b in {0, 1}")
    return p, defects.astype(np.int8), cls


def class_log_probabilities(L: int, p: float, defects: np.ndarray) -> np.ndarray:
    """(2, 2) natural log of P(a, b | syndrome) = sum over chains e with the syndrome and class
    (a, b) of p^|e| (1-p)^(N-|e|), by enumerating all 2^(L^2+1) chains with the syndrome.

    The reference of the decoding task at small L; independent of the Ising mapping.
    """
    if L > ENUMERATION_MAX_L:
        raise ValueError(f"chain enumeration is limited to L <= {ENUMERATION_MAX_L} (2^(L^2+1) chains)")
    N = 2 * L * L
    gens = [plaquette_edges(L, r, c) for r in range(L) for c in range(L)][:-1]   # L^2 - 1 independent
    gens += [horizontal(L, 0, np.arange(L)), vertical(L, np.arange(L), 0)]
    chains = reference_chain(L, defects, (0, 0))[None, :]
    for g in gens:
        flipped = chains.copy()
        flipped[:, g] ^= 1
        chains = np.concatenate([chains, flipped])
    k = chains.sum(1, dtype=np.int64)
    log_w = k * np.log(p) + (N - k) * np.log1p(-p)
    a = chains[:, horizontal(L, np.arange(L), L - 1)].sum(1) % 2
    b = chains[:, vertical(L, L - 1, np.arange(L))].sum(1) % 2
    out = np.empty((2, 2))
    for i in (0, 1):
        for j in (0, 1):
            out[i, j] = logsumexp(log_w[(a == i) & (b == j)])
    return out


def dual_bonds(L: int) -> tuple[np.ndarray, np.ndarray]:
    """(edges (N,), plaquette pairs (N, 2)): each edge of the torus with the two plaquettes it
    separates, plaquette (r, c) = r*L + c having top-left vertex (r, c).

    Horizontal edge (r, c) is the bottom of plaquette (r-1, c) and the top of (r, c); vertical
    edge (r, c) is the right side of (r, c-1) and the left side of (r, c).
    """
    r, c = np.divmod(np.arange(L * L), L)
    plaq = r * L + c
    above = ((r - 1) % L) * L + c
    left = r * L + (c - 1) % L
    edges = np.concatenate([horizontal(L, r, c), vertical(L, r, c)])
    pairs = np.concatenate([np.stack([above, plaq], 1), np.stack([left, plaq], 1)])
    return edges, pairs
