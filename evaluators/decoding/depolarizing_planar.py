"""The planar surface code under depolarizing noise: errors, syndromes, classes, and approximate
maximum-likelihood decoding by boundary-MPS contraction with bond dimension chi (S. Bravyi, M. Suchara
and A. Vargo, Phys. Rev. A 90, 032326 (2014), section IV), exact at chi large enough; plus the exact
class probabilities by enumerating the stabilizer cosets (L <= 4), the check of both.

The code is task T21's (evaluators/decoding/planar_code.py): qubits h(r, c) (index r L + c, r, c in
0..L-1) and v(r, c) (index L^2 + r (L-1) + c, r, c in 0..L-2); vertex checks (r, c), r in 0..L-1,
c in 0..L-2, hold h(r, c), h(r, c+1), v(r-1, c), v(r, c) (those that exist) and see the x part of an
error; plaquette checks (r, c), r in 0..L-2, c in 0..L-1, hold h(r, c), h(r+1, c), v(r, c-1), v(r, c)
and see the z part. An error is (x, z) per qubit: X = (1, 0), Z = (0, 1), Y = (1, 1), each with
probability p/3, nothing with 1 - p. Its class is (a, b): a = parity of x on the column h(., 0) (T21's
class), b = parity of z on the row h(0, .); class index 2 a + b. Transposing the code (h(r, c) <->
h(c, r), v(r, c) <-> v(c, r), plaquette (r, c) <-> vertex (c, r)) exchanges the two halves, so the z
half is T21's problem on the transposed syndrome: the plaquette syndrome is kept transposed, as an
L x (L - 1) array like the vertex syndrome, and a syndrome here is the (2, L, L - 1) pair.

    P(a, b, S) = sum over errors with syndrome S and class (a, b) of (p/3)^|E| (1 - p)^(N - |E|)

(natural logs throughout). The errors of one class are f + stabilizers, f a reference error. The
tensor network: the (2L - 1) x (2L - 1) grid, site (i, j) a qubit when i + j is even (h(r, c) at
(2r, 2c), v(r, c) at (2r + 1, 2c + 1)), a vertex check at (2r, 2c + 1), a plaquette at (2r + 1, 2c);
each check a copy tensor over its binary variable (the generator applied or not), each qubit the
weight of its Pauli, f_e times the generators of its (up to four) neighbours: an h qubit's horizontal
neighbours are vertices (they flip z), its vertical ones plaquettes (they flip x), a v qubit the other
way round. Contracted column by column: the boundary state is an MPS of 2L - 1 sites; each column
applied to it doubles its bonds, and a canonical sweep (QR left to right, SVD right to left) cuts
them back to chi. Without truncation (chi >= 2^L) the value is exact.

Precision: float64. At chi = 2^(L-1) the value is the coset enumeration's to 1e-14 in log P at p = 0.15-0.3
and 5e-12 at 0.05 (L = 3, 4; tests/benchmarks/depolarizing_mps_check.py). At tiny p it is not: a cut's
boundary state holds configurations that push an error onto the cut (weight ~1 on each side, ~p once the
sides are joined), so a class of weight p^k is read off states of norm ~1 and rounding wins once
p^k < 1e-16: at p = 1e-12, L = 4 even the decision fails. T21's exact decoder has double-double for that
regime; this one is meant for the threshold region.

Every sample and class of a batch goes through the same shapes, so the contraction runs batched in
numpy (stacked QR and SVD) with no per-sample Python loop.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from evaluators.decoding.sampling import syndromes as vertex_syndromes  # the x part's checks are T21's

#: the Monte Carlo threshold of the toric code under depolarizing noise (Bombin et al., PRX 2, 021004 (2012))
P_THRESHOLD = 0.189
P_THRESHOLD_ERR = 0.003
CLASSES = 4


def qubits(L: int) -> int:
    return L * L + (L - 1) * (L - 1)


def draw(rng: np.random.Generator, L: int, p: float, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(x, z), each (count, N) uint8: each qubit X, Y or Z with probability p/3 each."""
    N = qubits(L)
    u = rng.random((count, N))
    kind = np.where(u < p, np.minimum((u * (3.0 / p)).astype(np.int64), 2) + 1, 0)      # 1 X, 2 Y, 3 Z
    return ((kind == 1) | (kind == 2)).astype(np.uint8), ((kind == 2) | (kind == 3)).astype(np.uint8)


