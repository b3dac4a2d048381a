"""Terminal solvers of a derivation: the structural templates plus the methods they lack.

A solver module of this package declares the names in
:data:`search.derivation.solvers.adapters.MODULE_SOLVER_PROTOCOL` and registers itself
(``register(ModuleSolver(sys.modules[__name__]))`` at its end); templates.py registers the structural
templates with their adapter. The registry finds the modules by itself, so a new solver is one module.
``SOLVERS`` maps names to solvers in the order a search tries them (their ``ORDER``); ``CHEAP`` lists the
solvers whose code the view tries on every state (their declared ``cheap`` capability).

``ANSWER_SOLVERS`` is a second registry of the same shape for solvers that are not exact: a module that
declares ``ANSWER`` ("lower": a rigorous lower bound; "upper": a rigorous upper bound; "approximation":
a value with a control parameter ``CONTROL``) registers itself with ``register_answer``. The engine never
ranks them with the exact plans: search/derivation/answers.py turns them into programs that answer with
bounds or an approximation (evaluators/answer_kinds.py) when nothing polynomial is exact.
"""

from __future__ import annotations

from tasks.plugins import Registry

_registry = Registry(__name__, "derivation solver", key="NAME", order="ORDER",
                     required=("SUMMARY", "OPTION_SPACE", "ORDER", "ENTRY", "entry", "energy", "cheap", "fallback",
                               "step_check", "source", "applies", "claims", "tune"))
register = _registry.register
#: name -> solver, in the order a search tries them
SOLVERS = _registry


def cheap_solvers() -> tuple:
    """The solvers whose code the view tries on every state (declared ``cheap``)."""
    return tuple(s for s in SOLVERS.values() if s.cheap)


def step_checker(kind: str):
    """The solver that finishes a derivation step's check exactly: the one declaring ``step_check = kind``:
    "any" for small models of any term order (enumeration), "pairwise" for pair models too large to
    enumerate (a tensor contraction), "large" for larger models with terms on three or more spins."""
    found = [s for s in SOLVERS.values() if s.step_check == kind]
    if not found:
        raise LookupError(f"no derivation solver declares step_check = {kind!r}")
    return found[0]


_answers = Registry(__name__, "answer solver", key="NAME", order="ORDER",
                    required=("SUMMARY", "OPTION_SPACE", "ORDER", "ENTRY", "entry", "answer", "source", "applies",
                              "claims"))
register_answer = _answers.register
#: name -> solver that answers with a bound or an approximation, in their ``ORDER``
ANSWER_SOLVERS = _answers


def get_solver(name: str):
    if name not in _registry and name in _answers:
        return _answers.lookup(name)
    return _registry.lookup(name)
