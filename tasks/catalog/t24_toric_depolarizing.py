"""T24: the toric code under depolarizing noise, the probability of one error class (Tier 3).

The quantity is the total probability of the errors of one class (16 classes: two homology bits for the
X part, two for the Z part) with the given vertex and plaquette syndromes. The task states only the raw
sum (a sum over 4 L^2 bits with parity conditions); its known reduction (tasks/depolarizing.py) is two
Ising layers on the plaquettes and the vertices coupled by four-spin terms, a disordered eight-vertex
model, with no polynomial method known; the maximum-likelihood threshold is 18.9(3)% (Monte Carlo). The
references are the enumeration of the error pairs at L = 3 (independent of the mapping) and the exact
oracles on the effective model beyond (``to_model``; tests/test_tier3_tasks.py checks one against the
other).
"""

import math
from dataclasses import replace
from fractions import Fraction

from tasks import depolarizing as dp
from tasks.base import COLD_STRATA, Gold, Quantity, Task, cold_error_rate, square_side
from tasks.catalog._v1_common import V1_CITATION
from tasks.formula import Derived, Formula, Param, term
from tasks.formula_extras import ConstrainedSum, parity

_QUBITS = (("d", "0", "1"), ("r", "0", "L - 1"), ("c", "0", "L - 1"))
_X, _Z = "e[0][d][r][c]", "e[1][d][r][c]"


