"""Boundary-MPS contraction with bond dimension chi: an APPROXIMATION of log Z with a control parameter,
exact once chi reaches the sweep's largest Schmidt rank (for planar and near-planar models).

Convention: the runtime model's dimensionless weights, W(s) = sum_f K_f prod_{i in f} s_i, Z = sum_s
exp(W(s)), natural logs; the value is log Z without the model's ``log_shift`` (the program adds it).

The spins are taken one at a time along an order with a small frontier (the spins' own numbering, or
scipy's reverse Cuthill-McKee order of the interaction graph, whichever keeps fewer spins open at once:
a row of an L x L grid, two rows of a torus). The partial sum over the spins already summed out is a
function of the open spins, held as a matrix product state over them, sites in the order they opened:

1. a spin opens as a new site on the right with the all-ones vector;
2. a term is applied once its last spin is open: exp(K prod s) = sum_c wt(c) [prod s = (-1)^c] is a
   diagonal operator of bond dimension 2 across the sites between its first and last spin (the bond
   carries the running parity c; wt(c) = exp(K (1 - 2c) - |K|) >= 0, the |K| taken into a log scale,
   so no weight cancels or overflows at any temperature);
3. a spin whose terms are all applied is summed out (its site contracted with (1, 1) into a neighbour);
4. when a bond exceeds chi, the state is brought to left-canonical form (QR, left to right) and
   truncated to its chi largest singular values (SVD, right to left); the norms go into the log scale.

With chi at least the largest Schmidt rank the contraction is exact up to rounding (while beta |J| stays
below about 10: colder, the QR and SVD that remove redundant bonds mix weights exp(-2 beta |J|) apart and
rounding loses the small ones, which later terms can make dominant), so the values at
increasing chi converge to log Z (Bravyi, Suchara and Vargo 2014; Chubb and Flammia 2021 for general
tensor networks). The program returns [[chi, value], ...] for its ladder of chi, the last the
estimate; the change between the last two is its evidence of convergence, not a bound. A chi whose
truncated sum came out non-positive (cold frustrated models, where states the truncation dropped become
the ground states later) gives no value and is left out of the list.
Cost O(n w chi^3) for a frontier of w spins: O(n^1.5) on a 2D lattice at fixed chi.
"""

from __future__ import annotations

import sys

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import reverse_cuthill_mckee

from search.derivation.solvers import register_answer
from search.derivation.solvers.adapters import ModuleSolver

NAME = "boundary_mps"
ANSWER = "approximation"
CONTROL = "chi"
ORDER = 30                 # where answers.py tries it among the answer solvers
CHEAP = False
SUMMARY = "boundary-MPS contraction along a sweep, bond dimension chi (an approximation, exact as chi grows)"
OPTION_SPACE = {"chis": ((4, 8, 16), (2, 4, 8), (8, 16, 32), (16, 32, 64)), "order": ("auto", "index", "rcm")}
#: the largest bond a ladder is extended to when truncation left fewer than two values (cold, frustrated)
MAX_EXTRA_CHI = 512
CONSTANTS = f"MAX_EXTRA_CHI = {MAX_EXTRA_CHI}\n"
IMPORTS = """\
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import reverse_cuthill_mckee
"""


def _mps_terms(model):
    """[(spins tuple, K)] of every term (fields included); ValueError on a rank-one block."""
    if model["rank_one"]:
        raise ValueError("the boundary MPS here takes terms, not rank-one blocks")
    out = []
    for idx, w in model["terms"]:
        out += list(zip(map(tuple, np.asarray(idx, dtype=np.int64).tolist()), np.asarray(w, dtype=float).tolist()))
    return out


