"""The exact oracle methods, one module each, on the project's one plugin registry (tasks/plugins.py).

A method module declares ``NAME``, ``ORDER`` (its place in the order of preference: closed forms
first, then the polynomial methods, then the exponential ones while they fit in memory), ``SUMMARY``
(one line for ``evolve oracle --help``), ``applies(model) -> reason | None`` and
``log_z(model) -> float`` (natural log Z), and may declare ``EARLY_UP_TO_N`` and ``EARLY_ORDER`` (a
method tried earlier on models of at most that many spins: brute force). It ends with
``register(sys.modules[__name__])``; the registry finds a new module by itself. The adapters import
the method's implementation lazily, so choosing a method loads only the methods it tries.
"""

from __future__ import annotations

from tasks.plugins import Registry

METHODS = Registry(__name__, "exact oracle method", key="NAME", required=("ORDER", "SUMMARY", "applies", "log_z"),
                   order="ORDER", defaults={"EARLY_UP_TO_N": 0, "EARLY_ORDER": None})
register = METHODS.register
