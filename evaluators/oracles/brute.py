"""Exact log Z by enumerating every configuration: Gray-code order, numba, two threads.

Works for ANY model of the IR (fields, pair couplings, k-spin terms, constant, rank-one blocks,
which are expanded through ``model.couplings``). Conventions as in :mod:`tasks.model`:
H(s) = -(constant + sum_k w_k prod_{i in S_k} s_i), couplings in energy units, Z = sum_s
exp(-beta H(s)) at ``model.beta``; every function returns the NATURAL log.

How it works. Every term's current signed value q_k = w_k prod s_i is kept; step t of the
Gray code flips spin ctz(t), which negates exactly the terms containing it (a CSR list per
spin), so S = sum_k q_k changes by -2 sum of those q_k. Spins in no term contribute a factor 2
each and are not enumerated; with no odd-order term (no fields, no odd k) Z is symmetric under
a global flip, so one spin is fixed and the count doubled. The enumeration is split into 2^p
chunks by p prefix spins (``prange``), each a Gray-code run of its own.

Two kernels:
- float: accumulates exp(beta (S - m)) with m the running maximum of beta S in the chunk (a
  rescale when a new maximum appears), so every term is <= 1 and nothing underflows wholesale
  at any beta; partial sums are flushed every 4096 states and S is recomputed from the q_k every
  65536 states, which bounds rounding drift.
- density of states: when all weights are integer multiples of one unit, S / unit is an
  integer and an int64 histogram g(S) is filled instead (no exp, exact), giving log Z at every
  beta at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit, prange
from numba.cpython.unsafe.numbers import trailing_zeros

from evaluators.oracles.budget import affordable
from evaluators.oracles.base import NotApplicable, TooLarge
from tasks.model import IsingModel

MAX_BRUTE_N = 36  # enumerated spins; 2^36 states is about 10 minutes here
STATES_PER_S = 3e8  # enumeration rate assumed by the time budget (measured 4.4e8 float, 1e9 histogram at n = 28)
_MAX_PREFIX_BITS = 6  # up to 64 chunks: load balance for a handful of threads
_MAX_DOS_BINS = 1 << 22  # histogram length above which the float route is used
_HIST_BUDGET = 1 << 24  # int64 entries over all chunk histograms (128 MiB)


# -- numba kernels ------------------------------------------------------------------------------

@njit(cache=True)
def _start_state(chunk, low, prefix_bits, n_all):
    """Spins of a chunk's first state: all +1 except prefix spins low.. set from the chunk bits."""
    s = np.ones(n_all, np.int64)
    for b in range(prefix_bits):
        if (chunk >> b) & 1:
            s[low + b] = -1
    return s


@njit(cache=True)
def _term_values(s, term_ptr, term_spins, weights):
    """q_k = w_k prod_{i in S_k} s_i for every term (weights float64 or int64)."""
    q = np.empty_like(weights)
    for k in range(len(weights)):
        p = 1
        for a in range(term_ptr[k], term_ptr[k + 1]):
            p *= s[term_spins[a]]
        q[k] = weights[k] * p
    return q


@njit(cache=True, parallel=True)
def _gray_log_sums(n_flip, n_all, prefix_bits, term_ptr, term_spins, weights, spin_ptr, spin_terms, beta):
    """Per chunk, (m, acc) with log of the chunk's sum of exp(beta S) equal to m + log(acc)."""
    n_chunks = 1 << prefix_bits
    low = n_flip - prefix_bits
    maxes = np.empty(n_chunks)
    sums = np.empty(n_chunks)
    for c in prange(n_chunks):
        s = _start_state(c, low, prefix_bits, n_all)
        q = _term_values(s, term_ptr, term_spins, weights)
        S = q.sum()
        m = beta * S
        inner = 1.0
        outer = 0.0
        for t in range(1, 1 << low):
            i = trailing_zeros(t)
            d = 0.0
            for a in range(spin_ptr[i], spin_ptr[i + 1]):
                k = spin_terms[a]
                d += q[k]
                q[k] = -q[k]
            S -= 2.0 * d
            if (t & 4095) == 0:
                outer += inner
                inner = 0.0
                if (t & 65535) == 0:
                    S = q.sum()
            x = beta * S
            if x > m:
                r = math.exp(m - x)
                inner = inner * r + 1.0
                outer *= r
                m = x
            else:
                inner += math.exp(x - m)
        maxes[c] = m
        sums[c] = outer + inner
    return maxes, sums


