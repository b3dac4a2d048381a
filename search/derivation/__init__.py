"""Derivations: mappings as verified chains of transformations, from the task's formula alone.

``derive(task)`` compiles the task's formula into a reader, searches over chains of actions
(search/derivation/actions) ended by a solver (search/derivation/solvers), checks every step before
the next is tried, and renders the best chain as one program with its claims; ``DerivationProposer``
turns that into candidates. See docs/derivations.md.
"""

from search.derivation.engine import derive, derive_plan
from search.derivation.record import Derivation, Plan, Step

__all__ = ["Derivation", "Plan", "Step", "derive", "derive_plan"]
