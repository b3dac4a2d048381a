"""The one registry mechanism every plugin kind uses: proposers, strategies, derivation actions and
solvers (it lives in the lowest layer so that every layer can use it).

A plugin is an object (a class, or a module) that declares the attributes of its kind's protocol;
the module that defines it registers it with its kind's :class:`Registry`::

    from search.derivation.actions import register
    ...
    register(sys.modules[__name__])          # a plugin written as a module

    @register                                # a plugin written as a class
    class Doubling: ...

The registry imports every module of its package the first time anything is looked up, so a new
module is found without being listed anywhere, and it refuses a plugin that lacks an attribute its
protocol declares (naming it), so a plugin is checked when it is loaded, not when the core first
touches the missing attribute. What a plugin can do is a declared flag (a solver's ``CHEAP``, an
action's ``FIRST_STEP``, a proposer's ``calls_models``), never its name.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Iterator, MutableMapping


class PluginError(TypeError):
    """A plugin that does not declare what its kind's protocol requires."""


class Registry(MutableMapping):
    """Plugins of one kind by name (the ``key`` attribute), discovered in the modules of ``package``.

    Iteration is in the plugins' declared ``order`` attribute (``ORDER`` for module plugins), then by
    name: the order in which, for instance, a derivation search tries its actions. Item assignment
    and deletion exist for tests that replace a plugin for a while (monkeypatch)."""

    def __init__(self, package: str, kind: str, key: str = "name", required: tuple[str, ...] = (),
                 order: str | None = None, defaults: dict | None = None):
        self.package, self.kind, self.key, self.required, self.order = package, kind, key, required, order
        #: capability flags a plugin may leave out: set to these values when it registers
        self.defaults = dict(defaults or {})
        self.entries: dict[str, object] = {}
        self._discovered = False

    # -- registration ---------------------------------------------------------------------------
    def register(self, plugin):
        """Make ``plugin`` available under its key attribute; PluginError when a declared attribute is
        missing. Returns the plugin (usable as a class decorator)."""
        missing = [a for a in (self.key, *self.required) if not hasattr(plugin, a)]
        if missing:
            what = getattr(plugin, "__name__", repr(plugin))
            raise PluginError(f"{self.kind} {what} does not declare {', '.join(missing)} "
                              f"(a {self.kind} declares {', '.join((self.key, *self.required))})")
        for flag, value in self.defaults.items():
            if not hasattr(plugin, flag):
                setattr(plugin, flag, value)
        self.entries[getattr(plugin, self.key)] = plugin
        return plugin

    def _discover(self) -> None:
        if self._discovered:
            return
        self._discovered = True
        for info in pkgutil.iter_modules(sys.modules[self.package].__path__):
            importlib.import_module(f"{self.package}.{info.name}")

    # -- lookup -----------------------------------------------------------------------------------
    def lookup(self, name: str):
        """The plugin registered as ``name`` (KeyError naming the known ones)."""
        if name not in self.entries:
            self._discovered = False            # a module added to the package since the last look
            self._discover()
        if name not in self.entries:
            raise KeyError(f"unknown {self.kind} {name!r}; known: {', '.join(self)}")
        return self.entries[name]

    def names(self) -> list[str]:
        """Every registered name, alphabetical (modules added to the package since are found)."""
        self._discovered = False
        self._discover()
        return sorted(self.entries)

    def _sort_key(self, name: str):
        rank = getattr(self.entries[name], self.order, 0) if self.order else 0
        return (rank, name)

    def __getitem__(self, name: str):
        return self.lookup(name)

    def __setitem__(self, name: str, plugin) -> None:
        self._discover()
        self.entries[name] = plugin

    def __delitem__(self, name: str) -> None:
        self._discover()
        del self.entries[name]

    def __iter__(self) -> Iterator[str]:
        self._discover()
        return iter(sorted(self.entries, key=self._sort_key) if self.order else list(self.entries))

    def __len__(self) -> int:
        self._discover()
        return len(self.entries)

    def __contains__(self, name) -> bool:
        if name not in self.entries:
            self._discovered = False            # a module added to the package since the last look
            self._discover()
        return name in self.entries