class ToricDepolarizing(Task):
    id = "T24"
    title = "Toric-code class probability under depolarizing noise"
    tier = 3
    citation = V1_CITATION + (" Mapping and threshold: H. Bombin, R. S. Andrist, M. Ohzeki, H. G. Katzgraber, "
                              "M. A. Martin-Delgado, Phys. Rev. X 2, 021004 (2012).")
    square_lattice = True
    quantity = Quantity(
        name="P_class",
        description="the probability sum defined above for the class named in params (at most 1)",
        positive=True, assertions=("unseen_parameters",))
    canonical = """\
You are given the **toric code on an L x L torus** (L >= 3) under depolarizing noise: each of the
N = 2 L^2 qubits independently suffers X, Y or Z with probability p/3 each, nothing with 1 - p.
Qubits sit on edges: horizontal edge h(r, c) joins vertices (r, c) and (r, (c+1) mod L), vertical
edge v(r, c) joins (r, c) and ((r+1) mod L, c). Write an error as bits (x, z) per qubit: X = (1, 0),
Z = (0, 1), Y = (1, 1). The vertex syndrome S_x marks vertices met by an odd number of edges with
x = 1; the plaquette syndrome S_z marks plaquettes (r, c) (edges h(r, c), h(r+1, c), v(r, c),
v(r, c+1), indices mod L) holding an odd number of edges with z = 1. The class is (a, b, a', b'):
a = parity of x on the edges h(r, L-1), b = parity of x on v(L-1, c), a' = parity of z on h(0, c),
b' = parity of z on v(r, 0). Given S_x, S_z and a class, compute P = sum over errors with these
syndromes and this class of (p/3)^(number of qubits with an error) (1-p)^(number without).
Implement
def Z_efficient(params: dict, n: int) -> float:
    # params has "p" (0 < p < 0.5), "syndrome_x", "syndrome_z" (L x L nested lists of 0/1),
    # "cls" ([a, b, a', b']); n = L^2
returning P. You may also define log_Z(params, n) returning its natural log.
There is no polynomial-time algorithm known: rigorous bounds or a converged approximation are
accepted answers too (the interface block says how)."""
    paraphrased = """\
Binary variables x[d][r][c] and z[d][r][c] (d in 0..1, r, c in 0..L-1, n = L^2, L >= 3) on the
edges of an L x L grid that wraps both ways: d = 0 is the edge from (r, c) to (r, (c+1) mod L),
d = 1 the edge from (r, c) to ((r+1) mod L, c). Given 0/1 tables Sx, Sz over the L x L cells, four
bits a, b, a2, b2 and 0 < p < 0.5, sum over all x, z such that every vertex (r, c) touches an odd
number of edges with x = 1 exactly when Sx[r][c] = 1, every square (r, c) (edges (0, r, c),
(0, r+1, c), (1, r, c), (1, r, c+1)) holds an odd number with z = 1 exactly when Sz[r][c] = 1,
sum_r x[0][r][L-1] = a, sum_c x[1][L-1][c] = b, sum_c z[0][0][c] = a2, sum_r z[1][r][0] = b2 (mod 2),
of the product over edges of (1 - p) when x = z = 0 there and p/3 otherwise.
def Z_efficient(params: dict, n: int) -> float
with params "p", "syndrome_x", "syndrome_z", "cls" ([a, b, a2, b2])."""
    hint = "Errors of one class differ by plaquette boundaries (x part) and vertex stars (z part)."
    gold = Gold("no_efficient_known", "O(2^(2 L))")      # a row transfer matrix over both layers
    probe_sizes = (9,)
    ladder_sizes = (16, 25)
    #: e[0] is the x part, e[1] the z part; e[k][0][r][c] the edge (r, c)-(r, c+1), e[k][1][r][c] (r, c)-(r+1, c)
    formula = ConstrainedSum(
        weight=Formula(
            shape=("2", "2", "L", "L"),
            params=(Param("p", "a number in (0, 0.5)"), Param("syndrome_x", "an L x L nested list of 0/1"),
                    Param("syndrome_z", "an L x L nested list of 0/1"), Param("cls", "four bits [a, b, a', b']")),
            terms=(term(f"log(p / 3) * {_X}", *_QUBITS, variable="e"),
                   term(f"log(p / 3) * {_Z}", *_QUBITS, variable="e"),
                   term(f"-log(p / 3) * {_X} * {_Z}", *_QUBITS, variable="e"),
                   replace(term(f"log(1 - p) * {_X} * {_Z}", *_QUBITS, variable="e"),
                           affine=(Fraction(-1), Fraction(1)))),
            derived=(Derived("L", "isqrt(n)"),), size_note="n = L*L with L >= 3", domain="01", variable="e",
            beta_key=""),
        constraints=(
            parity("e[0][0][r][c] + e[0][0][r][(c - 1) % L] + e[0][1][r][c] + e[0][1][(r - 1) % L][c]",
                   "syndrome_x[r][c]", each=_QUBITS[1:], variable="e"),
            parity("e[1][0][r][c] + e[1][0][(r + 1) % L][c] + e[1][1][r][c] + e[1][1][r][(c + 1) % L]",
                   "syndrome_z[r][c]", each=_QUBITS[1:], variable="e"),
            parity("e[0][0][r][L - 1]", "cls[0]", over=_QUBITS[1:2], variable="e"),
            parity("e[0][1][L - 1][c]", "cls[1]", over=_QUBITS[2:], variable="e"),
            parity("e[1][0][0][c]", "cls[2]", over=_QUBITS[2:], variable="e"),
            parity("e[1][1][r][0]", "cls[3]", over=_QUBITS[1:2], variable="e")))

    def check_size(self, n):
        square_side(self.id, n, 3)

    def sample_params(self, rng, n):
        L = square_side(self.id, n, 3)
        p = float(rng.uniform(0.02, 0.2))
        x, z = dp.sample_error(rng, L, p)
        return {"p": p, "syndrome_x": dp.tc.syndrome(L, x).tolist(),
                "syndrome_z": dp.plaquette_syndrome(L, z).tolist(),
                "cls": [int(v) for v in rng.integers(0, 2, size=4)]}

    def own_reference(self, params, n, method):
        """Enumeration of the error pairs themselves at L = 3: independent of ``to_model``'s mapping."""
        L = square_side(self.id, n, 3)
        if method != "brute" or L > dp.ENUMERATION_MAX_L:
            return None
        return dp.class_log_probability(L, *dp.check_params(L, params)), "error_pair_enumeration"

    def with_beta(self, params, beta):
        raise NotImplementedError("T24 has no free temperature: the couplings are fixed by p")

    def cold_params(self, params, n, rng, stratum=COLD_STRATA[0]):
        """The same syndromes and class at a small error rate p (K = (1/4) log(3 (1 - p) / p) large)."""
        p = cold_error_rate(rng, stratum)
        return {**params, "p": p}, f"cold: p = {p:.3g} (K = {0.25 * (math.log1p(-p) - math.log(p / 3)):.4g})"

    def critical_params(self, params, n):
        return {**params, "p": dp.P_THRESHOLD}, f"critical: the threshold p = {dp.P_THRESHOLD} (Monte Carlo)"

    def to_model(self, params, n):
        """The two Ising layers coupled by four-spin terms whose Z is the class probability."""
        L = square_side(self.id, n, 3)
        return dp.effective_model(L, *dp.check_params(L, params))


TASK = ToricDepolarizing()
