"""Kaufman's exact Z of the zero-field nearest-neighbour Ising model on an R x C torus, with one
coupling K_h > 0 along the rows and one K_v > 0 between them (Kaufman, Phys. Rev. 76, 1232 (1949);
the anisotropic form as in McCoy and Wu, The Two-Dimensional Ising Model, ch. V).

The row-to-row transfer matrix over the C spins of a row, diagonalised by Jordan-Wigner fermions,
splits into the periodic and antiperiodic sectors; with K* the dual coupling, tanh K* = exp(-2K):

    Z = 1/2 (2 sinh 2K_v)^(RC/2) (Z1 + Z2 + Z3 + Z4)
    Z1 = prod_{l odd} 2 cosh(R g_l / 2)    Z2 = prod_{l odd} 2 sinh(R g_l / 2)      (l = 1, 3, ..., 2C - 1)
    Z3 = prod_{l even} 2 cosh(R g_l / 2)   Z4 = prod_{l even} 2 sinh(R g_l / 2)     (l = 0, 2, ..., 2C - 2)
    cosh g_l = cosh 2K_v* cosh 2K_h - sinh 2K_v* sinh 2K_h cos(pi l / C)

g_l > 0 for l != 0 while g_0 = 2 (K_h - K_v*) keeps its sign: Z4 < 0 above the critical point, 0 at it
(the signed zero mode; its absolute value is wrong above T_c by a term that vanishes only as C grows).
Written as cosh g_l - 1 = 2 sinh^2(K_h - K_v*) + 2 (sinh 2K_h / sinh 2K_v) sin^2(pi l / 2C) there is no
cancellation near T_c, and every quantity is carried as a logarithm (log 2cosh x = |x| + log1p(e^(-2|x|)),
log|2 sinh x| = |x| + log(-expm1(-2|x|)), a signed log-sum-exp), so it is exact to rounding at every
K > 0, cold or critical. Cost O(R + C) after the O(n) check that the model is that torus.
"""

from __future__ import annotations

import sys

import numpy as np

from search.derivation.runtime import _rt_torus_bonds
from search.derivation.solvers import register
from search.derivation.solvers.adapters import ModuleSolver

NAME = "kaufman"
SUMMARY = "Kaufman's four-sector product formula for the homogeneous nearest-neighbour torus"
OPTION_SPACE: dict = {}
ORDER = 20                 # where a derivation search tries it among the solvers
CHEAP = True                 # its code is tried on every state the view holds
IMPORTS = """\
import numpy as np
"""


def _sol_kaufman_log2cosh(x):
    ax = np.abs(x)
    return ax + np.log1p(np.exp(-2.0 * ax))


def _sol_kaufman_log2sinh(x):
    """log |2 sinh x| (-inf at x = 0)."""
    ax = np.abs(np.asarray(x, dtype=np.float64))
    with np.errstate(divide="ignore"):
        return ax + np.log(-np.expm1(-2.0 * ax))


def _sol_kaufman_dual(K):
    """K* with tanh K* = exp(-2K), for K > 0: (log1p(e^(-2K)) - log(1 - e^(-2K)))/2."""
    return 0.5 * (np.log1p(np.exp(-2.0 * K)) - np.log(-np.expm1(-2.0 * K)))


def _sol_kaufman_gamma(log_x):
    """arccosh(1 + x) from log x, for tiny and huge x alike."""
    log_x = np.asarray(log_x, dtype=np.float64)
    small = log_x < 0.0
    x = np.exp(np.where(small, log_x, 0.0))
    t = np.exp(-np.where(small, 0.0, log_x))
    return np.where(small, np.log1p(x + np.sqrt(x * (x + 2.0))), log_x + np.log(1.0 + t + np.sqrt(1.0 + 2.0 * t)))


