"""Exact log Z of planar zero-field pairwise Ising models with arbitrary couplings.

Conventions as in :mod:`tasks.model`: H(s) = -(constant + sum J_e s_u s_v), couplings in energy
units, K_e = beta J_e with beta = model.beta; every function returns the NATURAL log of Z.

Two exact forms:

- "low_t" (the default): domain walls. Z = 2^components exp(sum |K_e|) * (sum over T-joins U
  of the dual graph, T = frustrated faces, of prod_{e in U} exp(-2|K_e|)), a sum of POSITIVE
  terms, written as the Pfaffian of a Kasteleyn matrix on an expanded dual graph
  (:mod:`evaluators.oracles.dual_pfaffian`) and evaluated by a sparse multifrontal skew
  elimination with threshold 2 x 2 pivoting (:mod:`evaluators.oracles.linalg.skew_pfaffian`). Needs
  only the rotation system of the embedding, not coordinates.
- "high_t": the Kac-Ward determinant (:mod:`evaluators.oracles.kac_ward`), weights tanh K_e with
  turning-angle phases of a straight-line drawing, SuperLU. Kept as an independent check.

Why "low_t" and how precision is kept. The high-temperature sum has terms of both signs when
the model is frustrated; at low temperature it is exponentially smaller than its terms and
float64 loses it (+-J 16 x 16: error in ln Z 7e-8 at beta = 4, 9e-3 at beta = 6, 12 at beta = 8).
The low-temperature sum has no such cancellation in exact arithmetic, but its evaluation still
matters: an LU with static ordering (SuperLU, LAPACK) loses everything at beta = 8, and even a
skew elimination with pivoting by size loses about eps * exp(3.5 beta |J|) when degenerate
couplings make leading orders cancel (up to 3e-4 in ln Z on 12 x 12 +-J at beta = 8, a few
percent of instances). So the elimination runs in float64 while beta * max|J| <= 3 (measured
error <= 1e-11 in ln Z up to beta |J| = 4, 256 x 16 strips included) and in double-double
arithmetic beyond (measured <= 5e-11 in ln Z at beta = 8 and 16 on the same instances; about 3x
the float64 CPU time at L = 256). "auto" is "low_t" with that choice of arithmetic. Above
beta |J| = ln(1/u)/2 ~ 2.3 (weights below the pivot threshold) the elimination uses the cold
layout of :mod:`evaluators.oracles.linalg.skew_pfaffian` (fewer delayed pivots; same values).

Not a way out (measured, not kept): rescaling rows and columns by a ground-state matching
(minimum-weight T-join by PyMatching, wall ports scaled by exp(|K|)) to free float64 of the
cancellation. A diagonal scaling cannot make every entry <= 1 with the ground-state matching at
1 here: a triangle unit is an odd cycle, so the bound needs blossom (odd-set) terms that no
row/column scaling expresses, and the scaled matrix keeps entries up to exp(2|K|). At beta = 8
the float64 error moved from 7e-5 / 2e-4 / 9e-5 to 2e-6 / 4e-5 / 1e-3 (P04 64 seeds 0, 1; 128).

Colder, fixed precision runs out: with equal |J| (+-J) terms exp(-4 beta |J|) fall below the
double-double unit roundoff and are absorbed into O(1) entries whose leading orders then cancel,
so ground states go missing (12 x 12 +-J, beta = 40: -ln 0.7 in ln Z, double and double-double
alike), and from beta |J| ~ 180 products of two weights leave the float64 exponent range (the
matrix turns singular). Above COLD_GUARD_ABOVE (12; 40 for mostly distinct couplings) the
elimination therefore carries a running error bound on every entry
(:func:`evaluators.oracles.linalg.skew_pfaffian.log_abs_pfaffian_bounded`) and its value is used only if
the bound is below 1e-9. Otherwise (and beyond beta |J| = 350) couplings that are integer
multiples of one unit go to their ground-state line (:mod:`evaluators.oracles.planar_cold`: two
certified evaluations at reference temperatures fix E0 on its lattice and bracket log g and the
remaining excitations rigorously); anything else is refused (TooLarge, so the registry hands
over). The bound is rigorous to first order but pessimistic on large grids (3e-4 on 64 x 64 +-J
where the value is right), so there the cold refusal stays.

Embedding: ``model.embedding()`` (explicit positions, or an open lattice) when its angular
rotation system passes Euler's formula, else networkx's planarity test (with a Chrobak-Payne
straight-line drawing when "high_t" needs coordinates). Non-planar graphs, fields, k >= 3-spin
terms and rank-one blocks are not applicable.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.sparse.linalg import splu

from evaluators.oracles.base import NotApplicable, TooLarge
from evaluators.oracles.dual_pfaffian import FACE_GROUP_UNITS, dual_pfaffian_matrix
from evaluators.oracles.kac_ward import kac_ward_matrix
from evaluators.oracles.budget import affordable, check, remaining
from evaluators.oracles.planar_cold import cold_limit_log_z, commensurate_multiples
from evaluators.oracles.planar_ground import MILP_TIME_S, min_t_join
from evaluators.oracles.transfer_matrix import DEFAULT_MAX_WIDTH as TM_MAX_WIDTH
from evaluators.oracles.planar_embedding import planar_embedding, planarity_reason
from evaluators.oracles.linalg.skew_pfaffian import (PIVOT_THRESHOLD, PfaffianSettings, log_abs_pfaffian,
                                                     log_abs_pfaffian_bounded)
from tasks.model import IsingModel

METHODS = ("auto", "high_t", "low_t")
PRECISIONS = ("auto", "double", "double-double")
#: above this beta * max|J| the low-temperature elimination runs in double-double arithmetic
DOUBLE_DOUBLE_ABOVE = 3.0
#: above this beta * max|J| weights exp(-2 beta |J|) fall below the pivot threshold u (0.01)
#: relative to weight-1 entries, and the dissection's separators leave each cut face group an
#: even remainder (:mod:`evaluators.oracles.linalg.skew_pfaffian`, the cold layout; below it they only
#: grow the fronts: P04 L = 256 float64 CPU 1.07 -> 1.24 s at beta = 1.5, 2.10 -> 1.45 s at 2.5)
EVEN_SEPARATORS_ABOVE = 0.5 * math.log(1.0 / PIVOT_THRESHOLD)
#: beyond this beta * max|J| the weights exp(-2 beta |J|) underflow float64
MAX_BETA_J = 350.0
#: above this beta * max|J| double-double can lose the ground-state count itself (measured: a
#: 12 x 12 +-J grid at beta = 40 comes out 0.357 = -ln 0.7 low in log Z, in float64 and in
#: double-double alike: terms exp(-4 beta |J|) < 1e-32 are absorbed into O(1) entries whose
#: leading orders then cancel); there the elimination runs with a running error bound and the
#: result is refused unless the bound is below COLD_TOLERANCE. Exact cancellation needs equal
#: |J| (+-J, ferro); with couplings that are mostly distinct the guard starts higher
#: (double-double measured right to 1e-12 on Gaussian 16 x 16 at beta = 8, beta max|J| ~ 28)
COLD_GUARD_ABOVE = 12.0
COLD_GUARD_DISTINCT_ABOVE = 40.0
COLD_TOLERANCE = 1e-9
#: the running bound's pessimism grows with the grid (+-J: certified to 1e-9 on 32 x 32, 1984
#: edges; 3e-4 at beta = 8 and 1e7 at beta = 20 on 64 x 64): beyond this many edges in cycles the
#: cold attempts (several bounded eliminations, minutes at L = 256) are not made
CERTIFY_MAX_EDGES = 4096
#: seconds of a 256 x 256 +-J grid in double-double (measured 2.5-2.6 s, README), the time budget's
#: prediction scaling it as n^1.5
PLANAR_S_AT_65536 = 3.0


def _structure_reason(model: IsingModel) -> str | None:
    if model.rank_one:
        return "rank-one (all-to-all) blocks are not planar"
    if not model.is_pairwise:
        return "terms on three or more spins are not pairwise couplings"
    if model.has_fields:
        return "nonzero fields: the planar determinant needs zero field"
    return None


def ghost_spin_model(model: IsingModel) -> IsingModel:
    """The zero-field model of n + 1 spins in which each field h_i of ``model`` (pairwise, no rank-one
    blocks) is a coupling of spin i to a new spin n: its Z is 2 Z(model) (summing the new spin gives
    Z(h) + Z(-h), and the global flip maps one onto the other). No positions: the new spin's place in a
    drawing is networkx's to find, if the graph is still planar (fields on one face's spins only)."""
    edges, J = model.couplings
    h = model.fields
    at = np.flatnonzero(h)
    ghost = np.stack([at, np.full(len(at), model.n)], 1)
    return IsingModel.from_arrays(model.n + 1, model.beta, np.concatenate([edges, ghost]), np.concatenate([J, h[at]]),
                                  constant=model.constant)


def planar_applies(model: IsingModel) -> str | None:
    """None when :func:`planar_log_z` applies (zero field, pairwise, planar), else the reason."""
    reason = _structure_reason(model)
    if reason is not None:
        return reason
    edges, _ = model.couplings
    return planarity_reason(model.n, edges, model.embedding())


def planar_fields_applies(model: IsingModel) -> str | None:
    """None when :func:`planar_fields_log_z` applies: pairwise, with fields, planar with a ghost spin
    in their place (fields only on the spins of one face), and, cold, only fields commensurate with
    the couplings (the cold route's ground-state line needs a common unit); else the reason."""
    if model.rank_one or not model.is_pairwise:
        return _structure_reason(model)
    if not model.has_fields:
        return "no fields: the zero-field planar method takes the model as it is"
    ghost = ghost_spin_model(model)
    if planarity_reason(ghost.n, ghost.couplings[0], None) is not None:
        return "with a ghost spin in place of the fields the interaction graph is not planar"
    K = np.abs(ghost.beta * ghost.couplings[1])
    if _needs_cold_guard(K) and commensurate_multiples(K) is None:
        return (f"at beta|J| = {float(K.max()):.4g} the couplings and fields have no common unit, so the cold "
                f"route has no ground-state line to certify")
    return None


def planar_fields_log_z(model: IsingModel, precision: str = "auto", threads: int | None = None) -> float:
    """Natural log Z at model.beta of a pairwise model whose fields lie on one face: the planar log Z
    of :func:`ghost_spin_model` minus log 2. NotApplicable as :func:`planar_fields_applies` says."""
    reason = planar_fields_applies(model)
    if reason is not None:
        raise NotApplicable(reason)
    return planar_log_z(ghost_spin_model(model), "auto", precision, threads) - math.log(2.0)


def planar_inputs(model: IsingModel, method: str):
    """What the planar methods start from: (the interaction graph's planar embedding, K = beta J
    per edge in the embedding's edge order, the log-Z shift beta * constant, the method with "auto"
    resolved). NotApplicable when the model is not planar (:func:`planar_applies`)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    reason = _structure_reason(model)
    if reason is not None:
        raise NotApplicable(reason)
    method = "low_t" if method == "auto" else method
    edges, J = model.couplings
    emb = planar_embedding(model.n, edges, model.embedding(), need_positions=(method == "high_t"))
    return emb, model.beta * J, model.beta * model.constant, method


def uses_double_double(model: IsingModel, precision: str = "auto") -> bool:
    """Whether the low-temperature elimination runs in double-double arithmetic."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    if precision != "auto":
        return precision == "double-double"
    _, J = model.couplings
    return bool(len(J)) and abs(model.beta) * float(np.abs(J).max()) > DOUBLE_DOUBLE_ABOVE


def log_abs_det_sparse(M) -> float:
    """ln |det M| by SuperLU (COLAMD ordering; sum of ln |pivots|)."""
    if M.shape[0] == 0:
        return 0.0
    lu = splu(M.tocsc(), permc_spec="COLAMD")
    return float(np.log(np.abs(lu.U.diagonal())).sum())


def planar_log_z(model: IsingModel, method: str = "auto", precision: str = "auto", threads: int | None = None) -> float:
    """Natural log Z at model.beta.

    method: "auto" / "low_t" (dual Kasteleyn Pfaffian) or "high_t" (Kac-Ward determinant).
    precision (low_t only): "auto" (double-double when beta * max|J| > 3), "double",
    "double-double". threads (low_t): threads of the elimination (None: one for small
    matrices, else the usable cores; the value does not depend on it, see
    :func:`evaluators.oracles.linalg.skew_pfaffian.log_abs_pfaffian`). Raises NotApplicable for fields
    (:func:`planar_fields_log_z` takes fields on one face), k >= 3-spin terms, rank-one blocks or a
    non-planar interaction graph.
    """
    affordable(PLANAR_S_AT_65536 * (model.n / 65536.0) ** 1.5, f"the elimination of {model.n} spins")
    emb, K, shift, method = planar_inputs(model, method)
    if method == "high_t":
        M, pre = kac_ward_matrix(emb, K)
        return shift + pre + 0.5 * log_abs_det_sparse(M)
    walled = np.abs(K[~_bridges(emb)])  # bridges only add log1p(exp(-2|K|)): no limit there
    top = float(walled.max()) if len(walled) else 0.0
    extended = uses_double_double(model, precision)
    if top > MAX_BETA_J or _needs_cold_guard(walled):
        return shift + _cold_log_z(emb, K, top, extended)
    M, pre, unit_ptr, coords = dual_pfaffian_matrix(emb, K)
    value = log_abs_pfaffian(M, unit_ptr, coords, PfaffianSettings(extended=extended, threads=threads,
                                                                   even_separators=top > EVEN_SEPARATORS_ABOVE))
    if not np.isfinite(value):
        raise TooLarge("the dual Kasteleyn matrix came out numerically singular (no acceptable pivot left)")
    return shift + pre + value


def _bridges(emb) -> np.ndarray:
    return emb.face[:emb.m] == emb.face[emb.m:]


def _certified_log_z(emb, K: np.ndarray, extended: bool) -> tuple[float, float]:
    """(log Z of the couplings K, bound on its absolute error) by the bounded elimination."""
    best = (math.nan, math.inf)
    # the bound's pessimism depends on the elimination order: face groups first, single units if
    # that one cannot vouch (each bound is rigorous for its own value; keep the tighter)
    for group_units in (FACE_GROUP_UNITS, 1):
        M, pre, unit_ptr, coords = dual_pfaffian_matrix(emb, K, group_units)
        value, bound = log_abs_pfaffian_bounded(M, unit_ptr, coords, PfaffianSettings(extended=extended))
        # the weights exp(-2|K|) are rounded (<= 2 ulp); d ln Pf / d ln w_e is the probability that
        # e is in the matching (all matchings count positively): that moves ln Pf by <= N/2 * 2^-51
        bound += M.shape[0] * 2.0 ** -52
        if math.isfinite(value) and bound < best[1]:
            best = (pre + value, bound)
        if _vouched(*best):
            break
    return best


def _vouched(value: float, bound: float) -> bool:
    """The error bound is below COLD_TOLERANCE, beyond the float64 rounding of a large log Z."""
    return math.isfinite(value) and bound <= COLD_TOLERANCE + 1e-14 * abs(value)


def _cold_log_z(emb, K: np.ndarray, top: float, extended: bool) -> float:
    """Cold: the elimination's value where its running bound vouches for it, else the
    ground-state line of commensurate couplings (:mod:`evaluators.oracles.planar_cold`); else
    TooLarge naming the limit met, in beta |J|, and what is within reach."""
    walled = ~_bridges(emb)
    n_walled = int(walled.sum())
    lift = (f"within reach: beta|J| <= {COLD_GUARD_ABOVE:g} at this size, or a smaller model (the transfer matrix "
            f"takes any beta up to a frontier of {TM_MAX_WIDTH} spins)")
    if n_walled > CERTIFY_MAX_EDGES:
        raise TooLarge(f"beta|J| = {top:.4g} on {emb.n} spins with {n_walled} couplings in cycles: the certified cold "
                       f"route stops at {CERTIFY_MAX_EDGES} couplings in cycles (about a 46 x 46 grid), since the "
                       f"elimination's running error bound grows with the model (1e7 in log Z on a 64 x 64 +-J grid "
                       f"at beta = 20 where the value is right); {lift}")
    bound = math.inf
    if top <= MAX_BETA_J:
        value, bound = _certified_log_z(emb, K, extended)
        if _vouched(value, bound):
            return value
    # bridges keep their K: they add a constant in t to log Z
    unit = commensurate_multiples(np.abs(K[walled]))
    line = "the couplings are not small integer multiples of one unit, so no ground-state line applies"
    if unit is not None:
        tau, m = unit
        face_a, face_b = emb.face[:emb.m][walled], emb.face[emb.m:][walled]
        negative = (K[walled] < 0).astype(np.float64)

        def at_unit(t: float) -> tuple[float, float]:
            check("the cold line's reference eliminations")
            Kt = K.copy()
            Kt[walled] = np.sign(K[walled]) * m * t
            return _certified_log_z(emb, Kt, True)

        def ground() -> int:
            return min_t_join(face_a, face_b, emb.n_faces, m, negative, min(MILP_TIME_S, max(remaining(), 0.1)))

        limit = cold_limit_log_z(at_unit, m, tau, ground)
        if _vouched(limit.log_z, limit.bound):
            return limit.log_z
        line = limit.why or (f"its ground-state line is bracketed only to {limit.bound:.2g}" if math.isfinite(limit.log_z)
                             else "log Z = -beta E0 + log g itself exceeds double precision (beyond its numerical range)")
    why = (f"the elimination's running error bound is {bound:.2g} in log Z there (> {COLD_TOLERANCE:g})"
           if top <= MAX_BETA_J else f"the weights exp(-2 beta |J|) underflow double precision beyond beta|J| = "
                                     f"{MAX_BETA_J:g}")
    raise TooLarge(f"beta|J| = {top:.4g} on {emb.n} spins ({n_walled} couplings in cycles): not certified: {why}; "
                   f"{line}; {lift}")


def _needs_cold_guard(K: np.ndarray) -> bool:
    if not len(K):
        return False
    top = float(np.abs(K).max())
    degenerate = len(np.unique(np.abs(K))) < len(K) / 2
    return top > (COLD_GUARD_ABOVE if degenerate else COLD_GUARD_DISTINCT_ABOVE)


def planar_dense_baseline_log_z(model: IsingModel, method: str = "auto") -> float:
    """The same log Z from a dense ``np.linalg.slogdet`` of the same matrix (a speed baseline:
    O(size^3) time, O(size^2) memory; it is an LU, so not accurate at low temperature)."""
    emb, K, shift, method = planar_inputs(model, method)
    if method == "high_t":
        M, pre = kac_ward_matrix(emb, K)
    else:
        M, pre, _, _ = dual_pfaffian_matrix(emb, K)
    if M.shape[0] == 0:
        return shift + pre
    return shift + pre + 0.5 * float(np.linalg.slogdet(M.toarray())[1])
