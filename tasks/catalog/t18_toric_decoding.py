"""T18: maximum-likelihood decoding of the toric code under bit flips (StatMechBench-v1, Tier 2).

The quantity is the total probability of one homology class of error chains consistent with a
syndrome. Its mapping (Dennis, Kitaev, Landahl, Preskill 2002): summing over the plaquette sets
that relate chains of one class is a random-bond Ising model on the dual torus, couplings
eta_e = +-1 from a reference chain, at K = (1/2) ln((1-p)/p): the Nishimori line. The four
classes are the four periodic/antiperiodic boundary conditions.
"""

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np

from tasks import toric_code as tc
from tasks.nishimori import P_CRITICAL
from tasks.base import COLD_STRATA, Gold, Quantity, Task, cold_error_rate, square_side
from tasks.catalog._v1_common import V1_CITATION
from tasks.formula import Derived, Formula, Param, term
from tasks.formula_extras import ConstrainedSum, parity
from tasks.model import IsingModel, Lattice

_EDGES = (("d", "0", "1"), ("r", "0", "L - 1"), ("c", "0", "L - 1"))


class ToricCodeDecoding(Task):
    id = "T18"
    title = "Toric-code maximum-likelihood decoding (bit flips, perfect syndromes)"
    tier = 2
    citation = V1_CITATION + " Mapping: E. Dennis, A. Kitaev, A. Landahl, J. Preskill, J. Math. Phys. 43, 4452 (2002)."
    square_lattice = True
    nishimori_line = True
    quantity = Quantity(
        name="P_class",
        description="the probability sum defined above for the class named in params (at most 1)",
        positive=True, assertions=("unseen_parameters",))
    canonical = """\
You are given the **toric code on an L x L torus** (L >= 3) under independent bit-flip
errors with probability p and perfect syndrome measurement. Qubits sit on the N = 2 L^2
edges: horizontal edge (r, c) joins vertices (r, c) and (r, (c+1) mod L); vertical edge
(r, c) joins (r, c) and ((r+1) mod L, c). An error chain is a set E of edges; its syndrome
is the set of vertices met by an odd number of edges of E. The homology class of E is
(a, b): a = parity of the number of horizontal edges (r, L-1) in E, b = parity of the number
of vertical edges (L-1, c) in E. Given the syndrome S and a class (a, b), compute
P(a, b | S) = sum over chains E with syndrome S and class (a, b) of p^|E| (1 - p)^(N - |E|).
Implement
def Z_efficient(params: dict, n: int) -> float:
    # params has "p" (float, 0 < p < 0.5), "syndrome" (L x L nested list of 0/1;
    # syndrome[r][c] = 1 when vertex (r, c) is in S), "homology" ([a, b]); n = L^2
returning P(a, b | S). You may also define log_Z(params, n) returning its natural log.
Time polynomial in n (NOT exponential)."""
    paraphrased = """\
Binary variables e live on the 2 L^2 edges of an L x L grid that wraps in both directions
(n = L^2 vertices, L >= 3): edge h(r, c) joins vertex (r, c) to (r, (c+1) mod L), edge
v(r, c) joins (r, c) to ((r+1) mod L, c). Vertex (r, c) is "odd" under e when an odd number
of its four edges have e = 1. Given a 0/1 array S over the vertices, a pair (a, b) of bits
and a number 0 < p < 0.5, compute the sum over all e whose odd vertices are exactly those
with S = 1 and with sum_r e[h(r, L-1)] = a (mod 2) and sum_c e[v(L-1, c)] = b (mod 2), of
p^(number of ones in e) * (1 - p)^(number of zeros in e).
def Z_efficient(params: dict, n: int) -> float
with params "p", "syndrome" (S as an L x L nested list), "homology" ([a, b]).
Time polynomial in n."""
    hint = "Two edge sets with the same odd vertices and the same (a, b) differ by a sum of unit squares."
    gold = Gold("rbim_nishimori", "O(n^3)")   # four torus Pfaffians; a dual-row transfer matrix is O(L 2^(2L))
    probe_sizes = (9, 16)
    #: the dual model is a random-bond torus: the four-Pfaffian oracle answers dense (O(n^3)) to L = 10 and
    #: sparse (nested dissection, O(n^1.5)) beyond: 64 x 64 in about 1.5 s; the transfer matrix to L = 10 (also
    #: the classes the Pfaffians cannot resolve: far below the likeliest, cold draws mostly)
    ladder_sizes = (25, 36, 64, 100, 144, 256, 1024, 4096)
    #: e[0][r][c] is the edge (r, c)-(r, c+1 mod L), e[1][r][c] the edge (r, c)-(r+1 mod L, c)
    formula = ConstrainedSum(
        weight=Formula(
            shape=("2", "L", "L"),
            params=(Param("p", "a number in (0, 0.5)"), Param("syndrome", "an L x L nested list of 0/1"),
                    Param("homology", "a pair [a, b] of bits")),
            terms=(term("log(p) * e[d][r][c]", *_EDGES, variable="e"),
                   replace(term("log(1 - p) * e[d][r][c]", *_EDGES, variable="e"), affine=(Fraction(-1), Fraction(1)))),
            derived=(Derived("L", "isqrt(n)"),), size_note="n = L*L with L >= 3", domain="01", variable="e",
            beta_key=""),
        constraints=(
            parity("e[0][r][c] + e[0][r][(c - 1) % L] + e[1][r][c] + e[1][(r - 1) % L][c]", "syndrome[r][c]",
                   each=_EDGES[1:], variable="e"),
            parity("e[0][r][L - 1]", "homology[0]", over=_EDGES[1:2], variable="e"),
            parity("e[1][L - 1][c]", "homology[1]", over=_EDGES[2:], variable="e")))

    def check_size(self, n):
        square_side(self.id, n, 3)

    def sample_params(self, rng, n):
        L = square_side(self.id, n, 3)
        p = float(rng.uniform(0.02, 0.2))
        errors = (rng.random(2 * L * L) < p).astype(np.int64)
        return {"p": p, "syndrome": tc.syndrome(L, errors).tolist(),
                "homology": [int(x) for x in rng.integers(0, 2, size=2)]}

    def own_reference(self, params, n, method):
        """Enumeration of the chains themselves at the probe sizes (L <= 4): independent of the
        Ising mapping that ``to_model`` makes."""
        L = square_side(self.id, n, 3)
        if method != "brute" or L > tc.ENUMERATION_MAX_L:
            return None
        p, defects, (a, b) = tc.check_params(L, params)
        return float(tc.class_log_probabilities(L, p, defects)[a, b]), "chain_enumeration"

    def with_beta(self, params, beta):
        raise NotImplementedError("T18 has no free temperature: K = (1/2) ln((1-p)/p) is fixed by p")

    def cold_params(self, params, n, rng, stratum=COLD_STRATA[0]):
        """The same syndrome and class at a small error rate p, K = (1/2) log((1 - p) / p)
        log-uniform in ``stratum`` up to 350 (p ~ 1e-304): P(class | S) is defined for every p."""
        p = cold_error_rate(rng, stratum)
        return {**params, "p": p}, f"cold: p = {p:.3g} (K = {0.5 * (math.log1p(-p) - math.log(p)):.4g})"

    def critical_params(self, params, n):
        return {**params, "p": P_CRITICAL}, f"critical: the Nishimori point p = {P_CRITICAL}"

    def to_model(self, params, n):
        """The dual random-bond Ising model whose Z is P(a, b | S) (constant included).

        Chains of the class are e1 + (boundary of a plaquette set sigma), e1 a reference chain;
        each chain arises from sigma and its complement. With s = (-1)^sigma and
        eta_e = (-1)^(e1_e), an edge weighs p^x (1-p)^(1-x) = sqrt(p(1-p)) exp(K eta_e s s'), so
        P = (1/2) (p(1-p))^(N/2) sum_s exp(K sum_e eta_e s s'): beta = K, the constant carries
        log(1/2) + L^2 log(p(1-p)).
        """
        L = square_side(self.id, n, 3)
        p, defects, cls = tc.check_params(L, params)
        e1 = tc.reference_chain(L, defects, cls)
        edges, pairs = tc.dual_bonds(L)
        K = 0.5 * (math.log1p(-p) - math.log(p))          # stable for every p down to the smallest double
        constant = (math.log(0.5) + L * L * (math.log(p) + math.log1p(-p))) / K
        return IsingModel.from_arrays(n, K, pairs, 1.0 - 2.0 * e1[edges], constant=constant,
                                      lattice=Lattice(L, L, True, True))


TASK = ToricCodeDecoding()