def _mps_schedule(n, terms, order):
    """(pos (n,), term time (T,), last (n,), open count per step (n,)): spin i opens at step pos[i], a term
    is applied at the step its last spin opens, spin i is summed out after step last[i]."""
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    when = np.array([max(pos[i] for i in s) for s, _ in terms], dtype=np.int64)
    last = pos.copy()
    for (s, _), t in zip(terms, when.tolist()):
        for i in s:
            last[i] = max(last[i], t)
    opened = np.cumsum(np.bincount(pos, minlength=n))
    closed = np.cumsum(np.bincount(last, minlength=n))
    return pos, when, last, opened - closed + np.bincount(last, minlength=n)


def _mps_order(n, terms, how):
    """The sweep order: the spins' numbering, reverse Cuthill-McKee, or ("auto") the narrower of the two."""
    a = [i for s, _ in terms for i in s for j in s if i != j]
    b = [j for s, _ in terms for i in s for j in s if i != j]
    if how == "index" or not a:
        return np.arange(n)
    g = coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n)).tocsr()
    rcm = np.asarray(reverse_cuthill_mckee(g, symmetric_mode=True), dtype=np.int64)
    if how == "rcm":
        return rcm
    plain = np.arange(n)
    width = [int(_mps_schedule(n, terms, o)[3].max()) for o in (plain, rcm)]
    return plain if width[0] <= width[1] else rcm


def _mps_apply(A, where, K):
    """exp(K prod s) on the sites at positions ``where`` (sorted): returns the log scale taken out (the
    last site is renormalised, so no run of cold terms underflows)."""
    a, b = where[0], where[-1]
    wt = np.exp(np.array([K, -K]) - abs(K))
    flip = np.array([0, 1])                      # index 0 is s = +1, 1 is s = -1: the parity bit
    inside = set(where)
    for q in range(a, b + 1):
        cl, cr = (1 if q == a else 2), (1 if q == b else 2)
        W = np.zeros((cl, 2, 2))
        for c in range(cl):
            for s in range(2):
                W[c, s, c ^ flip[s] if q in inside else c] = 1.0
        if q == b:
            W = (W @ wt).reshape(cl, 2, 1)
        else:
            W = W[:, :, :cr]
        Dl, _, Dr = A[q].shape
        A[q] = np.einsum("lsr,csd->lcsrd", A[q], W).reshape(Dl * cl, 2, Dr * W.shape[2])
    top = float(np.max(np.abs(A[b])))       # one cold term can take every weight down by exp(-2|K|)
    if top > 0:
        A[b] = A[b] / top
    return abs(K) + (float(np.log(top)) if top > 0 else 0.0)


def _mps_compress(A, chi):
    """Truncate every bond to chi (left-canonical QR sweep, then SVD right to left); the log scale out."""
    scale = 0.0
    if max(t.shape[2] for t in A) > chi:
        for q in range(len(A) - 1):
            Dl, _, Dr = A[q].shape
            Q, R = np.linalg.qr(A[q].reshape(Dl * 2, Dr))
            A[q] = Q.reshape(Dl, 2, Q.shape[1])
            A[q + 1] = np.tensordot(R, A[q + 1], axes=(1, 0))
        for q in range(len(A) - 1, 0, -1):
            Dl, _, Dr = A[q].shape
            U, S, Vh = np.linalg.svd(A[q].reshape(Dl, 2 * Dr), full_matrices=False)
            k = max(1, min(chi, int(np.sum(S > S[0] * 1e-15)))) if S[0] > 0 else 1
            A[q] = Vh[:k].reshape(k, 2, Dr)
            A[q - 1] = np.tensordot(A[q - 1], U[:, :k] * S[:k], axes=(2, 0))
    for q in range(len(A)):
        top = float(np.max(np.abs(A[q])))
        if top > 0:
            A[q] = A[q] / top
            scale += np.log(top)
    return scale