@njit(cache=True, parallel=True)
def _gray_histogram(n_flip, n_all, prefix_bits, term_ptr, term_spins, weights, spin_ptr, spin_terms, s_max):
    """Histogram of S (integer weights) over the enumerated states: counts[S + s_max]."""
    n_chunks = 1 << prefix_bits
    low = n_flip - prefix_bits
    hist = np.zeros((n_chunks, 2 * s_max + 1), np.int64)
    for c in prange(n_chunks):
        s = _start_state(c, low, prefix_bits, n_all)
        q = _term_values(s, term_ptr, term_spins, weights)
        S = q.sum() + s_max
        h = hist[c]
        h[S] += 1
        for t in range(1, 1 << low):
            i = trailing_zeros(t)
            d = 0
            for a in range(spin_ptr[i], spin_ptr[i + 1]):
                k = spin_terms[a]
                d += q[k]
                q[k] = -q[k]
            S -= 2 * d
            h[S] += 1
    return hist.sum(axis=0)


# -- preparation --------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Enumeration:
    """A model compiled for the kernels: spins relabelled so the enumerated ones come first."""

    n_flip: int  # spins the Gray code flips (0 .. n_flip-1)
    n_all: int  # spins in some term (a fixed symmetry spin is n_all-1 when halved)
    log_multiplicity: float  # log of 2^(isolated spins) * (2 if halved)
    term_ptr: np.ndarray
    term_spins: np.ndarray
    weights: np.ndarray  # float64
    spin_ptr: np.ndarray
    spin_terms: np.ndarray
    constant: float


