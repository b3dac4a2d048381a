"""T25: the planar surface code under bit flips with faulty syndrome measurements, the probability of one
class given the detection events of T rounds (Tier 3).

The quantity is the total probability of the space-time errors (data flips in every round, wrong
measurement outcomes in every round but the last, which is perfect) with the observed detection events
and the given class. The task states only the raw sum (a sum over T Q + (T - 1) C bits with parity
conditions); its known reduction (tasks/faulty_measurement.py) is the 3D random-plaquette gauge model on
the space-time lattice (Dennis, Kitaev, Landahl and Preskill 2002), with no polynomial method known; the
threshold for p = q is about 2.9% (Wang, Harrington and Preskill 2003). The instances have T = L rounds
and q = p. The references are the enumeration of the errors consistent with the detection events while
their coset is small (2^24; T = 2 at L = 3, never at the task's own sizes), the sum itself eliminated
with its conditions (evaluators/oracles/constrained_sum.py) while its tables stay small, and the exact
oracles on the gauge model beyond (``to_model``; tests/test_faulty_measurement.py checks each against the
others and against the literal enumeration of the process at the smallest sizes).
"""

import math
from dataclasses import replace
from fractions import Fraction

from tasks import faulty_measurement as fm
from tasks.base import COLD_STRATA, Gold, Quantity, Task, cold_error_rate, square_side
from tasks.catalog._v1_common import V1_CITATION
from tasks.formula import Derived, Formula, Param, term
from tasks.formula_extras import ConstrainedSum, parity

_CHECK = ("c", "0", "L - 2")
_ROWS = {"first": ("r", "0", "0"), "middle": ("r", "1", "L - 2"), "last": ("r", "L - 1", "L - 1")}
_ROUNDS = {"first": ("t", "0", "0"), "middle": ("t", "1", "T - 2"), "last": ("t", "T - 1", "T - 1")}
_DATA = {"first": "e[t * Q + r * L + c] + e[t * Q + r * L + c + 1] + e[t * Q + L * L + r * (L - 1) + c]",
         "middle": "e[t * Q + r * L + c] + e[t * Q + r * L + c + 1] + e[t * Q + L * L + (r - 1) * (L - 1) + c]"
                   " + e[t * Q + L * L + r * (L - 1) + c]",
         "last": "e[t * Q + r * L + c] + e[t * Q + r * L + c + 1] + e[t * Q + L * L + (r - 1) * (L - 1) + c]"}
_MEAS = {"first": " + e[T * Q + t * C + r * (L - 1) + c]",
         "middle": " + e[T * Q + t * C + r * (L - 1) + c] + e[T * Q + (t - 1) * C + r * (L - 1) + c]",
         "last": " + e[T * Q + (t - 1) * C + r * (L - 1) + c]"}


def _conditions():
    """D_t(r, c) = the flips of round t at check (r, c) + the measurement errors of rounds t and t - 1 there:
    one family per kind of row (top, middle, bottom) and kind of round (first, middle, last)."""
    out = []
    for when, rounds in _ROUNDS.items():
        for where, rows in _ROWS.items():
            out.append(parity(_DATA[where] + _MEAS[when], "detections[t][r][c]", each=(rounds, rows, _CHECK),
                              variable="e"))
    return tuple(out)


