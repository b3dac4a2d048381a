"""Disorder averages of the +-J random-bond Ising model on the L x L torus, on and off the
Nishimori line tanh(beta_N J) = 1 - 2p (H. Nishimori, Prog. Theor. Phys. 66, 1169 (1981)).

Each of the N_B = 2 L^2 bonds is independently J_e = +J with probability 1 - p and -J with
probability p. Two exact identities of the line (any graph, zero field) serve the Tier-2 tasks:

    [<H>]_(beta_N)         = -N_B J (1 - 2p)
    [Z(beta) / Z(beta_N)]  = (cosh(beta J) / cosh(beta_N J))^N_B

``disorder_sums`` evaluates both raw double sums (over all 2^N_B bond configurations and all
2^n spin configurations) for small tori; it is the reference the identities are tested against.

Numerics for every p in (0, 1/2). beta_N J = (log1p(-p) - log p) / 2: atanh(1 - 2p) loses p to
the rounding of 1 - 2p (2e-4 relative at p = 1e-12, a math domain error at p = 1e-17). The ratio
is kept as a log throughout (its log passes 709 at small p, where Z(beta) / Z(beta_N) is huge),
log cosh x = |x| + log1p(exp(-2|x|)) - log 2, and the raw double sum weighs each bond pattern in
logs, relative to its own best spin state, so neither p^k nor exp(-beta_N J E) underflows.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: the raw double sum visits 2^N_B * 2^n terms: N_B = 18 (the 3 x 3 torus) is 1.3e8
BRUTE_MAX_BONDS = 18


#: the Nishimori point of the square-lattice +-J model (toric-code threshold, Hasenbusch et al. 2008)
P_CRITICAL = 0.10919


def nishimori_beta(p: float, J: float) -> float:
    """beta_N with tanh(beta_N J) = 1 - 2p (0 < p < 1/2, J > 0), as (log1p(-p) - log p) / (2 J):
    exact to rounding for every p down to the smallest double."""
    return 0.5 * (math.log1p(-p) - math.log(p)) / J


def log_cosh(x: float) -> float:
    """log cosh x without overflow: |x| + log1p(exp(-2|x|)) - log 2."""
    ax = abs(x)
    return ax + math.log1p(math.exp(-2.0 * ax)) - math.log(2.0)


def check_pj(params: dict) -> tuple[float, float]:
    """(p, J) from a parameter dictionary, or ValueError."""
    try:
        p, J = float(params["p"]), float(params["J"])
    except KeyError as exc:
        raise ValueError(f"missing parameter {exc.args[0]!r}") from None
    except (TypeError, ValueError):
        raise ValueError("parameters 'p' and 'J' must be numbers") from None
    if not 0.0 < p < 0.5:
        raise ValueError(f"parameter 'p' must lie in (0, 0.5), got {p}")
    if not (J > 0.0 and math.isfinite(J)):
        raise ValueError(f"parameter 'J' must be a finite number > 0, got {J}")
    return p, J


def mean_energy(n_bonds: int, p: float, J: float) -> float:
    """[<H>] at beta_N: -N_B J (1 - 2p)."""
    return -n_bonds * J * (1.0 - 2.0 * p)


def log_partition_ratio(n_bonds: int, p: float, J: float, beta: float) -> float:
    """log [Z(beta) / Z(beta_N)] = N_B log(cosh(beta J) / cosh(beta_N J))."""
    return n_bonds * (log_cosh(beta * J) - log_cosh(nishimori_beta(p, J) * J))


def disorder_sums(edges: np.ndarray, n: int, p: float, J: float, beta: float) -> tuple[float, float]:
    """([<H>] at beta_N, [Z(beta) / Z(beta_N)]): ``disorder_log_sums`` with the ratio itself
    (which overflows to inf once its log passes 709: take the log form for small p)."""
    energy, log_ratio = disorder_log_sums(edges, n, p, J, beta)
    return energy, math.exp(log_ratio) if log_ratio < 709.0 else math.inf


def disorder_log_sums(edges: np.ndarray, n: int, p: float, J: float, beta: float) -> tuple[float, float]:
    """([<H>] at beta_N, log [Z(beta) / Z(beta_N)]) by the raw double sum over bonds and spins.

    edges: (N_B, 2) spin pairs; N_B <= BRUTE_MAX_BONDS.
    """
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if len(edges) > BRUTE_MAX_BONDS:
        raise ValueError(f"the raw disorder sum is limited to {BRUTE_MAX_BONDS} bonds, got {len(edges)}")
    spins = 1 - 2 * ((np.arange(1 << n)[:, None] >> np.arange(n)) & 1)
    bond = (spins[:, edges[:, 0]] * spins[:, edges[:, 1]]).astype(np.int64)   # (2^n, N_B) of +-1
    return _gray_disorder(bond, math.log(p), math.log1p(-p), J, nishimori_beta(p, J), beta)


@njit(cache=True)
def _gray_disorder(bond, log_p, log_q, J, beta_n, beta):
    # Visit every sign pattern of the bonds in Gray-code order; X[s] = sum_e eta_e bond[s, e]
    # changes by 2 bond[s, e] when eta_e flips. Each pattern's sums are taken relative to its best
    # state (X = top): exp(b J (X - top)) comes from a table over X - top in [-2 nb, 0], each sum is
    # at least 1, and the pattern's log weight (log p^k (1-p)^(nb-k)) is added in logs.
    n_states, nb = bond.shape
    X = np.empty(n_states, dtype=np.int64)
    for s in range(n_states):
        X[s] = bond[s].sum()
    eta = np.ones(nb, dtype=np.int64)
    gaps = np.arange(2 * nb + 1)
    w_n = np.exp(-beta_n * J * gaps)
    w_b = np.exp(-beta * J * gaps)
    energy = 0.0
    log_ratio = -np.inf
    negatives = 0
    for k in range(1 << nb):
        if k > 0:
            e = 0
            while not (k >> e) & 1:               # the bit that changes from Gray(k-1) to Gray(k)
                e += 1
            eta[e] = -eta[e]
            negatives += 1 if eta[e] < 0 else -1
            for s in range(n_states):
                X[s] += 2 * eta[e] * bond[s, e]
        log_prob = negatives * log_p + (nb - negatives) * log_q
        top = X[0]
        for s in range(1, n_states):
            top = max(top, X[s])
        zn = 0.0
        hn = 0.0
        zb = 0.0
        for s in range(n_states):
            w = w_n[top - X[s]]
            zn += w
            hn += -J * X[s] * w
            zb += w_b[top - X[s]]
        energy += math.exp(log_prob) * hn / zn
        term = log_prob + math.log(zb / zn) + (beta - beta_n) * J * top
        if term > log_ratio:
            log_ratio = term + math.log1p(math.exp(log_ratio - term))
        else:
            log_ratio = log_ratio + math.log1p(math.exp(term - log_ratio))
    return energy, log_ratio
