"""T21: maximum-likelihood decoding of the planar surface code under bit flips (Tier 2).

The planar code of distance L: qubits on the edges of an L x (L - 1) grid of vertices, each row's two
end edges dangling (the rough left and right boundaries); a bit flip on an edge flips the checks at its
ends. A logical error crosses from the left boundary to the right one; its class is the parity of the
flips on the dangling left edges. The quantity is the probability of the errors of one class with the
given syndrome. Its mapping (Dennis, Kitaev, Landahl and Preskill 2002): the errors of one class are a
reference error plus cycles of the check graph, which on a plane graph are sums of faces, so the sum is
a random-bond Ising model on the faces at the Nishimori coupling K = (1/2) ln((1-p)/p): planar with zero
field (the outer face is one more spin), a Pfaffian. The task states only the raw sum; to_model is the
default (the face dual of tasks/parity_dual.py) and the verifier's references are the sum itself
eliminated with its checks (evaluators/oracles/constrained_sum.py) while that is small, enumeration of
every error at L = 3, and the planar oracle on the face-dual model beyond.
"""

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np

from tasks.base import COLD_STRATA, Gold, Quantity, Task, cold_error_rate, square_side
from tasks.catalog._v1_common import V1_CITATION
from tasks.formula import Derived, Formula, Param, term
from tasks.formula_extras import ConstrainedSum, parity
from tasks.nishimori import P_CRITICAL

_H = "e[r * L + c]"                       # the horizontal edge entering vertex (r, c) from the left (c = 0..L-1)
_V = "e[L * L + r * (L - 1) + c]"         # the vertical edge below vertex (r, c) (r, c = 0..L-2)


def qubits(L: int) -> int:
    return L * L + (L - 1) * (L - 1)


def syndrome(L: int, error: np.ndarray) -> np.ndarray:
    """(L, L - 1) 0/1 array: vertices met by an odd number of flipped edges."""
    e = np.asarray(error, dtype=np.int64)
    h = e[:L * L].reshape(L, L)
    v = e[L * L:].reshape(L - 1, L - 1)
    s = (h[:, :-1] + h[:, 1:]) % 2
    s[:-1] += v
    s[1:] += v
    return s % 2


