"""The zero-field Ising model on an R x C torus with ANY nearest-neighbour couplings (random-bond,
Mattis, frustrated), exactly: domain walls on the dual torus summed by the four-Pfaffian formula.

Domain walls. exp(K_e s s') = exp(|K_e|) exp(-2|K_e| [e unsatisfied]). The unsatisfied edges U of a
configuration, drawn on the dual torus (plaquette (r, c) has corners (r, c), (r, c+1), (r+1, c),
(r+1, c+1)), have odd degree exactly at the frustrated plaquettes T, and as s runs over the 2^n
configurations U runs twice over the T-joins homologous to U_0 = {e : K_e < 0} (those of the other
three classes are the configurations with an antiperiodic seam). Hence

    log Z = log 2 + sum_e |K_e| + log W_[U_0]

with W the class sums of T-joins of the dual torus with weights exp(-2|K_e|) <= 1
(:mod:`evaluators.oracles.torus_tjoin`: four Kasteleyn Pfaffians, one per periodic/antiperiodic
sector). The dual of the primal h(r, c) is the dual vertical edge between plaquettes (r-1, c) and
(r, c); of v(r, c) the dual horizontal edge between (r, c-1) and (r, c).

Two Pfaffians per sector: a dense skew elimination with complete 2 x 2 pivoting in numba (the derived
programs run the same algorithm in numpy), on A and on A with its nodes permuted at random. Their
largest disagreement relative to max|Pf| (at least N eps), d, estimates the rounding (a sector near
0, Kaufman's Z4 at T_c, may disagree in sign and add nothing); the class asked for has relative error
about d max|Pf| / W_class, and a value whose estimate exceeds 1e-9 is refused
(OutOfRange: a class far less likely than another, e.g. a logical error at p = 1e-12 on a large
torus, is below float64's resolution of the four-sector sum). Weights exp(-2|K|) between 0 and MIN_WEIGHT
(2^-500, 173 < |K| < 372: their products underflow in the elimination) are declined by ``applies``, so the registry hands such a model on. Cost O(N^3) with N ~ 6.5 n dense
(N^2 doubles of memory): used up to ``DENSE_MAX_SPINS`` (and kept as the independent reference).

Beyond that, the sparse route (:mod:`evaluators.oracles.torus_sparse`): the same four sector
matrices eliminated along a nested dissection of the torus with the sign tracked, in double-double,
each twice (two dissections), O(N^1.5); the same error estimate and the same refusal, but with
the Pfaffians' rounding about 2^-101 per node instead of 2^-52, so classes down to about 1e-17 of
the likeliest (instead of 1e-3 .. 1e-5) are resolved. Up to ``MAX_SPINS``.

Conventions: natural log Z; K_e = beta J_e; the model's constant is added as beta * constant.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from evaluators.oracles.base import NotApplicable, OutOfRange, TooLarge
from evaluators.oracles.budget import affordable, check
from evaluators.oracles.kaufman import _torus_pairs
from evaluators.oracles.torus_sparse import sparse_class_logs
from evaluators.oracles.torus_tjoin import _tt_class_logs
from tasks.model import IsingModel

#: dense matrices of about 6.5 n nodes, eight Pfaffians a call (four sectors, twice): 16 x 16 (N ~ 1700)
#: took 22 s on this 2-core machine under load 12, 20 x 20 about four times that; 10 x 10 well under 1 s.
#: Above this the sparse route (more digits, O(n^1.5)); the dense one stays the reference in the tests
DENSE_MAX_SPINS = 100
#: the sparse route: 64 x 64 in about 1 s, 128 x 128 in about 5 s and 256 x 256 in about 30 s under light
#: load (docs/performance.md)
MAX_SPINS = 65536
#: seconds of a 64 x 64 call by the sparse route with margin (measured about 1 s), for the time budget,
#: scaled as n^1.5
SPARSE_S_AT_4096 = 3.0
CERTIFIED = 1e-9
#: weights exp(-2|K|) below this but not 0 are refused: products of two leave float64's normal range inside
#: the elimination (measured on T18 at L = 5 .. 8, p = 1e-160, |K| = 184: both routes certified values wrong by
#: up to 1.2e-4 in log P, ground states lost; p = 1e-155 .. 1e-20 right). A weight that underflows to 0 (|K| >
#: 372) is an absent edge, exact: the unfrustrated Mattis torus at beta J = 1000 stays right
MIN_WEIGHT = 2.0 ** -500


@njit(cache=True)
def _pf_complete(A):
    """(log |Pf A|, sign) of a skew-symmetric A (overwritten): 2 x 2 pivots, each the largest
    |A_ij| left (complete pivoting, found during the previous update)."""
    N = A.shape[0]
    logabs, sign = 0.0, 1.0
    bi, bj, best = 0, 1, -1.0
    for i in range(N):
        for j in range(i + 1, N):
            if abs(A[i, j]) > best:
                best, bi, bj = abs(A[i, j]), i, j
    for k in range(0, N - 1, 2):
        if best <= 0.0:
            return -np.inf, 0.0
        for src, dst in ((bi, k), (bj, k + 1)):
            if src != dst:
                for q in range(N):
                    A[src, q], A[dst, q] = A[dst, q], A[src, q]
                for q in range(N):
                    A[q, src], A[q, dst] = A[q, dst], A[q, src]
                sign = -sign
                if bj == dst:       # the second index moved with the first swap
                    bj = src
        piv = A[k, k + 1]
        logabs += np.log(abs(piv))
        if piv < 0:
            sign = -sign
        best = -1.0
        for i in range(k + 2, N):
            u, w = A[i, k] / piv, A[i, k + 1] / piv
            for j in range(i + 1, N):
                v = A[i, j] + u * A[k + 1, j] - w * A[k, j]
                A[i, j] = v
                A[j, i] = -v
                if abs(v) > best:
                    best, bi, bj = abs(v), i, j
    return logabs, sign


def pfaffian_complete(A: np.ndarray) -> tuple[float, float]:
    check("torus Pfaffian")
    lp, s = _pf_complete(np.array(A, dtype=np.float64))
    return float(lp), float(s)


def torus_class_logs(log_xh, log_xv, t, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(log W[a, b], relative error estimate per class) of the T-join class sums (torus_tjoin), each
    Pfaffian computed twice: on A and on P A P^T for a random node permutation P (other pivots, other
    rounding). The estimate is d exp(log max|Pf| - log W), d their largest disagreement relative to
    max|Pf| (at least N eps): the spread of the rounding, not a proof."""
    pfs: list = []
    rng = np.random.default_rng(seed)

    def both(A):
        one = pfaffian_complete(A)
        perm = rng.permutation(A.shape[0])
        sgn = 1.0 if (A.shape[0] - _cycle_count(perm)) % 2 == 0 else -1.0   # Pf(P A P^T) = det P Pf A
        lp, s = pfaffian_complete(A[np.ix_(perm, perm)])
        pfs.append((one, (lp, s * sgn)))
        return one

    W, top = _tt_class_logs(log_xh, log_xv, t, both)
    d = (6 * np.size(t) + int(np.sum(t))) * 2.2e-16
    for (l1, s1), (l2, s2) in pfs:        # disagreement relative to the largest sector: a sector near 0
        d = max(d, abs(s1 * np.exp(l1 - top) - s2 * np.exp(l2 - top)))   # (Kaufman's Z4 at T_c) adds little
    with np.errstate(over="ignore", invalid="ignore"):
        err = np.where(np.isfinite(W), d * np.exp(np.minimum(top - W, 700.0)), np.inf)
    return W, err


