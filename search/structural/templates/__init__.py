"""Transformation templates of the structural proposer.

Each template module is ordinary Python whose functions are also the text of the generated
programs: ``source(options)`` renders the module's ``IMPORTS`` and the source of its
``FUNCTIONS`` (read with :func:`inspect.getsource`), so what the tests import and call is exactly
what a candidate runs. Every template defines the same entry point::

    _method_log_z(edges, J, h, rank_one, positions, beta, n, options) -> float   # natural log Z

with the reader's arrays in the project's sign convention, H = -(sum J s_i s_j + sum h s_i
+ sum over rank-one blocks (a/2)[(u.s)^2 - |u|^2]), and ``options`` a dict of the plan's choices.
A template module also declares ``NAME``, ``ORDER`` (when it is tried), ``OPTION_SPACE`` (choice ->
allowed values, the first one the default), ``applies(view) -> str | None`` and
``claims(view, options) -> Claims``, and registers itself: ``register(sys.modules[__name__])``.

Generated code may import only the sandbox's allowlist (math, numpy, scipy, itertools, functools,
operator, fractions, collections, cmath, decimal, dataclasses, typing, networkx, pymatching).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from tasks.plugins import Registry

#: every template module registers itself (``register(sys.modules[__name__])`` at its end); the
#: package's other modules are helpers that templates render into their programs
_registry = Registry(__name__, "structural template", key="NAME",
                     required=("ORDER", "OPTION_SPACE", "applies", "claims", "source", "_method_log_z"), order="ORDER")
register = _registry.register


@dataclass(frozen=True)
class Claims:
    """What a plan claims about itself (the paper's response schema, without code)."""

    tractable_class: str
    complexity_O: str
    confidence: float
    justification: str
    #: lower is better: 0 polynomial, 1 exp(sqrt n), 2 exp(n); used to rank plans
    cost_rank: int


def render(imports: str, functions) -> str:
    """The source text of ``functions`` under ``imports``, separated by blank lines."""
    parts = [imports.strip()]
    parts += [inspect.getsource(f).rstrip() for f in functions]
    return "\n\n\n".join(parts) + "\n"


def measured_widths(view, key, width_of, stop_above=None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(sizes, widths): ``width_of(instance)`` for each model in ``view.instances`` (the family's
    models as the templates read them, smallest first), computed once per view and ``key``; sizes
    past the first width over ``stop_above`` are left out (the program cannot run there). A template
    claims from the width of the order it actually uses, not from the best width any order reaches."""
    if key not in view.widths:
        sizes, widths = [], []
        for m in sorted(view.instances, key=lambda m: m.n):
            sizes.append(m.n)
            widths.append(int(width_of(m)))
            if stop_above is not None and widths[-1] > stop_above:
                break
        view.widths[key] = (tuple(sizes), tuple(widths))
    return view.widths[key]


def lattice_exponent(sizes, widths) -> int:
    """k such that the widths are about k L (L = sqrt(n)) at the largest size: 2^(kL) states."""
    n, w = max(zip(sizes, widths))
    side = max(1, int(round(n ** 0.5)))
    return max(1, -(-(w - 2) // side))


def default_options(space: dict) -> dict:
    return {k: v[0] for k, v in space.items()}


def get_template(name: str):
    """The template module called ``name`` (KeyError naming the known ones)."""
    return _registry.lookup(name)


def template_names() -> list[str]:
    """Every template's name, in the order the structural proposer tries them (their ORDER)."""
    return list(_registry)


def all_templates():
    return [get_template(name) for name in template_names()]