class SurfaceCodeDecoding(Task):
    id = "T21"
    title = "Planar surface-code maximum-likelihood decoding (bit flips, perfect syndromes)"
    tier = 2
    citation = V1_CITATION + " Mapping: E. Dennis, A. Kitaev, A. Landahl, J. Preskill, J. Math. Phys. 43, 4452 (2002)."
    square_lattice = True
    nishimori_line = True
    quantity = Quantity(
        name="P_class",
        description="the probability sum defined above for the class named in params (at most 1)",
        positive=True, assertions=("unseen_parameters",))
    canonical = """\
You are given the **planar surface code of distance L** (L >= 3) under independent bit-flip
errors with probability p and perfect syndrome measurement. Checks sit on the vertices (r, c) of
an L x (L-1) grid (r = 0..L-1, c = 0..L-2); qubits sit on N = L^2 + (L-1)^2 edges: the horizontal
edge h(r, c), c = 0..L-1, enters vertex (r, c) from the left (h(r, 0) and h(r, L-1) dangle: they
meet one vertex only), and the vertical edge v(r, c), r, c = 0..L-2, joins (r, c) and (r+1, c).
An error E is a set of edges; its syndrome is the set of vertices met by an odd number of edges of
E; its class is a = the parity of the number of edges h(r, 0) in E. Given the syndrome S and a
class a, compute P(a | S) = sum over errors E with syndrome S and class a of p^|E| (1 - p)^(N - |E|).
Implement
def Z_efficient(params: dict, n: int) -> float:
    # params has "p" (float, 0 < p < 0.5), "syndrome" (L x (L-1) nested list of 0/1), "cls" (0 or 1);
    # n = L^2
returning P(a | S). You may also define log_Z(params, n) returning its natural log.
Time polynomial in n (NOT exponential)."""
    paraphrased = """\
Binary variables x live on N = L^2 + (L-1)^2 wires (n = L^2, L >= 3): wire h(r, c) for r, c in
0..L-1 and wire v(r, c) for r, c in 0..L-2. Node (r, c), r in 0..L-1, c in 0..L-2, touches h(r, c),
h(r, c+1), and v(r-1, c), v(r, c) where those exist. Given a 0/1 table S over the nodes, a bit a and
0 < p < 0.5, sum p^(ones) (1-p)^(zeros) over all x in which every node touches an odd number of ones
exactly when S = 1 there, and sum_r x[h(r, 0)] = a (mod 2).
def Z_efficient(params: dict, n: int) -> float
with params "p", "syndrome" (S as an L x (L-1) nested list), "cls" (a). Time polynomial in n."""
    hint = "Two errors with the same syndrome and class differ by a sum of faces of the check graph."
    gold = Gold("rbim_nishimori", "O(n^1.5)")
    probe_sizes = (9, 16)
    ladder_sizes = (64, 256, 1024, 4096)
    formula = ConstrainedSum(
        weight=Formula(
            shape=("L * L + (L - 1) * (L - 1)",),
            params=(Param("p", "a number in (0, 0.5)"), Param("syndrome", "an L x (L-1) nested list of 0/1"),
                    Param("cls", "the class bit a")),
            terms=(term("log(p) * e[b]", ("b", "0", "L * L + (L - 1) * (L - 1) - 1"), variable="e"),
                   replace(term("log(1 - p) * e[b]", ("b", "0", "L * L + (L - 1) * (L - 1) - 1"), variable="e"),
                           affine=(Fraction(-1), Fraction(1)))),
            derived=(Derived("L", "isqrt(n)"),), size_note="n = L*L with L >= 3", domain="01", variable="e",
            beta_key=""),
        constraints=(
            parity(f"{_H} + e[r * L + c + 1] + e[L * L + r * (L - 1) + c]", "syndrome[r][c]",
                   each=(("r", "0", "0"), ("c", "0", "L - 2")), variable="e"),
            parity(f"{_H} + e[r * L + c + 1] + e[L * L + (r - 1) * (L - 1) + c] + {_V}", "syndrome[r][c]",
                   each=(("r", "1", "L - 2"), ("c", "0", "L - 2")), variable="e"),
            parity(f"{_H} + e[r * L + c + 1] + e[L * L + (r - 1) * (L - 1) + c]", "syndrome[r][c]",
                   each=(("r", "L - 1", "L - 1"), ("c", "0", "L - 2")), variable="e"),
            parity("e[r * L]", "cls", over=(("r", "0", "L - 1"),), variable="e")))

    def check_size(self, n):
        square_side(self.id, n, 3)

    def sample_params(self, rng, n):
        L = square_side(self.id, n, 3)
        p = float(rng.uniform(0.02, 0.2))
        error = (rng.random(qubits(L)) < p).astype(np.int64)
        return {"p": p, "syndrome": syndrome(L, error).tolist(), "cls": int(rng.integers(0, 2))}

    def with_beta(self, params, beta):
        raise NotImplementedError("T21 has no free temperature: K = (1/2) ln((1-p)/p) is fixed by p")

    def cold_params(self, params, n, rng, stratum=COLD_STRATA[0]):
        """The same syndrome and class at a small error rate p, K = (1/2) log((1 - p) / p)
        log-uniform in ``stratum`` up to 350 (p ~ 1e-304)."""
        p = cold_error_rate(rng, stratum)
        return {**params, "p": p}, f"cold: p = {p:.3g} (K = {0.5 * (math.log1p(-p) - math.log(p)):.4g})"

    def critical_params(self, params, n):
        return {**params, "p": P_CRITICAL}, f"critical: the Nishimori point p = {P_CRITICAL}"


TASK = SurfaceCodeDecoding()