def _cycle_count(perm: np.ndarray) -> int:
    seen = np.zeros(len(perm), bool)
    count = 0
    for s in range(len(perm)):
        if not seen[s]:
            count += 1
            x = s
            while not seen[x]:
                seen[x] = True
                x = perm[x]
    return count


def _torus_couplings(model: IsingModel):
    lat = model.lattice
    R, C = lat.rows, lat.cols
    edges, J = model.couplings
    n = model.n
    key = edges[:, 0] * n + edges[:, 1]
    site = np.arange(n)
    r, c = np.divmod(site, C)

    def lookup(u, v):
        k = np.minimum(u, v) * n + np.maximum(u, v)
        return J[np.searchsorted(key, k)]
    Kh = model.beta * lookup(site, r * C + (c + 1) % C).reshape(R, C)
    Kv = model.beta * lookup(site, ((r + 1) % R) * C + c).reshape(R, C)
    return Kh, Kv


def torus_dual(Kh: np.ndarray, Kv: np.ndarray):
    """(log x of dual h-edges, of dual v-edges, terminals, class (a, b) of U_0) for couplings K on the
    torus: x = exp(-2|K|), terminals the frustrated plaquettes."""
    neg_h, neg_v = (Kh < 0).astype(np.int64), (Kv < 0).astype(np.int64)
    log_xhd = -2.0 * np.abs(np.roll(Kv, -1, axis=1))          # hd(r, c) <-> v(r, c + 1)
    log_xvd = -2.0 * np.abs(np.roll(Kh, -1, axis=0))          # vd(r, c) <-> h(r + 1, c)
    t = (neg_h + np.roll(neg_h, -1, axis=0) + neg_v + np.roll(neg_v, -1, axis=1)) % 2
    cls = (int(neg_v[:, 0].sum() % 2), int(neg_h[0, :].sum() % 2))   # hd(r, C-1) <-> v(r, 0); vd(R-1, c) <-> h(0, c)
    return log_xhd, log_xvd, t, cls