def _sol_kaufman_torus(Kh, Kv, R, C):
    """Natural log Z of the R x C torus with row coupling Kh > 0 and column coupling Kv > 0."""
    d = Kh - _sol_kaufman_dual(Kv)                      # K_h - K_v*: g_0 = 2 d, zero at the critical point
    log_ratio = (_sol_kaufman_log2sinh(2.0 * Kh) - _sol_kaufman_log2sinh(2.0 * Kv))
    l = np.arange(1, 2 * C, dtype=np.float64)
    log_a = np.log(2.0) + 2.0 * (_sol_kaufman_log2sinh(d) - np.log(2.0))      # 2 sinh^2 d
    log_b = np.log(2.0) + log_ratio + 2.0 * np.log(np.sin(np.pi * l / (2.0 * C)))
    gam = _sol_kaufman_gamma(np.logaddexp(log_a, log_b))
    half_odd = 0.5 * R * gam[0::2]                      # l = 1, 3, ..., 2C - 1
    half_even = 0.5 * R * gam[1::2]                     # l = 2, 4, ..., 2C - 2
    half_0 = R * d                                      # R g_0 / 2, signed
    logs = np.array([_sol_kaufman_log2cosh(half_odd).sum(), _sol_kaufman_log2sinh(half_odd).sum(),
                     _sol_kaufman_log2cosh(half_even).sum() + _sol_kaufman_log2cosh(half_0),
                     _sol_kaufman_log2sinh(half_even).sum() + _sol_kaufman_log2sinh(half_0)])
    signs = np.array([1.0, 1.0, 1.0, np.sign(half_0)])
    keep = (signs != 0.0) & np.isfinite(logs)
    top = logs[keep].max()
    total = float(np.sum(signs[keep] * np.exp(logs[keep] - top)))
    if not total > 0.0:
        raise FloatingPointError("the Kaufman sum is not positive")
    return -np.log(2.0) + 0.5 * R * C * _sol_kaufman_log2sinh(2.0 * Kv) + top + np.log(total)


def _sol_kaufman(model, options):
    """log Z (without the model's shift) of a zero-field nearest-neighbour torus with one coupling per
    direction; ValueError when the model is anything else."""
    n = model["n"]
    if not model["rank_one"] and all(not np.any(w != 0.0) for _, w in model["terms"]):
        return n * float(np.log(2.0))                    # beta = 0: no term is left, every state weighs 1
    try:
        R, C, Kh, Kv = _rt_torus_bonds(model)
    except ValueError as exc:
        raise ValueError(f"Kaufman's formula needs a zero-field nearest-neighbour torus: {exc}") from None
    if not (np.all(Kh == Kh[0]) and np.all(Kv == Kv[0])) or Kh[0] <= 0.0 or Kv[0] <= 0.0:
        raise ValueError("Kaufman's formula needs one positive coupling per direction")
    return float(_sol_kaufman_torus(float(Kh[0]), float(Kv[0]), R, C))


FUNCTIONS = (_sol_kaufman_log2cosh, _sol_kaufman_log2sinh, _sol_kaufman_dual, _sol_kaufman_gamma,
             _sol_kaufman_torus, _sol_kaufman)
ENTRY = _sol_kaufman


def applies(view) -> str | None:
    if view.kind != "model":
        return "there is no spin model yet"
    if view.accepts.get(NAME, "") is not None:      # the view's trial of this solver's code on every state
        return view.accepts.get(NAME) or "not a homogeneous ferromagnetic nearest-neighbour torus"
    return None


def claims(view, options) -> tuple[tuple[str, ...], str, str, int]:
    """(class labels, complexity, justification, cost rank)."""
    return (("free_fermion", "pfaffian", "transfer_matrix"), "O(n)",
            "The model is the zero-field nearest-neighbour torus with one positive coupling per direction. Its "
            "row-to-row transfer matrix is a free-fermion operator (Jordan-Wigner) diagonalised in closed form, "
            "and Kaufman's formula sums "
            "the four periodic/antiperiodic sectors as products over the 2C fermion modes, in logs with the "
            "signed zero mode: O(R + C) after the O(n) check of the couplings, exact at every temperature.", 0)


register(ModuleSolver(sys.modules[__name__]))
