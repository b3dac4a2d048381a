"""Layer 2: the candidate's restricted builtins and read-only views of the modules it imports.

Runs inside the sandbox child. Candidate code executes with ``__builtins__`` set to the dict
built by ``make_builtins``: ``eval``/``exec``/``compile``/``open``/``globals``/``locals``/
``vars``/``breakpoint``/``input``/``memoryview``/``help`` are absent; ``__import__`` enforces
the allowlist (library-internal imports keep using the real one); ``getattr``/``setattr``/
``delattr`` refuse dunder and frame/file attributes; ``type`` refuses 3-argument class
creation with unsafe dunder keys (and hands out a guarded callable when asked for a
metaclass, so ``type(int)(...)`` is checked too).

Every import returns a ``ModuleView`` instead of the module: attribute access on it refuses
private names, blocked members (``np.save``, ``np.ctypeslib``...), and submodules outside the
allowlist (``typing.sys``, ``dataclasses.inspect``...); allowed submodules come back as views.
A few callables that take attribute names as strings are wrapped (``operator.attrgetter``,
``operator.methodcaller``, ``functools.update_wrapper``/``wraps``,
``dataclasses.make_dataclass``).

Each refusal calls ``report(violation)`` first and then raises ``PermissionError`` (an
``ImportError`` for imports), so the host learns about it even if the candidate catches the
exception.
"""
from __future__ import annotations

import builtins
import sys
import types

from .policy import (ATTR_BUILTINS, BLOCKED_MEMBERS, DUNDER_METHODS_OK, DUNDER_OK,
                     FORBIDDEN_BUILTINS, attribute_violation, is_dunder, module_violation)

_REMOVED = FORBIDDEN_BUILTINS | {"exit", "quit", "copyright", "credits", "license",
                                 "__loader__", "__spec__", "__package__"}
_CLASS_KEYS_OK = {"__module__", "__qualname__", "__doc__", "__slots__"}


def _class_key_violation(key) -> str | None:
    if not isinstance(key, str):
        return None
    if is_dunder(key):
        if key in DUNDER_METHODS_OK or key in DUNDER_OK or key in _CLASS_KEYS_OK:
            return None
        return f"dunder:{key}"
    return attribute_violation(key)


