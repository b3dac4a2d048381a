"""T09: Ising model on a random tree with random couplings and fields (StatMechBench-v1, Tier 1)."""

import numpy as np

from tasks.base import Gold, Task, get_array, get_float, sample_beta
from tasks.catalog._v1_common import V1_CITATION
from tasks.formula import Formula, Param, term
from tasks.model import IsingModel


def tree_parents(params: dict, n: int) -> np.ndarray:
    """The ``parent`` parameter as an int64 array, checked to be a tree rooted at spin 0:
    parent[0] = -1 and following parents from any spin reaches 0 (no cycle, nothing outside [0, n))."""
    if "parent" not in params:
        raise ValueError("missing parameter 'parent'")
    try:
        raw = np.asarray(params["parent"], dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("parameter 'parent' must be a list of integers") from None
    if raw.shape != (n,) or not np.all(np.isfinite(raw)) or not np.all(raw == np.round(raw)):
        raise ValueError(f"parameter 'parent' must be a list of {n} integers")
    parent = raw.astype(np.int64)
    if parent[0] != -1:
        raise ValueError("parameter 'parent' must have parent[0] = -1 (spin 0 is the root)")
    rest = parent[1:]
    if np.any(rest < 0) or np.any(rest >= n) or np.any(rest == np.arange(1, n)):
        raise ValueError(f"parameter 'parent': parent[i] must be another spin in [0, {n}) for i >= 1")
    up = parent.copy()
    up[0] = 0
    for _ in range(int(np.ceil(np.log2(max(n, 2)))) + 1):   # pointer doubling: 2^k steps up
        up = up[up]
    if np.any(up != 0):
        raise ValueError("parameter 'parent' has a cycle: not every spin leads up to the root 0")
    return parent


class RandomTree(Task):
    id = "T09"
    title = "Ising model on a random tree, random couplings and fields"
    tier = 1
    citation = V1_CITATION
    canonical = """\
You are given an **Ising model on a random tree** with n spins s_i in {-1,+1},
random couplings on the tree's edges and random site fields. The tree is rooted at
spin 0 and given by a parent list: parent[0] = -1, and for i = 1, ..., n-1 spin i is
joined to spin parent[i] (the labels are in no particular order: parent[i] may be
larger than i). Edge i (i >= 1) carries the coupling J[i-1].
H(s) = - sum_{i=1}^{n-1} J[i-1] * s_i * s_{parent[i]} - sum_{i=0}^{n-1} h[i] * s_i.
Implement
def Z_efficient(params: dict, n: int) -> float:
    # params has "beta" (float), "parent" (list of n ints), "J" (list of n-1 floats),
    # "h" (list of n floats)
computing Z = sum_s exp(-beta * H(s)) in time polynomial in n (NOT exponential)."""
    paraphrased = """\
n binary variables x_0, ..., x_{n-1} in {-1,+1}. A list parent of length n has
parent[0] = -1; for every i >= 1, parent[i] is another index, and following parent
links from any index always ends at index 0 (parent[i] may be larger than i).
Real weights J[0], ..., J[n-2] and h[0], ..., h[n-1] are given. Compute
Z(beta, parent, J, h, n) = sum over all 2^n assignments x of
exp( beta * sum_{i=1}^{n-1} J[i-1] * x_i * x_{parent[i]}
+ beta * sum_{i=0}^{n-1} h[i] * x_i )
in time polynomial in n."""
    hint = "The interaction graph has no cycles."
    gold = Gold("treewidth_bounded", "O(n)")
    probe_sizes = (6, 10, 14)
    #: the registry's exact method for trees with fields is the transfer matrix along a greedy order,
    #: which it builds only up to n = 1500 (beyond, reverse Cuthill-McKee gives frontiers of hundreds)
    ladder_sizes = (100, 300, 1000, 1500)

    formula = Formula(
        shape=("n",),
        params=(Param("beta", "a real number"),
                Param("parent", "a list of n integers: $parent[0] = -1, every other entry is another index in "
                                "0..n-1, and following $parent from any index ends at 0"),
                Param("J", "a list of n-1 real numbers"), Param("h", "a list of n real numbers")),
        terms=(term("J[i - 1] * s[i] * s[parent[i]]", ("i", "1", "n - 1")), term("h[i] * s[i]", ("i", "0", "n - 1"))),
        size_note="n >= 2",
    )

    def sample_params(self, rng, n):
        self.check_size(n)
        # a random recursive tree (each new vertex joins a uniform earlier one), then the labels
        # 1..n-1 shuffled so that the parent list is in no elimination order
        attach = np.zeros(n, dtype=np.int64)
        attach[1:] = np.floor(rng.random(n - 1) * np.arange(1, n)).astype(np.int64)
        label = np.concatenate([[0], 1 + rng.permutation(n - 1)])     # old vertex -> new label
        parent = np.full(n, -1, dtype=np.int64)
        parent[label[1:]] = label[attach[1:]]
        return {
            "beta": sample_beta(rng),
            "parent": parent.tolist(),
            "J": rng.uniform(-1.5, 1.5, size=n - 1).tolist(),
            "h": rng.uniform(-1.0, 1.0, size=n).tolist(),
        }

    def flip_fields(self, params):
        return {**params, "h": [-x for x in params["h"]]}

    def gauge(self, params, signs):
        g = np.asarray(signs, dtype=float)
        p = np.asarray(params["parent"], dtype=np.int64)
        i = np.arange(1, len(p))
        return {**params, "J": (np.asarray(params["J"], dtype=float) * g[i] * g[p[i]]).tolist(),
                "h": (np.asarray(params["h"], dtype=float) * g).tolist()}

    def to_model(self, params, n):
        self.check_size(n)
        beta = get_float(params, "beta")
        parent = tree_parents(params, n)
        J = get_array(params, "J", (n - 1,))
        h = get_array(params, "h", (n,))
        i = np.arange(1, n)
        return IsingModel.from_arrays(n, beta, np.stack([i, parent[i]], 1), J, h)


TASK = RandomTree()
