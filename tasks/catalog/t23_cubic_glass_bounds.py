"""T23: rigorous bounds on log Z of the 3D +-J Ising glass on an open L x L x L cube (Tier 3).

The model is T15's (formula, sampler, gauge and model); the task asks for rigorous bounds (lo, hi) on
log Z, as T22 does for random 3-regular graphs (tasks/catalog/t22_regular_glass_bounds.py): judged valid
against brute force at the probes and the exact oracles on the ladder (a slab transfer matrix reaches
L = 5), ranked by the gap per spin. docs/tier3.md records the mean-field / tree-reweighted gap.
"""

from tasks.base import Gold
from tasks.catalog.t15_cubic_glass import CubicGlass
from tasks.catalog.t22_regular_glass_bounds import BOUNDS_REQUEST


class CubicGlassBounds(CubicGlass):
    id = "T23"
    title = "Bounds on log Z of the 3D +-J Ising glass on an open cube"
    tier = 3
    canonical = CubicGlass.canonical.split('"If you determine')[0].rstrip() + "\n" + BOUNDS_REQUEST
    paraphrased = CubicGlass.paraphrased.rstrip() + "\n" + BOUNDS_REQUEST
    gold = Gold("no_efficient_known", "O(n 2^(n^(2/3)))")


TASK = CubicGlassBounds()