def transpose_chain(L: int, e: np.ndarray) -> np.ndarray:
    """(count, N) edge sets under h(r, c) <-> h(c, r), v(r, c) <-> v(c, r) (an involution)."""
    e = np.asarray(e)
    h = e[:, :L * L].reshape(-1, L, L).transpose(0, 2, 1).reshape(-1, L * L)
    v = e[:, L * L:].reshape(-1, L - 1, L - 1).transpose(0, 2, 1).reshape(-1, (L - 1) ** 2)
    return np.concatenate([h, v], axis=1)


def plaquette_syndromes(L: int, z: np.ndarray) -> np.ndarray:
    """(count, L - 1, L): the plaquettes holding an odd number of edges with z = 1 (computed on the
    plaquettes themselves, not through the transposition)."""
    e = np.asarray(z, dtype=np.int8)
    h = e[:, :L * L].reshape(-1, L, L)
    v = e[:, L * L:].reshape(-1, L - 1, L - 1)
    s = h[:, :-1, :] ^ h[:, 1:, :]
    s[:, :, :-1] ^= v
    s[:, :, 1:] ^= v
    return s


def syndromes(L: int, x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """(count, 2, L, L - 1) int8: the vertex syndrome and the transposed plaquette syndrome."""
    return np.stack([vertex_syndromes(L, x), plaquette_syndromes(L, z).transpose(0, 2, 1)], axis=1).astype(np.int8)


def classes(L: int, x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """(count,) int8: 2 a + b, a the parity of x on h(., 0), b of z on h(0, .)."""
    a = np.asarray(x)[:, 0:L * L:L].sum(axis=1) % 2
    b = np.asarray(z)[:, 0:L].sum(axis=1) % 2
    return (2 * a + b).astype(np.int8)


def _x_reference(L: int, s: np.ndarray, a: np.ndarray) -> np.ndarray:
    """(count, N) uint8: an x with vertex syndrome s (count, L, L - 1) and class a (count,): each defect
    (r, c) joined to the left boundary by h(r, 0..c), then the row h(0, .) where the class is wrong."""
    count = s.shape[0]
    # h(r, k) is in the string of (r, c) when k <= c: h(r, k) = parity of the defects (r, c >= k)
    suffix = np.cumsum(s[:, :, ::-1], axis=2)[:, :, ::-1] % 2            # (count, L, L - 1): k = 0..L-2
    h = np.zeros((count, L, L), dtype=np.uint8)
    h[:, :, :L - 1] = suffix
    wrong = (h[:, :, 0].sum(axis=1) % 2) != a
    h[wrong, 0, :] ^= 1
    return np.concatenate([h.reshape(count, -1), np.zeros((count, (L - 1) ** 2), dtype=np.uint8)], axis=1)


def reference_errors(L: int, syn: np.ndarray, cls) -> tuple[np.ndarray, np.ndarray]:
    """(fx, fz), each (count, N): an error with the syndromes ``syn`` (count, 2, L, L - 1) and the
    classes ``cls`` (count,) (class index 2 a + b)."""
    syn = np.asarray(syn)
    cls = np.asarray(cls)
    fx = _x_reference(L, syn[:, 0], cls // 2)
    fz = transpose_chain(L, _x_reference(L, syn[:, 1], cls % 2))
    return fx, fz


# ---------------------------------------------------------------------------------------------------------
# the tensor network

def noise_weights(p: float) -> np.ndarray:
    """w[x, z]: the probability of one qubit's Pauli under depolarizing noise."""
    return np.array([[1.0 - p, p / 3.0], [p / 3.0, p / 3.0]])


def _site_tensors(L: int, w: np.ndarray, fx: np.ndarray, fz: np.ndarray) -> list[list[np.ndarray]]:
    """tensors[i][j]: (B, dl, dr, du, dd), legs of dimension 2, 1 where the grid ends (a qubit's missing
    neighbour is no generator: its leg is fixed to 0; a check's missing leg is summed over)."""
    B = fx.shape[0]
    n = 2 * L - 1
    par = np.arange(2)
    # pair[l, r, u, d] parity of the horizontal legs and of the vertical legs
    hor = (par[:, None, None, None] ^ par[None, :, None, None]) * np.ones((2, 2, 2, 2), dtype=np.int64)
    ver = (par[None, None, :, None] ^ par[None, None, None, :]) * np.ones((2, 2, 2, 2), dtype=np.int64)
    copy = np.zeros((2, 2, 2, 2))
    copy[0, 0, 0, 0] = copy[1, 1, 1, 1] = 1.0
    out = []
    for i in range(n):
        row = []
        for j in range(n):
            if (i + j) % 2 == 0:
                if i % 2 == 0:           # h(r, c): vertical legs flip x, horizontal legs flip z
                    q = (i // 2) * L + j // 2
                    xs, zs = ver, hor
                else:                    # v(r, c): horizontal legs flip x, vertical legs flip z
                    q = L * L + (i // 2) * (L - 1) + j // 2
                    xs, zs = hor, ver
                t = w[(fx[:, q, None, None, None, None] ^ xs[None]), (fz[:, q, None, None, None, None] ^ zs[None])]
                t = t[:, :1] if j == 0 else t
                t = t[:, :, :1] if j == n - 1 else t
                t = t[:, :, :, :1] if i == 0 else t
                t = t[:, :, :, :, :1] if i == n - 1 else t
            else:
                t = copy
                t = t.sum(axis=0, keepdims=True) if j == 0 else t
                t = t.sum(axis=1, keepdims=True) if j == n - 1 else t
                t = t.sum(axis=2, keepdims=True) if i == 0 else t
                t = t.sum(axis=3, keepdims=True) if i == n - 1 else t
                t = np.broadcast_to(t, (B, *t.shape))
            row.append(t)
        out.append(row)
    return out


def _compress(mps: list[np.ndarray], chi: int) -> float | np.ndarray:
    """Bring the MPS (sites (B, Dl, d, Dr)) to bonds <= chi in place: QR left to right, then SVD right
    to left keeping the chi largest singular values; site 0 ends normalised. Returns the log norm
    taken out, (B,)."""
    n = len(mps)
    for k in range(n - 1):
        A = mps[k]
        B_, Dl, d, Dr = A.shape
        q, r = np.linalg.qr(A.reshape(B_, Dl * d, Dr))
        mps[k] = q.reshape(B_, Dl, d, q.shape[-1])
        nxt = mps[k + 1]
        mps[k + 1] = np.matmul(r, nxt.reshape(B_, nxt.shape[1], -1)).reshape(B_, r.shape[1], *nxt.shape[2:])
    for k in range(n - 1, 0, -1):
        A = mps[k]
        B_, Dl, d, Dr = A.shape
        u, s, vh = np.linalg.svd(A.reshape(B_, Dl, d * Dr), full_matrices=False)
        keep = min(chi, s.shape[-1])
        u, s, vh = u[..., :keep], s[..., :keep], vh[:, :keep]
        mps[k] = vh.reshape(B_, keep, d, Dr)
        prev = mps[k - 1]
        mps[k - 1] = np.matmul(prev.reshape(B_, -1, prev.shape[3]), u * s[:, None, :]).reshape(
            B_, prev.shape[1], prev.shape[2], keep)
    norm = np.sqrt(np.einsum("bisk,bisk->b", mps[0], mps[0]))
    safe = np.where(norm > 0, norm, 1.0)
    mps[0] = mps[0] / safe[:, None, None, None]
    return np.log(norm)


def contract(L: int, p: float, fx: np.ndarray, fz: np.ndarray, chi: int | None,
             w: np.ndarray | None = None) -> np.ndarray:
    """(B,) natural logs of the sum over the stabilizer group of the weights of fx + g, fz + g (the
    class probability of the reference errors), by the boundary MPS with bonds cut to ``chi`` (None:
    never cut, exact). ``w`` (2, 2) the weight of a qubit's (x, z), the depolarizing one by default
    (another table, such as one that ignores z, serves the checks). A value the truncation or
    rounding made zero or negative comes back as -inf."""
    fx = np.ascontiguousarray(fx, dtype=np.int64)
    fz = np.ascontiguousarray(fz, dtype=np.int64)
    B = fx.shape[0]
    n = 2 * L - 1
    T = _site_tensors(L, noise_weights(p) if w is None else np.asarray(w, dtype=float), fx, fz)
    cap = chi if chi is not None else 1 << 30
    log_scale = np.zeros(B)
    # column 0: site i is (B, du, dr, dd) with the left leg (dimension 1) gone
    mps = [T[i][0][:, 0].transpose(0, 2, 1, 3) for i in range(n)]
    log_scale += _compress(mps, cap)
    for j in range(1, n):
        for i in range(n):
            A = mps[i]                                   # (B, x, s, y)
            t = T[i][j]                                  # (B, s, r, u, d)
            Bn, X, _, Y = A.shape
            _, S, R, U, D = t.shape
            new = np.matmul(A.transpose(0, 1, 3, 2).reshape(Bn, X * Y, S), t.reshape(-1, S, R * U * D))
            new = new.reshape(Bn, X, Y, R, U, D).transpose(0, 1, 4, 3, 2, 5)
            mps[i] = new.reshape(Bn, X * U, R, Y * D)
        log_scale += _compress(mps, cap)
    # the last column's right legs have dimension 1: the chain of matrices
    v = mps[0][:, :, 0, :]
    for k in range(1, n):
        v = np.einsum("bij,bjk->bik", v, mps[k][:, :, 0, :])
    value = v[:, 0, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(value > 0, np.log(np.where(value > 0, value, 1.0)) + log_scale, -np.inf)


def class_log_probabilities(L: int, p: float, syn: np.ndarray, chi: int | None) -> np.ndarray:
    """(count, 4): log P(class, S) for each syndrome of ``syn`` (count, 2, L, L - 1), class index 2 a + b,
    by the boundary MPS at bond dimension ``chi`` (None: exact)."""
    syn = np.asarray(syn)
    count = syn.shape[0]
    if count == 0:
        return np.zeros((0, CLASSES))
    rep = np.repeat(syn, CLASSES, axis=0)
    cls = np.tile(np.arange(CLASSES), count)
    fx, fz = reference_errors(L, rep, cls)
    return contract(L, p, fx, fz, chi).reshape(count, CLASSES)


# ---------------------------------------------------------------------------------------------------------
# the exact reference: the stabilizer cosets enumerated

#: the x half's coset has 2^((L-1) L) elements, the z half's as many: L = 4 is 4096 x 4096 pairs
ENUMERATION_MAX_L = 4


def plaquette_generators(L: int) -> np.ndarray:
    """((L-1) L, N) uint8: the plaquettes' edge sets (the generators that flip x)."""
    N = qubits(L)
    out = np.zeros(((L - 1) * L, N), dtype=np.uint8)
    for r in range(L - 1):
        for c in range(L):
            g = out[r * L + c]
            g[r * L + c] = g[(r + 1) * L + c] = 1
            if c > 0:
                g[L * L + r * (L - 1) + c - 1] = 1
            if c < L - 1:
                g[L * L + r * (L - 1) + c] = 1
    return out


def vertex_generators(L: int) -> np.ndarray:
    """(L (L-1), N) uint8: the vertices' edge sets (the generators that flip z)."""
    N = qubits(L)
    out = np.zeros((L * (L - 1), N), dtype=np.uint8)
    for r in range(L):
        for c in range(L - 1):
            g = out[r * (L - 1) + c]
            g[r * L + c] = g[r * L + c + 1] = 1
            if r > 0:
                g[L * L + (r - 1) * (L - 1) + c] = 1
            if r < L - 1:
                g[L * L + r * (L - 1) + c] = 1
    return out


def _span(start: np.ndarray, gens: np.ndarray) -> np.ndarray:
    """Every start + (a subset of gens), (2^len(gens), N)."""
    k = len(gens)
    bits = (np.arange(1 << k)[:, None] >> np.arange(k)[None, :]) & 1
    return (start[None, :].astype(np.int64) + bits @ gens.astype(np.int64)) % 2


def exact_class_log_probability(L: int, p: float, syn: np.ndarray, cls: int) -> float:
    """log P(class, S) by enumerating every error of the class: the generators' subsets applied to a
    reference error, each element's syndromes and class checked by the functions above."""
    if L > ENUMERATION_MAX_L:
        raise ValueError(f"coset enumeration is limited to L <= {ENUMERATION_MAX_L}")
    fx, fz = reference_errors(L, np.asarray(syn)[None], np.array([cls]))
    xs = _span(fx[0], plaquette_generators(L))
    zs = _span(fz[0], vertex_generators(L))
    ex, ez = xs[::7], zs[::7]
    assert np.all(vertex_syndromes(L, ex) == syn[0]) and np.all(classes(L, ex, 0 * ex) // 2 == cls // 2)
    assert np.all(plaquette_syndromes(L, ez).transpose(0, 2, 1) == syn[1])
    assert np.all(classes(L, 0 * ez, ez) % 2 == cls % 2)
    N = qubits(L)
    xw, zw = xs.sum(axis=1), zs.sum(axis=1)
    overlap = np.rint(xs.astype(np.float32) @ zs.T.astype(np.float32)).astype(np.int64)    # exact: small integers
    hit = (xw[:, None] + zw[None, :] - overlap).ravel()                          # qubits with any error
    counts = np.bincount(hit, minlength=N + 1)
    k = np.nonzero(counts)[0]
    return float(logsumexp(np.log(counts[k]) + k * math.log(p / 3.0) + (N - k) * math.log1p(-p)))