def _mps_log_z(model, chi, order):
    """log Z (without the shift) by the boundary MPS of bond dimension chi along ``order``."""
    n = int(model["n"])
    terms = _mps_terms(model)
    pos, when, last, _ = _mps_schedule(n, terms, order)
    by_step = [[] for _ in range(n)]
    for k, t in enumerate(when.tolist()):
        by_step[t].append(k)
    ends = [[] for _ in range(n)]
    for i in np.argsort(pos[np.arange(n)], kind="stable").tolist():
        ends[int(last[i])].append(i)
    A, sites, log_z = [], [], 0.0
    for t in range(n):
        A.append(np.ones((1, 2, 1)))
        sites.append(int(order[t]))
        at = {s: q for q, s in enumerate(sites)}
        for k in by_step[t]:
            spins, K = terms[k]
            log_z += _mps_apply(A, sorted(at[i] for i in spins), K)
        for i in ends[t]:
            q = sites.index(i)
            M = A[q].sum(axis=1)
            del A[q], sites[q]
            if q > 0:
                A[q - 1] = np.tensordot(A[q - 1], M, axes=(2, 0))
            elif A:
                A[0] = np.tensordot(M, A[0], axes=(1, 0))
            else:
                value = float(M[0, 0])
                if not value > 0.0:
                    raise FloatingPointError(f"the truncated contraction at chi = {chi} lost positivity")
                log_z += np.log(value)
        if A:
            log_z += _mps_compress(A, chi)
    return float(log_z)


def _sol_boundary_mps(model, options):
    """[[chi, log Z at chi], ...] for the ladder of bond dimensions (without the model's shift); a chi whose
    truncation lost the sum's positivity (cold frustrated models at small chi) is left out, not guessed."""
    n = int(model["n"])
    order = _mps_order(n, _mps_terms(model), options.get("order", "auto"))
    out = []
    chis = [int(c) for c in options.get("chis", (4, 8, 16))]
    for chi in chis:
        try:
            out.append([chi, _mps_log_z(model, chi, order)])
        except FloatingPointError:          # truncated too hard to keep a positive sum: no value at this chi
            continue
    # fewer than two values is no evidence: double chi until there are two, up to the width where nothing is
    # truncated (chi = 2^frontier: exact, so a value exists) or MAX_EXTRA_CHI
    width = int(np.max(_mps_schedule(n, _mps_terms(model), order)[3])) if n else 0
    chi = max(chis) if chis else 1
    while len(out) < 2 and chi < min(2 ** width, MAX_EXTRA_CHI):
        chi *= 2
        try:
            out.append([chi, _mps_log_z(model, chi, order)])
        except FloatingPointError:
            continue
    return out


FUNCTIONS = (_mps_terms, _mps_schedule, _mps_order, _mps_apply, _mps_compress, _mps_log_z, _sol_boundary_mps)
ENTRY = _sol_boundary_mps


def applies(view) -> str | None:
    if view.kind != "model":
        return "there is no spin model yet"
    if view.statistic != "log_z":
        return "it approximates log Z, not a mean energy"
    if view.rank_one:
        return "the model has a rank-one block"
    if view.family is not None and view.family.pathwidth_growth not in ("bounded", "sqrt"):
        return (f"the sweep frontier grows {view.family.pathwidth_growth}ly with n: not a planar or near-planar "
                "model, where a boundary MPS converges at moderate chi")
    return None


def claims(view, options):
    growth = view.family.pathwidth_growth if view.family is not None else "sqrt"
    cost = {"bounded": "O(n)", "sqrt": "O(n^1.5)"}.get(growth, "O(n^2)")
    chis = tuple(options.get("chis", (4, 8, 16)))
    return (("no_efficient_known",), cost,
            f"An approximation with a control parameter, not an exact value: a boundary matrix product state swept "
            f"along the order of smallest frontier, bonds truncated to chi by SVD, at chi = {chis}; exact once chi "
            f"reaches the largest Schmidt rank, so the change between the last two values is the evidence of "
            f"convergence. Cost O(n w chi^3) for a frontier of w spins ({growth} in n here): {cost} at fixed chi.", 0)


register_answer(ModuleSolver(sys.modules[__name__]))