def torus_pfaffian_applies(model: IsingModel) -> str | None:
    lat = model.lattice
    if lat is None or not lat.torus:
        return "needs a torus lattice hint (periodic rows and columns)"
    if lat.rows < 3 or lat.cols < 3:
        return f"the torus needs both sides >= 3 (got {lat.rows} x {lat.cols})"
    if any(a != 0.0 for _, a in model.rank_one) or any(w != 0.0 for _, w in model.higher_order):
        return "has rank-one or many-spin couplings"
    if model.has_fields:
        return "has nonzero fields"
    edges, _ = model.couplings
    if edges.shape != (2 * model.n, 2) or not np.array_equal(edges, _torus_pairs(lat.rows, lat.cols)):
        return "couplings are not exactly the nearest-neighbour pairs of the torus"
    if model.n > MAX_SPINS:
        return f"sparse Pfaffians of ~{6.1 * model.n:.0f} nodes: n = {model.n} > {MAX_SPINS}"
    w = np.exp(-2.0 * np.abs(model.beta * np.asarray(model.couplings[1], dtype=np.float64)))
    if np.any((w > 0.0) & (w < MIN_WEIGHT)):
        return (f"beta|J| up to {-0.5 * np.log(w[w > 0.0].min()):.4g}: weights exp(-2 beta|J|) between 0 and "
                f"2^-500, whose products leave float64's range in the elimination (values measured wrong at "
                f"beta|J| = 184); the transfer matrix answers small tori")
    return None


ROUTES = ("auto", "dense", "sparse")


def torus_pfaffian_log_z(model: IsingModel, route: str = "auto") -> float:
    """Exact natural log Z (constant included) of a zero-field nearest-neighbour torus, any couplings.
    route: "dense", "sparse", or "auto" (dense up to DENSE_MAX_SPINS)."""
    if route not in ROUTES:
        raise ValueError(f"unknown route {route!r}; choose one of {', '.join(ROUTES)}")
    reason = torus_pfaffian_applies(model)
    if reason is not None:
        raise TooLarge(reason) if model.n > MAX_SPINS else NotApplicable(reason)
    Kh, Kv = _torus_couplings(model)
    log_xhd, log_xvd, t, (a, b) = torus_dual(Kh, Kv)
    if route == "dense" or (route == "auto" and model.n <= DENSE_MAX_SPINS):
        W, err = torus_class_logs(log_xhd, log_xvd, t)
    else:
        affordable(SPARSE_S_AT_4096 * (model.n / 4096.0) ** 1.5, f"the sparse torus Pfaffians of {model.n} spins")
        W, err = sparse_class_logs(log_xhd, log_xvd, t)
    if not np.isfinite(W[a, b]):
        raise OutOfRange("torus_pfaffian: the class asked for came out as 0 (cancelled by the other "
                         "classes, or its weights underflowed in the elimination)")
    if not err[a, b] <= CERTIFIED:
        raise OutOfRange(f"torus_pfaffian: the class asked for is {np.exp(-min(700.0, np.max(W) - W[a, b])):.2g} "
                         f"of the largest; its four-sector sum is certain only to {err[a, b]:.2g} relative (> {CERTIFIED:g})")
    return float(np.log(2.0) + np.abs(Kh).sum() + np.abs(Kv).sum() + W[a, b] + model.beta * model.constant)