class FaultyMeasurement(Task):
    id = "T25"
    title = "Planar surface code with faulty syndrome measurements: class probability given the detection events"
    tier = 3
    citation = V1_CITATION + (" Mapping: E. Dennis, A. Kitaev, A. Landahl, J. Preskill, J. Math. Phys. 43, 4452 "
                              "(2002); threshold: C. Wang, J. Harrington, J. Preskill, Ann. Phys. 303, 31 (2003).")
    square_lattice = True
    quantity = Quantity(
        name="P_class",
        description="the probability sum defined above for the class named in params (at most 1)",
        positive=True, assertions=("unseen_parameters",))
    canonical = """\
You are given the **planar surface code of distance L** (L >= 3) run for T >= 2 rounds of syndrome
measurement. Checks sit on the vertices (r, c) of an L x (L-1) grid (r = 0..L-1, c = 0..L-2); qubits
on Q = L^2 + (L-1)^2 edges: h(r, c), c = 0..L-1, enters vertex (r, c) from the left (h(r, 0) and
h(r, L-1) dangle: they meet one vertex only), and v(r, c), r, c = 0..L-2, joins (r, c) and (r+1, c).
In round t = 0..T-1 every qubit independently flips with probability p (data error E_t, a set of
edges), then every check is measured; its outcome is wrong with probability q (measurement error
m_t(r, c) = 1), except in the last round t = T-1, which is perfect (m_{T-1} = 0). The detection
events are D_t(r, c) = [number of edges of E_t meeting (r, c)] + m_t(r, c) + m_{t-1}(r, c) (mod 2),
with m_{-1} = 0. The class of an error is a = the parity of the number of pairs (t, r) with h(r, 0)
in E_t. Given D and a class a, compute
P = sum over all (E_0..E_{T-1}, m_0..m_{T-2}) with these detection events and class a of
p^(total flips) (1-p)^(T Q - total flips) q^(wrong outcomes) (1-q)^((T-1) L (L-1) - wrong outcomes).
Implement
def Z_efficient(params: dict, n: int) -> float:
    # params has "p" and "q" (0 < p, q < 0.5), "detections" (T x L x (L-1) nested list of 0/1,
    # detections[t][r][c] = D_t(r, c); T = its length), "cls" (0 or 1); n = L^2
returning P. You may also define log_Z(params, n) returning its natural log.
There is no polynomial-time algorithm known: rigorous bounds or a converged approximation are
accepted answers too (the interface block says how)."""
    paraphrased = """\
Binary variables: x[t][b] for rounds t = 0..T-1 and wires b of a ladder graph, and y[t][r][c] for
t = 0..T-2, r = 0..L-1, c = 0..L-2 (n = L^2, L >= 3, T >= 2). The wires of one round: h(r, c) for
r, c in 0..L-1 and v(r, c) for r, c in 0..L-2; node (r, c) (r in 0..L-1, c in 0..L-2) touches
h(r, c), h(r, c+1) and v(r-1, c), v(r, c) where those exist. Given 0/1 tables D[t][r][c], a bit a
and 0 < p, q < 0.5, sum over all x, y such that for every t, r, c the number of ones among the wires
of round t touching node (r, c), plus y[t][r][c] (if t <= T-2) plus y[t-1][r][c] (if t >= 1), is
odd exactly when D[t][r][c] = 1, and sum_t sum_r x[t][h(r, 0)] = a (mod 2), of
p^(ones in x) (1-p)^(zeros in x) q^(ones in y) (1-q)^(zeros in y).
def Z_efficient(params: dict, n: int) -> float
with params "p", "q", "detections" (D as a T x L x (L-1) nested list; T = its length), "cls" (a)."""
    hint = ("Two errors with the same detection events and class differ by a sum of plaquettes of the "
            "space-time lattice (spatial faces of one round, and a qubit in two consecutive rounds with the "
            "measurements between).")
    #: elimination over the gauge model's ~3 n^1.5 spins with a time slice (~2 L^2 = 2 n spins) as its width
    gold = Gold("no_efficient_known", "O(n^1.5 2^(2 n))")
    probe_sizes = (9,)
    ladder_sizes = (16,)
    #: e is flat: data (t, h(r, c)) = t Q + r L + c, (t, v(r, c)) = t Q + L^2 + r (L - 1) + c, then the
    #: measurement errors (t, r, c) = T Q + t C + r (L - 1) + c for t = 0..T-2
    formula = ConstrainedSum(
        weight=Formula(
            shape=("T * Q + (T - 1) * C",),
            params=(Param("p", "a number in (0, 0.5)"), Param("q", "a number in (0, 0.5)"),
                    Param("detections", "a T x L x (L-1) nested list of 0/1"), Param("cls", "the class bit a")),
            terms=(term("log(p) * e[b]", ("b", "0", "T * Q - 1"), variable="e"),
                   replace(term("log(1 - p) * e[b]", ("b", "0", "T * Q - 1"), variable="e"),
                           affine=(Fraction(-1), Fraction(1))),
                   term("log(q) * e[T * Q + k]", ("k", "0", "(T - 1) * C - 1"), variable="e"),
                   replace(term("log(1 - q) * e[T * Q + k]", ("k", "0", "(T - 1) * C - 1"), variable="e"),
                           affine=(Fraction(-1), Fraction(1)))),
            derived=(Derived("L", "isqrt(n)"), Derived("T", "len(detections)"),
                     Derived("Q", "L * L + (L - 1) * (L - 1)"), Derived("C", "L * (L - 1)")),
            size_note=("n = L*L with L >= 3; T = len(detections) >= 2; Q = L*L + (L - 1)*(L - 1); "
                       "C = L*(L - 1)"), domain="01", variable="e",
            beta_key=""),
        constraints=_conditions() + (
            parity("e[t * Q + r * L]", "cls", over=(("t", "0", "T - 1"), ("r", "0", "L - 1")), variable="e"),))

    def check_size(self, n):
        square_side(self.id, n, 3)

    def _checked(self, params, n):
        L = square_side(self.id, n, 3)
        p, q, D, cls = fm.check_params(L, params)
        if len(D) < 2:
            raise ValueError("parameter 'detections' must hold T >= 2 rounds")
        return L, p, q, D, cls

    def sample_params(self, rng, n):
        L = square_side(self.id, n, 3)
        p = float(rng.uniform(0.01, 0.1))
        data, meas = fm.sample(rng, L, L, p, p)
        return {"p": p, "q": p, "detections": fm.detection_events(L, data, meas).tolist(),
                "cls": int(rng.integers(0, 2))}

    def own_reference(self, params, n, method):
        """The enumeration of the errors consistent with the detection events, while there are at most
        2^24 of them (never at T = L >= 3: then the sum eliminated with its conditions, or the oracles on
        the gauge model)."""
        L, p, q, D, cls = self._checked(params, n)
        if method != "brute" or fm.sizes(L, len(D))[2] > 64:
            return None
        try:
            return float(fm.coset_log_probabilities(L, p, q, D)[cls]), "coset_enumeration"
        except ValueError:
            return None

    def with_beta(self, params, beta):
        raise NotImplementedError("T25 has no free temperature: the couplings are fixed by p and q")

    def cold_params(self, params, n, rng, stratum=COLD_STRATA[0]):
        """The same detection events and class at a small error rate p = q (K = (1/2) log((1 - p) / p) large)."""
        p = cold_error_rate(rng, stratum)
        return {**params, "p": p, "q": p}, f"cold: p = q = {p:.3g} (K = {0.5 * (math.log1p(-p) - math.log(p)):.4g})"

    def critical_params(self, params, n):
        return ({**params, "p": fm.P_THRESHOLD, "q": fm.P_THRESHOLD},
                f"critical: the threshold p = q = {fm.P_THRESHOLD} (random-plaquette gauge model, Monte Carlo)")

    def to_model(self, params, n):
        """The random-plaquette gauge model on the space-time lattice whose Z is the class probability."""
        L, p, q, D, cls = self._checked(params, n)
        return fm.effective_model(L, p, q, D, cls)


TASK = FaultyMeasurement()
