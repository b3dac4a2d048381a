"""Variable elimination whose width grows with the size: the exact exponential method for models with terms
on three or more spins beyond enumeration (the tensor contraction template takes pair models only).

The program is the elimination solver's (search/derivation/solvers/elimination.py: peeling, then bucket
elimination in log space along the better greedy order), which refuses (MemoryError: the verifier's
"memory budget exhausted") a step over more than ELIM_MAX_WIDTH = 20 other spins. That solver claims a
polynomial plan only where its width is bounded and small; this one claims the same code as what it is where
the width grows: exact, O(n 2^w) for the order's width w, w a fraction of n (the random-plaquette gauge
model of the surface code with faulty measurements: w ~ a time slice of the space-time lattice). It is
also the exact finisher of a derivation step's check on such models too large to enumerate
(``STEP_CHECK = "large"``).
"""

from __future__ import annotations

import sys

from search.derivation.solvers import elimination, register
from search.derivation.solvers.adapters import ModuleSolver
from tasks.family import width_growth

NAME = "wide_elimination"
SUMMARY = ("variable elimination in log space along a greedy order, width growing with n (exponential in it): "
           "models with terms on three or more spins")
OPTION_SPACE: dict = {}
ORDER = 85                 # after elimination (80), before enumeration (90)
CHEAP = False
STEP_CHECK = "large"       # the exact finisher of a step's check on large models with multi-spin terms
IMPORTS = elimination.IMPORTS
CONSTANTS = elimination.CONSTANTS
FUNCTIONS = elimination.FUNCTIONS
ENTRY = elimination.ENTRY


def applies(view) -> str | None:
    if view.kind != "model":
        return "there is no spin model yet"
    if view.statistic != "log_z":
        return "it computes log Z, not a mean energy"
    if view.max_order <= 2:
        return "every term is on at most two spins: the tensor contraction takes pair models"
    if not view.wide_widths:
        return view.wide_reason or "no elimination order was measured"
    if elimination.applies(view) is None:
        return "the width is bounded: the elimination solver claims it as polynomial"
    return None


def _fraction(sizes, widths) -> int:
    """k with width <= n / k on every size measured (a simple fraction for the claim)."""
    slope = max(w / max(n, 1) for n, w in zip(sizes, widths))
    for k in (8, 7, 6, 5, 4, 3, 2):
        if slope <= 1.0 / k:
            return k
    return 1


def claims(view, options):
    sizes, widths = view.n_spins[:len(view.wide_widths)], view.wide_widths
    k = _fraction(sizes, widths)
    claim = "O(n 2^n)" if k == 1 else f"O(n 2^(n/{k}))"
    measured = ", ".join(f"{w} at n = {n}" for n, w in zip(sizes, widths))
    beyond = f"; {view.wide_reason}" if view.wide_reason else ""
    kind = width_growth(sizes, widths)[0] if len(sizes) > 1 else "growing"
    return (("no_efficient_known",), claim,
            f"Variable elimination in log space along a greedy order of the interaction hypergraph (widths "
            f"{measured} spins{beyond}; {kind}): each step a log-sum-exp over a table of 2^(w+1) entries, so "
            f"O(n 2^w) with w about n/{k}: exact at every temperature, exponential. The program refuses a step "
            f"over more than {elimination.ELIM_MAX_WIDTH} other spins.", 2)


register(ModuleSolver(sys.modules[__name__]))
