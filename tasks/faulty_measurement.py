"""The planar surface code under bit flips with faulty syndrome measurements (T25): space-time errors,
detection events, classes, the raw sum by enumeration of the errors consistent with the detection events,
and its reduction, the 3D random-plaquette gauge model (Dennis, Kitaev, Landahl and Preskill, J. Math.
Phys. 43, 4452 (2002); Wang, Harrington and Preskill, Ann. Phys. 303, 31 (2003)).

Geometry per round as T21 (tasks/catalog/t21_surface_code.py): checks on the vertices (r, c) of an
L x (L - 1) grid, C = L (L - 1) of them; qubits on Q = L^2 + (L - 1)^2 edges, the horizontal edge h(r, c)
(c = 0..L-1) entering vertex (r, c) from the left (h(r, 0) and h(r, L - 1) dangle), the vertical edge
v(r, c) (r, c = 0..L-2) joining (r, c) and (r + 1, c).

The process, T >= 1 rounds: in round t every qubit flips with probability p (data error E_t), then the
checks are measured, each outcome wrong with probability q (measurement error m_t), except in the last
round, which is perfect (m_(T-1) = 0). The detection events are the changes of the measured syndrome,
D_t = syn(E_t) + m_t + m_(t-1) (m_(-1) = 0). The class is the parity of the flips on the dangling left
edges over all rounds (the logical error of the total flip). The quantity is
P(D, a) = sum over (E, m) with these detection events and class a of
p^|E| (1 - p)^(T Q - |E|) q^|m| (1 - q)^((T - 1) C - |m|).

Variables, flat (the formula's order): data (t, h(r, c)) = t Q + r L + c, (t, v(r, c)) = t Q + L^2 +
r (L - 1) + c; measurement (t, r, c) = T Q + t C + r (L - 1) + c for t = 0..T-2. N = T Q + (T - 1) C.

The space-time graph: one vertex per check and round, one edge per variable (a data edge within its
round, a measurement edge between (t, r, c) and (t + 1, r, c); the dangling edges end on the boundary).
Errors with the same detection events differ by a cycle of it (relative to the boundary); with the
class fixed, by a sum of plaquettes of the space-time lattice: spatial ones (the T21 faces in each
round, boundary ones with three edges) and temporal ones (one per qubit and pair of consecutive
rounds: the qubit in both rounds and the measurement edges at its ends). With t_f = +-1 on the
plaquettes, (-1)^(x_b) = eta_b prod_(f contains b) t_f (eta from one reference error), and a variable's
weight is sqrt(p (1 - p)) exp(K_p (-1)^x), K_p = (1/2) log((1 - p) / p) (the same with q), so

    P(D, a) = 2^-(L (L - 1) (T - 1)) prod_b sqrt(p_b (1 - p_b)) sum_t exp(sum_b K_b eta_b prod_(f contains b) t_f),

the random-plaquette gauge model: one 4-spin term per bulk edge (3 or 2 at the time and space
boundaries), and a gauge redundancy per cube (the six faces of a cube sum to nothing), L (L - 1)(T - 1)
of them. No polynomial method is known; the threshold for p = q is about 2.9% (Wang, Harrington, Preskill
2003; 3.3% in Ohno et al., Nucl. Phys. B 697, 462 (2004)).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from tasks.catalog.t21_surface_code import syndrome as spatial_syndrome  # one round's checks are T21's
from tasks.model import IsingModel

#: p = q threshold of the random-plaquette gauge model (Wang, Harrington and Preskill 2003: about 2.9%)
P_THRESHOLD = 0.029
#: the coset enumeration visits 2^(kernel dimension) errors: at most this many
ENUMERATION_MAX_DIM = 24


def sizes(L: int, T: int) -> tuple[int, int, int]:
    """(Q qubits per round, C checks per round, N variables)."""
    Q, C = L * L + (L - 1) * (L - 1), L * (L - 1)
    return Q, C, T * Q + (T - 1) * C


def detection_events(L: int, data: np.ndarray, meas: np.ndarray) -> np.ndarray:
    """(T, L, L - 1) 0/1: D_t = syn(E_t) + m_t + m_(t-1), data (T, Q), meas (T - 1, L, L - 1)."""
    data = np.asarray(data, dtype=np.int64)
    T = len(data)
    m = np.zeros((T + 1, L, L - 1), dtype=np.int64)
    m[1:T] = np.asarray(meas, dtype=np.int64).reshape(T - 1, L, L - 1)      # m[t + 1] = m_t; m[0] = m[T] = 0
    return np.stack([(spatial_syndrome(L, data[t]) + m[t + 1] + m[t]) % 2 for t in range(T)])


def logical(L: int, data: np.ndarray) -> int:
    """The class: parity of the flips on the dangling left edges h(r, 0) over all rounds."""
    d = np.asarray(data, dtype=np.int64).reshape(-1, L * L + (L - 1) ** 2)
    return int(d[:, 0:L * L:L].sum() % 2)


def sample(rng: np.random.Generator, L: int, T: int, p: float, q: float) -> tuple[np.ndarray, np.ndarray]:
    """(data (T, Q), meas (T - 1, L, L - 1)) of one run of the process."""
    Q, _, _ = sizes(L, T)
    data = (rng.random((T, Q)) < p).astype(np.int8)
    meas = (rng.random((T - 1, L, L - 1)) < q).astype(np.int8)
    return data, meas


def split(L: int, T: int, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A flat assignment of the N variables as (data (T, Q), meas (T - 1, L, L - 1))."""
    Q, C, N = sizes(L, T)
    x = np.asarray(x)
    return x[:T * Q].reshape(T, Q), x[T * Q:N].reshape(T - 1, L, L - 1)


