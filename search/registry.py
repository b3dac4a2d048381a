"""Classes registered by name and discovered in the modules of one package (proposers, strategies).

A module of the package registers its class with ``@registry.register``; the registry imports every
module of the package the first time a name is asked for, so a new module is found without
being listed anywhere.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys


class Registry:
    def __init__(self, package: str, kind: str):
        self.package, self.kind = package, kind
        self.classes: dict[str, type] = {}

    def register(self, cls: type) -> type:
        """Class decorator: make ``cls`` available under ``cls.name``."""
        self.classes[cls.name] = cls
        return cls

    def _discover(self) -> None:
        for info in pkgutil.iter_modules(sys.modules[self.package].__path__):
            importlib.import_module(f"{self.package}.{info.name}")

    def get(self, name: str) -> type:
        """The class registered as ``name`` (KeyError naming the known ones)."""
        if name not in self.classes:
            self._discover()
        if name not in self.classes:
            raise KeyError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}")
        return self.classes[name]

    def names(self) -> list[str]:
        self._discover()
        return sorted(self.classes)
