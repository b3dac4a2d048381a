"""The toric code under depolarizing noise: syndromes, classes, the raw sum over error pairs by
enumeration, and its effective Hamiltonian, two Ising layers coupled by four-spin terms (Bombin,
Andrist, Ohzeki, Katzgraber and Martin-Delgado, Phys. Rev. X 2, 021004 (2012); threshold 18.9(3)%).

Geometry as tasks/toric_code.py: qubits on the N = 2 L^2 edges of the L x L torus, horizontal edge
``r*L + c`` joining (r, c) and (r, c+1 mod L), vertical edge ``L^2 + r*L + c`` joining (r, c) and (r+1 mod
L, c). An error is a pair (x, z) of edge sets: a qubit carries X (x = 1, z = 0), Z (0, 1) or Y (1, 1), each
with probability p/3, nothing with 1 - p. x is seen at the vertices (tasks/toric_code.syndrome), z at the
plaquettes, plaquette (r, c) holding edges h(r, c), h(r+1, c), v(r, c), v(r, c+1). Classes: (a, b) of x as
tasks/toric_code.homology; (a', b') of z the parities of z on the row-0 horizontal edges and on the
column-0 vertical edges (primal cycles: a star meets each in 0 or 2 edges).

z maps to a chain on the dual torus (dual vertex (r, c) = plaquette (r, c)): primal v(r, c + 1) is dual
h'(r, c), primal h(r + 1, c) is dual v'(r, c); its dual syndrome is the plaquette syndrome and its dual
class (a'', b'') = (b', a'), so tasks/toric_code.reference_chain serves both halves.

The effective model: the errors of one class are (x1 + boundaries of plaquette sets, z1 + stars of vertex
sets). With sigma_p = +-1 on plaquettes and tau_v = +-1 on vertices, (-1)^x_e = eta_e sigma sigma' (the two
plaquettes at e) and (-1)^z_e = zeta_e tau tau' (the two ends of e), and the weight of a qubit is
log w = A + K (eta sigma sigma' + zeta tau tau' + eta zeta sigma sigma' tau tau') with
K = (log(1 - p) - log(p / 3)) / 4, A = (log(1 - p) + 3 log(p / 3)) / 4. Each error pair arises from 4 spin
configurations, so P(class, S) = (1/4) exp(N A) sum_{sigma, tau} exp(K sum_e (...)).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from tasks import toric_code as tc
from tasks.model import IsingModel

#: the raw sum enumerates 2^(L^2 - 1) x 2^(L^2 - 1) error pairs per class: L = 3 is 65536 of them
ENUMERATION_MAX_L = 3
P_THRESHOLD = 0.189          # Bombin et al. 2012, Monte Carlo: 18.9(3)%


def plaquette_syndrome(L: int, z: np.ndarray) -> np.ndarray:
    """(L, L) 0/1: plaquettes holding an odd number of the edges of z."""
    e = np.asarray(z, dtype=np.int64).reshape(2, L, L)
    h, v = e[0], e[1]
    return (h + np.roll(h, -1, axis=0) + v + np.roll(v, -1, axis=1)) % 2


def z_class(L: int, z: np.ndarray) -> tuple[int, int]:
    e = np.asarray(z, dtype=np.int64).reshape(2, L, L)
    return int(e[0][0, :].sum() % 2), int(e[1][:, 0].sum() % 2)


def to_dual(L: int, z: np.ndarray) -> np.ndarray:
    """z on primal edges as a chain on the dual torus (module docstring)."""
    e = np.asarray(z, dtype=np.int8).reshape(2, L, L)
    return np.stack([np.roll(e[1], -1, axis=1), np.roll(e[0], -1, axis=0)]).reshape(-1)


def from_dual(L: int, d: np.ndarray) -> np.ndarray:
    e = np.asarray(d, dtype=np.int8).reshape(2, L, L)
    return np.stack([np.roll(e[1], 1, axis=0), np.roll(e[0], 1, axis=1)]).reshape(-1)


def reference_pair(L: int, sx: np.ndarray, sz: np.ndarray, cls) -> tuple[np.ndarray, np.ndarray]:
    """(x1, z1): an error pair with the syndromes and the class (a, b, a', b')."""
    x1 = tc.reference_chain(L, sx, (cls[0], cls[1]))
    z1 = from_dual(L, tc.reference_chain(L, sz, (cls[3], cls[2])))
    return x1, z1


def check_params(L: int, params: dict):
    """(p, sx, sz, cls) from a parameter dictionary, or ValueError."""
    for key in ("p", "syndrome_x", "syndrome_z", "cls"):
        if key not in params:
            raise ValueError(f"missing parameter {key!r}")
    try:
        p = float(params["p"])
        sx = np.asarray(params["syndrome_x"], dtype=np.int64)
        sz = np.asarray(params["syndrome_z"], dtype=np.int64)
        cls = tuple(int(v) for v in params["cls"])
    except (TypeError, ValueError):
        raise ValueError("parameters: 'p' a number, 'syndrome_x' and 'syndrome_z' L x L arrays of 0/1, "
                         "'cls' four bits") from None
    if not 0.0 < p < 0.5:
        raise ValueError(f"parameter 'p' must lie in (0, 0.5), got {p}")
    for key, s in (("syndrome_x", sx), ("syndrome_z", sz)):
        if s.shape != (L, L) or not np.all((s == 0) | (s == 1)):
            raise ValueError(f"parameter {key!r} must be an {L} x {L} array of 0/1")
        if s.sum() % 2:
            raise ValueError(f"parameter {key!r} has an odd number of defects: no error on a torus has it")
    if len(cls) != 4 or any(v not in (0, 1) for v in cls):
        raise ValueError("parameter 'cls' must be [a, b, a', b'] with bits")
    return p, sx.astype(np.int8), sz.astype(np.int8), cls


def sample_error(rng: np.random.Generator, L: int, p: float) -> tuple[np.ndarray, np.ndarray]:
    """(x, z) of one depolarizing error: each qubit X, Y or Z with probability p/3 each."""
    N = 2 * L * L
    kind = np.where(rng.random(N) < p, rng.integers(1, 4, size=N), 0)      # 1 X, 2 Y, 3 Z
    return ((kind == 1) | (kind == 2)).astype(np.int8), ((kind == 2) | (kind == 3)).astype(np.int8)


def _coset(L: int, start: np.ndarray, gens: list[np.ndarray]) -> np.ndarray:
    chains = start[None, :].astype(np.int8)
    for g in gens:
        flipped = chains.copy()
        flipped[:, g] ^= 1
        chains = np.concatenate([chains, flipped])
    return chains


def class_log_probability(L: int, p: float, sx, sz, cls) -> float:
    """log P(class, S) by enumerating every error pair of the class (independent of the mapping)."""
    if L > ENUMERATION_MAX_L:
        raise ValueError(f"error-pair enumeration is limited to L <= {ENUMERATION_MAX_L}")
    N = 2 * L * L
    x1, z1 = reference_pair(L, sx, sz, cls)
    plaquettes = [tc.plaquette_edges(L, r, c) for r in range(L) for c in range(L)][:-1]
    stars = [np.array([tc.horizontal(L, r, c), tc.horizontal(L, r, c - 1), tc.vertical(L, r, c),
                       tc.vertical(L, r - 1, c)]) for r in range(L) for c in range(L)][:-1]
    xs = _coset(L, x1, plaquettes).astype(np.int64)
    zs = _coset(L, z1, stars).astype(np.int64)
    assert all(np.array_equal(tc.syndrome(L, x), sx) and tc.homology(L, x) == cls[:2] for x in xs[:4])
    assert all(np.array_equal(plaquette_syndrome(L, z), sz) and z_class(L, z) == cls[2:] for z in zs[:4])
    hit = xs.sum(1)[:, None] + zs.sum(1)[None, :] - xs @ zs.T          # qubits carrying any error
    log_w = hit * math.log(p / 3.0) + (N - hit) * math.log1p(-p)
    return float(logsumexp(log_w))


def effective_model(L: int, p: float, sx, sz, cls) -> IsingModel:
    """The coupled Ising layers whose Z is P(class, S), constant included (module docstring): spins
    sigma_p = r*L + c on plaquettes, tau_v = L^2 + r*L + c on vertices."""
    x1, z1 = reference_pair(L, sx, sz, cls)
    eta, zeta = 1.0 - 2.0 * x1, 1.0 - 2.0 * z1
    r, c = np.divmod(np.arange(L * L), L)
    plaq = lambda rr, cc: (rr % L) * L + cc % L                      # noqa: E731
    vert = lambda rr, cc: L * L + (rr % L) * L + cc % L               # noqa: E731
    # horizontal edge (r, c): plaquettes (r, c), (r-1, c); ends (r, c), (r, c+1)
    # vertical edge (r, c): plaquettes (r, c), (r, c-1); ends (r, c), (r+1, c)
    sig = np.concatenate([np.stack([plaq(r, c), plaq(r - 1, c)], 1), np.stack([plaq(r, c), plaq(r, c - 1)], 1)])
    tau = np.concatenate([np.stack([vert(r, c), vert(r, c + 1)], 1), np.stack([vert(r, c), vert(r + 1, c)], 1)])
    terms = [tuple(t) for t in sig.tolist()] + [tuple(t) for t in tau.tolist()] + \
            [tuple(a) + tuple(b) for a, b in zip(sig.tolist(), tau.tolist())]
    weights = np.concatenate([eta, zeta, eta * zeta])
    K = 0.25 * (math.log1p(-p) - math.log(p / 3.0))
    A = 0.25 * (math.log1p(-p) + 3.0 * math.log(p / 3.0))
    constant = (math.log(0.25) + 2 * L * L * A) / K
    return IsingModel(n=2 * L * L, terms=tuple(terms), weights=weights, beta=K, constant=constant)