def _collect_terms(model: IsingModel) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Every nonzero term: fields, merged pair couplings (rank-one expanded), k >= 3 terms."""
    h = model.fields
    terms = [(int(i),) for i in np.flatnonzero(h)]
    weights = list(h[h != 0.0])
    edges, J = model.couplings
    terms += [tuple(e) for e in edges.tolist()]
    weights += list(J)
    for t, w in model.higher_order:
        if w != 0.0:
            terms.append(tuple(t))
            weights.append(w)
    return terms, np.asarray(weights, dtype=np.float64)


def _active_spin_count(model: IsingModel) -> int:
    """Spins that appear in some term or rank-one block (cheap: no expansion)."""
    used = np.zeros(model.n, dtype=bool)
    for t in model.terms:
        used[list(t)] = True
    for u, a in model.rank_one:
        if a != 0.0 and np.count_nonzero(u) > 1:
            used |= u != 0.0
    return int(used.sum())


def _prepare(model: IsingModel) -> _Enumeration:
    reason = brute_applies(model)
    if reason:
        raise TooLarge(reason)
    terms, weights = _collect_terms(model)
    active = sorted({i for t in terms for i in t})
    n_all = len(active)
    relabel = np.full(model.n, -1, dtype=np.int64)
    relabel[active] = np.arange(n_all)
    halve = n_all > 0 and all(len(t) % 2 == 0 for t in terms)
    n_flip = n_all - 1 if halve else n_all
    lengths = np.array([len(t) for t in terms], dtype=np.int64)
    term_ptr = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum(lengths, out=term_ptr[1:])
    term_spins = relabel[np.array([i for t in terms for i in t], dtype=np.int64)]
    term_of_entry = np.repeat(np.arange(len(terms), dtype=np.int64), lengths)
    order = np.argsort(term_spins, kind="stable")
    spin_terms = term_of_entry[order]
    spin_ptr = np.zeros(n_all + 1, dtype=np.int64)
    np.cumsum(np.bincount(term_spins, minlength=n_all), out=spin_ptr[1:])
    log_mult = (model.n - n_all + (1 if halve else 0)) * math.log(2.0)
    return _Enumeration(n_flip, n_all, log_mult, term_ptr, term_spins.astype(np.int64), weights,
                        spin_ptr, spin_terms.astype(np.int64), float(model.constant))


def _integer_unit(weights: np.ndarray) -> float | None:
    """A unit u with every weight an integer multiple of it (gcd for integers), else None."""
    if len(weights) == 0:
        return 1.0
    a = np.abs(weights)
    if a.max() > 2.0**40:
        return None
    if np.all(a == np.round(a)):
        return float(np.gcd.reduce(a.astype(np.int64)))
    unit = float(a.min())
    r = a / unit
    return unit if np.all(r == np.round(r)) else None


def _prefix_bits(n_flip: int, bins: int = 1) -> int:
    p = min(_MAX_PREFIX_BITS, n_flip)
    while p > 0 and (bins << p) > _HIST_BUDGET:
        p -= 1
    return p


def _logsumexp(x: np.ndarray) -> float:
    m = float(np.max(x))
    return m + math.log(float(np.sum(np.exp(x - m))))


def _float_log_z(e: _Enumeration, beta: float) -> float:
    p = _prefix_bits(e.n_flip)
    maxes, sums = _gray_log_sums(e.n_flip, e.n_all, p, e.term_ptr, e.term_spins, e.weights,
                                 e.spin_ptr, e.spin_terms, float(beta))
    return _logsumexp(maxes + np.log(sums)) + e.log_multiplicity + beta * e.constant


def _histogram(e: _Enumeration, unit: float) -> tuple[np.ndarray, np.ndarray]:
    """(k, g_k): S = unit * k takes value k on g_k enumerated states (g_k > 0 only)."""
    iw = np.round(e.weights / unit).astype(np.int64)
    s_max = int(np.abs(iw).sum())
    bins = 2 * s_max + 1
    if bins > _MAX_DOS_BINS * 16:
        raise TooLarge(f"density of states would need {bins} energy bins")
    p = _prefix_bits(e.n_flip, bins)
    counts = _gray_histogram(e.n_flip, e.n_all, p, e.term_ptr, e.term_spins, iw,
                             e.spin_ptr, e.spin_terms, s_max)
    k = np.flatnonzero(counts)
    return k - s_max, counts[k]


def _dos_route(e: _Enumeration) -> float | None:
    """The unit when the histogram route applies and is reasonable, else None."""
    unit = _integer_unit(e.weights)
    if unit is None or unit == 0.0:
        return None
    bins = 2 * float(np.abs(np.round(e.weights / unit)).sum()) + 1
    return unit if bins <= _MAX_DOS_BINS else None


def _log_z_from_histogram(k: np.ndarray, g: np.ndarray, unit: float, e: _Enumeration,
                          betas: np.ndarray) -> np.ndarray:
    log_g = np.log(g.astype(np.float64))
    out = np.empty(len(betas))
    for j, beta in enumerate(betas):
        out[j] = _logsumexp(log_g + beta * unit * k) + e.log_multiplicity + beta * e.constant
    return out


# -- public -------------------------------------------------------------------------------------

def brute_applies(model: IsingModel) -> str | None:
    """None when enumeration is within reach (at most MAX_BRUTE_N spins in some term), else why not."""
    if model.n <= MAX_BRUTE_N:
        return None
    n_active = _active_spin_count(model)
    if n_active <= MAX_BRUTE_N:
        return None
    return f"brute force enumerates 2^n states: {n_active} interacting spins > MAX_BRUTE_N = {MAX_BRUTE_N}"


def brute_log_z(model: IsingModel, route: str = "auto") -> float:
    """Natural log Z at model.beta by full enumeration.

    route: "auto" (the histogram when every weight is an integer multiple of one unit and the
    histogram is not huge, else float), "float" (exp per state) or "histogram" (NotApplicable
    when the weights are not on a grid).
    """
    if route not in ("auto", "float", "histogram"):
        raise ValueError(f"unknown route {route!r} (auto, float, histogram)")
    e = _prepare(model)
    affordable(2.0 ** e.n_flip / STATES_PER_S, f"enumerating 2^{e.n_flip} states")
    if route == "float":
        return _float_log_z(e, model.beta)
    unit = _dos_route(e) if route == "auto" else _integer_unit(e.weights)
    if route == "histogram" and not unit:
        raise NotApplicable("the weights are not integer multiples of one unit, so energies do not fall on a grid")
    if unit:
        k, g = _histogram(e, unit)
        return float(_log_z_from_histogram(k, g, unit, e, np.array([model.beta]))[0])
    return _float_log_z(e, model.beta)


def brute_log_z_many(model: IsingModel, betas) -> np.ndarray:
    """Natural log Z at each beta in ``betas`` (model.beta is ignored): one histogram pass when
    all weights are integer multiples of one unit, else one float enumeration per beta."""
    betas = np.atleast_1d(np.asarray(betas, dtype=np.float64))
    e = _prepare(model)
    unit = _dos_route(e)
    if unit is not None:
        k, g = _histogram(e, unit)
        return _log_z_from_histogram(k, g, unit, e, betas)
    return np.array([_float_log_z(e, b) for b in betas])


def brute_density_of_states(model: IsingModel) -> tuple[np.ndarray, np.ndarray]:
    """(energies, counts): the distinct energies H ascending (float64) and how many of the 2^n
    configurations have each (int64; float64 only past 2^62 states, i.e. many isolated spins).
    Needs every weight to be an integer multiple of
    one unit (any constant); raises NotApplicable otherwise."""
    e = _prepare(model)
    unit = _integer_unit(e.weights)
    if unit is None or unit == 0.0:
        raise NotApplicable("the weights are not integer multiples of one unit, so energies do not fall on a grid")
    k, g = _histogram(e, unit)
    shift = int(round(e.log_multiplicity / math.log(2.0)))
    if shift + e.n_flip <= 62:
        g = g << shift
    else:  # more than 2^62 configurations in total: counts as floats
        g = g.astype(np.float64) * 2.0**shift
    energies = -(e.constant + unit * k.astype(np.float64))
    order = np.argsort(energies)
    return energies[order], g[order]