def check_params(L: int, params: dict):
    """(p, q, D (T, L, L - 1) int8, cls) from a parameter dictionary, or ValueError."""
    for key in ("p", "q", "detections", "cls"):
        if key not in params:
            raise ValueError(f"missing parameter {key!r}")
    try:
        p, q = float(params["p"]), float(params["q"])
        D = np.asarray(params["detections"], dtype=np.int64)
        cls = int(params["cls"])
    except (TypeError, ValueError):
        raise ValueError("parameters: 'p' and 'q' numbers, 'detections' a T x L x (L-1) array of 0/1, "
                         "'cls' a bit") from None
    for key, v in (("p", p), ("q", q)):
        if not 0.0 < v < 0.5:
            raise ValueError(f"parameter {key!r} must lie in (0, 0.5), got {v}")
    if D.ndim != 3 or D.shape[1:] != (L, L - 1) or len(D) < 1 or not np.all((D == 0) | (D == 1)):
        raise ValueError(f"parameter 'detections' must be a T x {L} x {L - 1} array of 0/1 (T >= 1)")
    if cls not in (0, 1):
        raise ValueError("parameter 'cls' must be 0 or 1")
    return p, q, D.astype(np.int8), cls


# -- the linear algebra of the conditions ---------------------------------------------------------------

def check_rows(L: int, T: int) -> np.ndarray:
    """(T C, N) 0/1: row t C + r (L - 1) + c holds the variables whose flip changes D_t at (r, c)."""
    Q, C, N = sizes(L, T)
    A = np.zeros((T * C, N), dtype=np.int8)
    eye = np.eye(Q, dtype=np.int64)
    for t in range(T):
        for b in range(Q):
            A[t * C:(t + 1) * C, t * Q + b] = spatial_syndrome(L, eye[b]).reshape(-1)
        for k in range(C):
            if t <= T - 2:
                A[t * C + k, T * Q + t * C + k] = 1
            if t >= 1:
                A[t * C + k, T * Q + (t - 1) * C + k] = 1
    return A


def class_row(L: int, T: int) -> np.ndarray:
    Q, _, N = sizes(L, T)
    row = np.zeros(N, dtype=np.int8)
    for t in range(T):
        row[t * Q + np.arange(L) * L] = 1
    return row


def reference_error(L: int, D: np.ndarray, cls: int) -> np.ndarray:
    """A flat error with detection events D and class cls: each round's events are carried by measurement
    errors to the last round (m_t = D_0 + ... + D_t), whose defects are joined to the left boundary along
    their rows; a whole row of horizontal edges (a logical) then sets the class."""
    D = np.asarray(D, dtype=np.int64)
    T = len(D)
    Q, C, N = sizes(L, T)
    x = np.zeros(N, dtype=np.int8)
    cum = np.cumsum(D, axis=0) % 2
    for t in range(T - 1):
        x[T * Q + t * C:T * Q + (t + 1) * C] = cum[t].reshape(-1)
    last = (T - 1) * Q
    for r, c in zip(*np.nonzero(cum[T - 1])):
        x[last + r * L + np.arange(c + 1)] ^= 1
    if logical(L, x[:T * Q]) != cls:
        x[last + np.arange(L)] ^= 1
    return x


def _gf2_nullspace(A: np.ndarray) -> np.ndarray:
    """(k, N) 0/1: a basis of {x : A x = 0 (mod 2)} by Gaussian elimination (no use of the geometry)."""
    M = np.asarray(A, dtype=np.uint8) % 2
    rows, cols = M.shape
    pivots, r = [], 0
    for c in range(cols):
        if r == rows:
            break
        k = r + int(np.argmax(M[r:, c]))
        if M[k, c] == 0:
            continue
        M[[r, k]] = M[[k, r]]
        hit = M[:, c].astype(bool)
        hit[r] = False
        M[hit] ^= M[r]
        pivots.append(c)
        r += 1
    free = [c for c in range(cols) if c not in set(pivots)]
    basis = np.zeros((len(free), cols), dtype=np.uint8)
    for i, f in enumerate(free):
        basis[i, f] = 1
        basis[i, pivots] = M[:len(pivots), f]
    return basis


def _masks(bits: np.ndarray) -> np.ndarray:
    """0/1 rows (k, N <= 64) as uint64 bit masks."""
    weights = np.left_shift(np.uint64(1), np.arange(bits.shape[1], dtype=np.uint64))
    return (bits.astype(np.uint64) * weights).sum(axis=1, dtype=np.uint64)


