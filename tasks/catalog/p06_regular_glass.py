"""P06: +-1 Ising glass on a random 3-regular graph; the negative control (StatMechBench-v0)."""

import networkx as nx
import numpy as np

from tasks.base import Gold, Task, get_float, sample_beta
from tasks.formula import Derived, Formula, Param, term
from tasks.model import IsingModel


class RegularGraphGlass(Task):
    id = "P06"
    title = "Random 3-regular +-1 Ising glass"
    canonical = """\
**Ising spin glass on a random 3-regular graph** with binary +/- 1 couplings.
Edges given as edge list; H(s) = -sum_k J[k] * s[edges[k][0]] * s[edges[k][1]].
"If you determine, after analysing the structure of the interaction graph,
that no polynomial-time algorithm in any class from the library applies,
state so explicitly in your justification and provide your best
implementation; the verifier will only call you at small n.\""""
    paraphrased = """\
Graph on n vertices specified by edge list, every vertex has degree 3.
Compute Z(beta, edges, J, n) = sum over 2^n assignments of
exp( beta * sum_k J[k] * x[edges[k][0]] * x[edges[k][1]] )."""
    gold = Gold("no_efficient_known", "O(2^n)")
    probe_sizes = (8, 10)
    ladder_sizes = (16, 24, 40, 60, 100, 150)

    formula = Formula(
        shape=("n",),
        params=(Param("beta", "a real number"),
                Param("edges", "a list of m pairs [a, b] of distinct indices in 0..n-1; "
                               "every index is in exactly three pairs"),
                Param("J", "a list of m values in {-1, +1}")),
        terms=(term("J[k] * s[edges[k][0]] * s[edges[k][1]]", ("k", "0", "m - 1")),),
        derived=(Derived("m", "len(edges)"),),
        size_note="n is even and n >= 4; m = 3n/2 is the number of pairs in $edges",
    )

    def check_size(self, n):
        if n < 4 or n % 2:
            raise ValueError(f"{self.id}: a 3-regular graph needs an even n >= 4, got n={n}")

    def sample_params(self, rng, n):
        self.check_size(n)
        g = nx.random_regular_graph(3, n, seed=int(rng.integers(2**31)))
        edges = sorted(tuple(sorted(e)) for e in g.edges())
        return {
            "beta": sample_beta(rng),
            "edges": [list(e) for e in edges],
            "J": rng.choice([-1.0, 1.0], size=len(edges)).tolist(),
        }

    def gauge(self, params, signs):
        e = np.asarray(params["edges"], dtype=np.int64)
        g = np.asarray(signs, dtype=float)
        return {**params, "J": (np.asarray(params["J"], dtype=float) * g[e[:, 0]] * g[e[:, 1]]).tolist()}

    def to_model(self, params, n):
        self.check_size(n)
        beta = get_float(params, "beta")
        try:
            edges = np.asarray(params["edges"], dtype=np.int64)
        except KeyError:
            raise ValueError("missing parameter 'edges'") from None
        except (TypeError, ValueError):
            raise ValueError("parameter 'edges' must be a list of [i, j] integer pairs") from None
        if edges.ndim != 2 or edges.shape[1] != 2 or edges.size and (edges.min() < 0 or edges.max() >= n):
            raise ValueError(f"parameter 'edges' must be pairs of vertices in [0, {n})")
        if np.any(edges[:, 0] == edges[:, 1]):
            raise ValueError("parameter 'edges' contains a self-loop")
        J = np.asarray(params.get("J", None), dtype=np.float64) if "J" in params else None
        if J is None or J.shape != (len(edges),) or not np.all(np.abs(J) == 1.0):
            raise ValueError(f"parameter 'J' must be a list of {len(edges)} values in {{-1, +1}}")
        return IsingModel.from_arrays(n, beta, edges, J)


TASK = RegularGraphGlass()
