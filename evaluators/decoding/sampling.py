"""Errors drawn from the noise model, their syndromes and classes, and what the maximum-likelihood
decoder makes of them (planar code, task T21's conventions: :mod:`evaluators.decoding.planar_code`).

The decoder's outcome on one error. With d = log P(0, S) - log P(1, S) (natural logs) the ML
decoder answers class 0 when d > 0, class 1 when d < 0 (a tie, d = 0, is a coin toss: success
1/2). Two estimators of its success probability P_succ = E_S[max_a P(a | S)]:

- the indicator: 1 when the answer is the error's own class a_E (1/2 on a tie);
- the Nishimori estimator: max_a P(a | S) = 1 / (1 + exp(-|d|)). On the Nishimori line the
  decoder's model is the true noise, so given S the class is distributed as P(a | S) and this is
  the conditional expectation of the indicator: the same mean, a smaller variance (it does not
  pay for the coin the error's class tossed once S is known).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from evaluators.decoding.planar_code import FLOAT64_MIN_P, class_log_probability, qubits, transfer_log_p


def draw_errors(rng: np.random.Generator, L: int, p: float, count: int) -> np.ndarray:
    """(count, N) uint8: each qubit flipped independently with probability p."""
    return (rng.random((count, qubits(L))) < p).astype(np.uint8)


def syndromes(L: int, errors: np.ndarray) -> np.ndarray:
    """(count, L, L - 1) int8: vertex (r, c) is in S when an odd number of its edges are flipped."""
    e = np.asarray(errors, dtype=np.int8)
    h = e[:, :L * L].reshape(-1, L, L)
    v = e[:, L * L:].reshape(-1, L - 1, L - 1)
    s = h[:, :, :-1] ^ h[:, :, 1:]
    s[:, :-1] ^= v
    s[:, 1:] ^= v
    return s


def classes(L: int, errors: np.ndarray) -> np.ndarray:
    """(count,) int8: the parity of the flipped edges h(r, 0) (the class a of T21)."""
    e = np.asarray(errors, dtype=np.int8)
    return (e[:, 0:L * L:L].sum(axis=1) % 2).astype(np.int8)


@njit(cache=True)
def _batch_float64(L, p, syn):
    out = np.empty((syn.shape[0], 2))
    for k in range(syn.shape[0]):
        for a in range(2):
            out[k, a] = transfer_log_p(L, p, syn[k], a)
    return out


def class_log_probabilities_batch(L: int, p: float, syn: np.ndarray) -> np.ndarray:
    """(count, 2): [log P(0, S), log P(1, S)] for each syndrome of ``syn`` (count, L, L - 1).
    float64 in one compiled loop where p allows it; a value it could not vouch for (NaN), and
    every value below FLOAT64_MIN_P, goes through :func:`class_log_probability`."""
    syn = np.ascontiguousarray(syn, dtype=np.int8)
    if p >= FLOAT64_MIN_P:
        out = _batch_float64(L, p, syn)
    else:
        out = np.full((syn.shape[0], 2), np.nan)
    for k, a in zip(*np.nonzero(np.isnan(out))):
        out[k, a] = class_log_probability(L, p, syn[k], int(a))
    return out


@dataclass(frozen=True)
class Outcomes:
    """The decoder on a batch of errors: ``log_p`` (count, k) the class log probabilities (k = 2 for
    T21; 4 for the depolarizing planar code), ``true_class`` (count,) the errors' own classes."""

    log_p: np.ndarray
    true_class: np.ndarray

    @property
    def margin(self) -> np.ndarray:
        """d = log P(0, S) - log P(1, S) (two classes)."""
        return self.log_p[:, 0] - self.log_p[:, 1]

    def indicator(self) -> np.ndarray:
        """1 where the ML answer is the error's class, 0 where not; on a tie of m classes 1/m if the
        error's class is one of them."""
        if self.log_p.shape[1] == 2:
            d = self.margin
            answer = np.where(d > 0, 0, 1)
            return np.where(d == 0, 0.5, (answer == self.true_class).astype(float))
        top = self.log_p.max(axis=1, keepdims=True)
        tied = self.log_p == top
        mine = tied[np.arange(len(self.true_class)), self.true_class.astype(np.int64)]
        return np.where(mine, 1.0 / tied.sum(axis=1), 0.0)

    def nishimori(self) -> np.ndarray:
        """max_a P(a | S): 1 / (1 + exp(-|d|)) for two classes, 1 / sum_a exp(log P(a) - max) for more."""
        if self.log_p.shape[1] == 2:
            return 1.0 / (1.0 + np.exp(-np.abs(self.margin)))
        top = self.log_p.max(axis=1, keepdims=True)
        return 1.0 / np.exp(self.log_p - top).sum(axis=1)
