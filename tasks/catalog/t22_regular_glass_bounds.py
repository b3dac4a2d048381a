"""T22: rigorous bounds on log Z of a +-J Ising glass on a random 3-regular graph (Tier 3).

The model is P06's (the same formula, sampler, gauge and model), but the task is a Tier 3 one: no
efficient exact method is known (a random 3-regular graph has treewidth linear in n), so the answer
asked for is a pair of rigorous bounds (lo, hi) on log Z, judged valid wherever an exact value exists
(brute force at the probes, the exact oracles on the ladder) and ranked by the gap per spin
(evaluators/bounds_check.py); an exact exponential program is still accepted where it runs. The
offline baselines are the Gibbs-Bogoliubov mean-field lower bound and the tree-reweighted upper bound
(search/derivation/solvers/mean_field.py, tree_reweighted.py); docs/tier3.md records their gap.
"""

from tasks.base import Gold
from tasks.catalog._v1_common import V1_CITATION
from tasks.catalog.p06_regular_glass import RegularGraphGlass

BOUNDS_REQUEST = """
For this sum no polynomial-time algorithm is known. Besides (or instead of) an exact program you
may return rigorous bounds on its natural log:
def log_Z_bounds(params: dict, n: int) -> tuple[float, float]   # (lo, hi) with lo <= log Z <= hi
A bound that fails on any instance the verifier can check exactly rejects the program; valid bounds
are ranked by (hi - lo) / n, tighter first. State the cost of computing them as complexity_O."""


class RegularGlassBounds(RegularGraphGlass):
    id = "T22"
    title = "Bounds on log Z of a random 3-regular +-J Ising glass"
    tier = 3
    citation = V1_CITATION          # this project's card: not one of the StatMechBench-v0 tasks it builds on
    canonical = """\
**Ising spin glass on a random 3-regular graph** with binary +/- 1 couplings (n even, n >= 4).
Edges given as edge list (params "edges", m = 3n/2 pairs); params "J" (m values in {-1, +1}),
"beta" (float). H(s) = -sum_k J[k] * s[edges[k][0]] * s[edges[k][1]], Z = sum_s exp(-beta H(s)).
""" + BOUNDS_REQUEST
    paraphrased = """\
Graph on n vertices specified by edge list, every vertex has degree 3.
Compute Z(beta, edges, J, n) = sum over 2^n assignments of
exp( beta * sum_k J[k] * x[edges[k][0]] * x[edges[k][1]] ).
""" + BOUNDS_REQUEST
    gold = Gold("no_efficient_known", "O(2^n)")


TASK = RegularGlassBounds()
