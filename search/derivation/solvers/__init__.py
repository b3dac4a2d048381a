"""Terminal solvers of a derivation: the structural templates plus the methods they lack.

A solver module of this package declares the names in
:data:`search.derivation.solvers.adapters.MODULE_SOLVER_PROTOCOL` and registers itself
(``register(ModuleSolver(sys.modules[__name__]))`` at its end); templates.py registers the structural
templates with their adapter. The registry finds the modules by itself, so a new solver is one module.
``SOLVERS`` maps names to solvers in the order a search tries them (their ``ORDER``); ``CHEAP`` lists the
solvers whose code the view tries on every state (their declared ``cheap`` capability).
"""

from __future__ import annotations

from tasks.plugins import Registry

_registry = Registry(__name__, "derivation solver", key="NAME", order="ORDER",
                     required=("SUMMARY", "OPTION_SPACE", "ORDER", "ENTRY", "entry", "energy", "cheap", "fallback",
                               "source", "applies", "claims", "tune"))
register = _registry.register
#: name -> solver, in the order a search tries them
SOLVERS = _registry


def cheap_solvers() -> tuple:
    """The solvers whose code the view tries on every state (declared ``cheap``)."""
    return tuple(s for s in SOLVERS.values() if s.cheap)


def get_solver(name: str):
    return _registry.lookup(name)