def make_builtins(report):
    """The ``__builtins__`` dict for candidate code; ``report(name)`` records a violation."""
    real_getattr, real_setattr, real_delattr = builtins.getattr, builtins.setattr, builtins.delattr
    real_import, real_type = builtins.__import__, builtins.type
    module_type = types.ModuleType
    views: dict[int, object] = {}
    meta_guards: dict[int, object] = {}

    def refuse(violation: str, what: str):
        report(violation)
        raise PermissionError(f"sandbox: {what} is not allowed ({violation})")

    def check_attr(name):
        v = attribute_violation(name)
        if v:
            refuse(v, f"attribute {name!r}")

    # ----- module views -------------------------------------------------------------------
    class ModuleView:
        """Read-only, filtered view of an allowed module."""

        __slots__ = ("_sbx_module",)

        def __getattribute__(self, name):
            return view_getattr(object.__getattribute__(self, "_sbx_module"), name)

        def __setattr__(self, name, value):
            mod = object.__getattribute__(self, "_sbx_module")
            refuse(f"setattr:{mod.__name__}", f"assigning {mod.__name__}.{name}")

        def __delattr__(self, name):
            mod = object.__getattribute__(self, "_sbx_module")
            refuse(f"setattr:{mod.__name__}", f"deleting {mod.__name__}.{name}")

        def __repr__(self):
            return f"<sandboxed module {object.__getattribute__(self, '_sbx_module').__name__!r}>"

        def __dir__(self):
            mod = object.__getattribute__(self, "_sbx_module")
            return [n for n in dir(mod) if public(mod, n)]

    def public(mod, name) -> bool:
        return not name.startswith("_") and f"{mod.__name__}.{name}" not in BLOCKED_MEMBERS

    def view_of(mod):
        view = views.get(id(mod))
        if view is None:
            view = object.__new__(ModuleView)
            object.__setattr__(view, "_sbx_module", mod)
            views[id(mod)] = view
        return view

    def view_getattr(mod, name):
        modname = mod.__name__
        if name == "__all__":  # for `from m import *`
            names = real_getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
            return [n for n in names if isinstance(n, str) and public(mod, n)]
        if name in ("__name__", "__doc__"):
            return real_getattr(mod, name)
        if name.startswith("_"):
            refuse(f"dunder:{name}" if is_dunder(name) else f"module:{modname}.{name}",
                   f"private name {modname}.{name}")
        full = f"{modname}.{name}"
        if full in BLOCKED_MEMBERS:
            refuse(f"module:{full}", full)
        try:
            value = real_getattr(mod, name)
        except AttributeError:
            if not hasattr(mod, "__path__") or module_violation(full):
                raise
            try:
                real_import(full, None, None, (), 0)  # a submodule not loaded yet
            except ImportError:
                raise AttributeError(f"module {modname!r} has no attribute {name!r}") from None
            value = sys.modules[full]
        if isinstance(value, module_type):
            if module_violation(value.__name__):
                refuse(f"module:{value.__name__}", f"module {value.__name__} via {full}")
            return view_of(value)
        return overrides.get(full, value)

    # ----- guarded builtins ---------------------------------------------------------------
    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and isinstance(fromlist, list) and not fromlist and isinstance(name, str):
            # PyImport_Import from C code (numpy's lazy `numpy._core._methods` for a.mean(),
            # ...) calls __import__ from the caller's builtins with fromlist=[] and then takes
            # the module from sys.modules, ignoring what we return. Python code never passes
            # a list here. Import for the side effect and hand back nothing: a candidate
            # mimicking the call gains no module object.
            real_import(name, None, None, (), 0)
            return None
        if level:
            refuse("import:relative", "relative import")
        v = module_violation(name)
        if v:
            report(v)
            raise ImportError(f"sandbox: import of {name!r} is not allowed ({v})")
        top = real_import(name, None, None, (), 0)
        if fromlist:
            return view_of(sys.modules[name])
        return view_of(top)

    def guarded_getattr(obj, name, *default):
        check_attr(name)
        return real_getattr(obj, name, *default)

    def guarded_setattr(obj, name, value):
        check_attr(name)
        return real_setattr(obj, name, value)

    def guarded_delattr(obj, name):
        check_attr(name)
        return real_delattr(obj, name)

    def check_namespace(ns):
        for key in list(ns):
            v = _class_key_violation(key)
            if v:
                refuse(v, f"class attribute {key!r}")

    def guard_meta(meta):
        def guarded_meta(*args, **kwargs):
            if len(args) == 3 and isinstance(args[2], dict):
                check_namespace(args[2])
            return meta(*args, **kwargs)
        return guarded_meta

    def guarded_type(*args, **kwargs):
        if len(args) == 1 and not kwargs:
            t = real_type(args[0])
            if issubclass(t, real_type):  # a metaclass: hand out a checked callable
                g = meta_guards.get(id(t))
                if g is None:
                    g = meta_guards[id(t)] = guard_meta(t)
                return g
            return t
        if len(args) == 3 and isinstance(args[2], dict):
            check_namespace(args[2])
        return real_type(*args, **kwargs)

    # ----- wrapped library callables that take attribute names as strings ------------------
    import dataclasses
    import functools
    import operator

    def attrgetter(*names):
        for dotted in names:
            for part in str(dotted).split("."):
                check_attr(part)
        return operator.attrgetter(*names)

    def methodcaller(name, *args, **kwargs):
        check_attr(name)
        return operator.methodcaller(name, *args, **kwargs)

    def check_wrapper_names(assigned, updated):
        if tuple(assigned) != functools.WRAPPER_ASSIGNMENTS or tuple(updated) != functools.WRAPPER_UPDATES:
            for name in tuple(assigned) + tuple(updated):
                if name not in functools.WRAPPER_ASSIGNMENTS + functools.WRAPPER_UPDATES:
                    check_attr(name)

    def update_wrapper(wrapper, wrapped, assigned=functools.WRAPPER_ASSIGNMENTS,
                       updated=functools.WRAPPER_UPDATES):
        check_wrapper_names(assigned, updated)
        return functools.update_wrapper(wrapper, wrapped, assigned, updated)

    def wraps(wrapped, assigned=functools.WRAPPER_ASSIGNMENTS, updated=functools.WRAPPER_UPDATES):
        check_wrapper_names(assigned, updated)
        return functools.wraps(wrapped, assigned, updated)

    def make_dataclass(cls_name, fields, *args, namespace=None, **kwargs):
        for f in fields:
            name = f if isinstance(f, str) else (f[0] if isinstance(f, (tuple, list)) and f else None)
            if isinstance(name, str):
                check_attr(name)
            if isinstance(name, str) and is_dunder(name):
                refuse(f"dunder:{name}", f"dataclass field {name!r}")
        if namespace:
            check_namespace(namespace)
        return dataclasses.make_dataclass(cls_name, fields, *args, namespace=namespace, **kwargs)

    overrides = {
        "operator.attrgetter": attrgetter, "operator.methodcaller": methodcaller,
        "functools.update_wrapper": update_wrapper, "functools.wraps": wraps,
        "dataclasses.make_dataclass": make_dataclass,
    }

    table = {k: v for k, v in builtins.__dict__.items() if k not in _REMOVED}
    table.update({
        "__import__": guarded_import, "getattr": guarded_getattr, "setattr": guarded_setattr,
        "delattr": guarded_delattr, "type": guarded_type, "__name__": "builtins",
    })
    assert not (ATTR_BUILTINS - table.keys())
    return table