def coset_log_probabilities(L: int, p: float, q: float, D: np.ndarray) -> np.ndarray:
    """[log P(D, 0), log P(D, 1)] by enumerating every error with detection events D: one error plus
    each of the 2^k elements of the kernel of the check rows (a basis by Gaussian elimination; no
    plaquettes, no Ising model), each weighed by its counts of data and measurement flips and sorted by
    its class. -inf for a class no error reaches (never, with both boundaries rough)."""
    D = np.asarray(D, dtype=np.int64)
    T = len(D)
    Q, C, N = sizes(L, T)
    if N > 64:
        raise ValueError("the coset enumeration packs an error into 64 bits")
    basis = _gf2_nullspace(check_rows(L, T))
    if len(basis) > ENUMERATION_MAX_DIM:
        raise ValueError(f"2^{len(basis)} errors: the enumeration stops at 2^{ENUMERATION_MAX_DIM}")
    x1 = reference_error(L, D, 0)
    span = np.array([_masks(x1[None, :])[0]], dtype=np.uint64)
    for g in _masks(basis):
        span = np.concatenate([span, span ^ g])
    bit = np.left_shift(np.uint64(1), np.arange(N, dtype=np.uint64))
    data_mask = np.bitwise_or.reduce(bit[:T * Q]) if T * Q else np.uint64(0)
    meas_mask = np.bitwise_or.reduce(bit[T * Q:]) if N > T * Q else np.uint64(0)
    left_mask = _masks(class_row(L, T)[None, :])[0]
    k_data = np.bitwise_count(span & data_mask).astype(np.float64)
    k_meas = np.bitwise_count(span & meas_mask).astype(np.float64)
    log_w = (k_data * math.log(p) + (T * Q - k_data) * math.log1p(-p)
             + k_meas * math.log(q) + ((T - 1) * C - k_meas) * math.log1p(-q))
    cls = np.bitwise_count(span & left_mask) % 2
    return np.array([logsumexp(log_w[cls == a]) if np.any(cls == a) else -math.inf for a in (0, 1)])


# -- the random-plaquette gauge model -------------------------------------------------------------------

def plaquettes(L: int, T: int) -> list[list[int]]:
    """The plaquettes of the space-time lattice as lists of flat variables: the spatial ones of every
    round (t, r, c), r = 0..L-2, c = 0..L-1 (edges h(r, c), h(r + 1, c) and the vertical edges v(r, c - 1),
    v(r, c) that exist), then one temporal one per qubit b and rounds t, t + 1 (b in both rounds and the
    measurement edges at b's ends that are checks)."""
    Q, C, N = sizes(L, T)
    h = lambda t, r, c: t * Q + r * L + c                          # noqa: E731
    v = lambda t, r, c: t * Q + L * L + r * (L - 1) + c            # noqa: E731
    m = lambda t, r, c: T * Q + t * C + r * (L - 1) + c            # noqa: E731
    out = []
    for t in range(T):
        for r in range(L - 1):
            for c in range(L):
                out.append([h(t, r, c), h(t, r + 1, c)] + [v(t, r, cc) for cc in (c - 1, c) if 0 <= cc <= L - 2])
    for t in range(T - 1):
        for r in range(L):
            for c in range(L):
                out.append([h(t, r, c), h(t + 1, r, c)] + [m(t, r, cc) for cc in (c - 1, c) if 0 <= cc <= L - 2])
        for r in range(L - 1):
            for c in range(L - 1):
                out.append([v(t, r, c), v(t + 1, r, c), m(t, r, c), m(t, r + 1, c)])
    return out


def effective_model(L: int, p: float, q: float, D: np.ndarray, cls: int) -> IsingModel:
    """The random-plaquette gauge model whose Z is P(D, cls), constant included (module docstring):
    spin f is plaquette f of :func:`plaquettes`, the term of variable b the product of the spins of the
    plaquettes holding it, with weight K_b eta_b."""
    D = np.asarray(D, dtype=np.int64)
    T = len(D)
    Q, C, N = sizes(L, T)
    faces = plaquettes(L, T)
    holding: list[list[int]] = [[] for _ in range(N)]
    for f, edges in enumerate(faces):
        for b in edges:
            holding[b].append(f)
    eta = 1.0 - 2.0 * reference_error(L, D, cls).astype(np.float64)
    k_p, k_q = 0.5 * (math.log1p(-p) - math.log(p)), 0.5 * (math.log1p(-q) - math.log(q))
    K = np.where(np.arange(N) < T * Q, k_p, k_q)
    constant = (0.5 * T * Q * (math.log(p) + math.log1p(-p)) + 0.5 * (T - 1) * C * (math.log(q) + math.log1p(-q))
                - L * (L - 1) * (T - 1) * math.log(2.0))
    return IsingModel(n=len(faces), terms=tuple(tuple(fs) for fs in holding), weights=K * eta, beta=1.0,
                      constant=constant)
