"""What candidate code may do: the import allowlist, the forbidden names and the static AST check.

Layer 1 of the sandbox. ``static_check`` runs on the host before anything executes; the same
name sets drive the run-time guards (``guards.py``) and the audit hook (``audit.py``).

Violation names are ``kind:detail`` strings: ``import:os``, ``builtin:eval``,
``builtin:getattr(dynamic)``, ``dunder:__class__``, ``attr:f_globals``, ``syntax:...``.
"""
from __future__ import annotations

import ast
import re

# The StatMechBench-v0 paper's allowlist (Appendix C), plus networkx (planarity and combinatorial
# embeddings: a planar model without a drawing needs them, and they are not to be hand-written)
# and pymatching (exact minimum-weight perfect matching by sparse blossom, in C++: the ground state
# of a planar glass as a minimum-weight T-join in milliseconds where an integer program takes
# 20-40 s); submodules are allowed unless blocked below.
ALLOWED_IMPORTS = frozenset({
    "math", "numpy", "scipy", "itertools", "functools", "operator", "fractions",
    "collections", "cmath", "decimal", "dataclasses", "typing", "networkx", "pymatching",
})

# pymatching's command line (reads and writes files) and its implementation module (which holds
# pathlib.Path and matplotlib); candidates use pymatching.Matching. Its loaders that read a file from
# native code, where the audit hook does not see the open, are refused by attribute name below.
_PYMATCHING_BLOCKED = {"pymatching.cli", "pymatching.matching"}

# networkx's file readers and writers, drawing (pydot, graphviz and matplotlib start processes or
# write files), its lazy importer (imports any module by name), decorators that open files, and
# its global config (the audit hook refuses the files and processes anyway; this refuses them by name).
_NETWORKX_BLOCKED = {f"networkx.{name}" for name in (
    "readwrite", "drawing", "utils", "lazy_imports", "config", "nx_agraph", "nx_pydot", "nx_pylab", "nx_latex",
    "to_latex", "to_latex_raw", "write_latex", "relabel_gexf_graph",
    *(f"read_{k}" for k in ("adjlist", "edgelist", "gexf", "gml", "graph6", "graphml", "leda", "multiline_adjlist",
                            "pajek", "sparse6", "weighted_edgelist")),
    *(f"write_{k}" for k in ("adjlist", "edgelist", "gexf", "gml", "graph6", "graphml", "graphml_lxml",
                             "graphml_xml", "multiline_adjlist", "network_text", "pajek", "sparse6",
                             "weighted_edgelist")),
    *(f"draw{k}" for k in ("", "_bipartite", "_circular", "_forceatlas2", "_kamada_kawai", "_networkx",
                           "_networkx_edge_labels", "_networkx_edges", "_networkx_labels", "_networkx_nodes",
                           "_planar", "_random", "_shell", "_spectral", "_spring")))}

# Members of allowed packages that do file, process or raw-memory work (full dotted names).
# Refused by the static check (``from numpy import save``, ``import numpy.testing``) and by
# the run-time module views (``np.save``). Private names (leading underscore) are refused too.
BLOCKED_MEMBERS = frozenset({
    "numpy.load", "numpy.save", "numpy.savez", "numpy.savez_compressed", "numpy.savetxt",
    "numpy.loadtxt", "numpy.genfromtxt", "numpy.fromfile", "numpy.fromregex", "numpy.memmap",
    "numpy.ctypeslib", "numpy.f2py", "numpy.testing", "numpy.distutils", "numpy.DataSource",
    "numpy.show_config", "numpy.show_runtime", "numpy.info", "numpy.lookfor",
    "numpy.lib.format", "numpy.lib.npyio", "numpy.lib.DataSource", "numpy.lib.utils",
    "numpy.lib.stride_tricks.as_strided", "numpy.rec.fromfile", "numpy.ma.load",
    "numpy.ma.dump", "numpy.ma.loads", "numpy.ma.dumps", "numpy.core",
    "scipy.io", "scipy.datasets", "scipy.misc", "scipy.LowLevelCallable", "scipy.show_config",
    "scipy.test", "scipy.sparse.load_npz", "scipy.sparse.save_npz",
}) | _NETWORKX_BLOCKED | _PYMATCHING_BLOCKED

# Builtins that are removed from the candidate's builtins and refused by name.
FORBIDDEN_BUILTINS = frozenset({
    "eval", "exec", "compile", "__import__", "open", "globals", "locals", "vars",
    "breakpoint", "input", "memoryview", "help",
})
ATTR_BUILTINS = frozenset({"getattr", "setattr", "delattr"})

# Dunder names a candidate may read or assign (Name or Attribute). Justification: __name__
# and __qualname__/__doc__ are strings; __init__/__post_init__ are needed for
# super().__init__(...); __slots__/__all__ are plain class/module declarations.
DUNDER_OK = frozenset({"__name__", "__qualname__", "__doc__", "__init__", "__post_init__",
                       "__slots__", "__all__", "__main__"})

# Dunder methods a candidate class may define: the arithmetic, comparison, container and
# conversion protocols. Not allowed: __array_interface__/__array_struct__ (let numpy wrap raw
# memory), __getattribute__, __init_subclass__, __class_getitem__, __set_name__, __reduce__,
# __del__ and the rest.
_OPS = ("add sub mul matmul truediv floordiv mod divmod pow lshift rshift and or xor").split()
DUNDER_METHODS_OK = frozenset(
    {f"__{p}{op}__" for op in _OPS for p in ("", "r", "i")}
    | {f"__{m}__" for m in (
        "init post_init repr str format hash eq ne lt le gt ge bool len iter next reversed "
        "contains getitem setitem delitem missing call enter exit neg pos abs invert "
        "float int index complex round trunc floor ceil array array_ufunc array_function "
        "copy deepcopy length_hint"
    ).split()}
)

# Non-dunder attributes that expose frames, code, raw memory or files.
SENSITIVE_ATTRS = frozenset({
    "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "f_trace", "f_lasti",
    "tb_frame", "tb_next", "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code",
    "cr_await", "ag_frame", "ag_code", "ag_await", "co_code", "co_consts", "co_names",
    "ctypes", "ctypeslib", "tofile", "fromfile", "memmap", "as_strided", "savetxt",
    "loadtxt", "genfromtxt", "savez", "savez_compressed", "f2py", "LowLevelCallable",
    "load_npz", "save_npz",
    # pymatching: file loaders (native reads), stim loaders, matplotlib drawing
    "from_detector_error_model_file", "from_stim_circuit_file", "from_stim_circuit", "from_detector_error_model",
    "draw",
})

# Dunders that generated code (dataclasses, namedtuple, typing) never needs: a string compiled
# at run time that mentions one of them is refused by the audit hook.
DANGEROUS_DUNDERS = frozenset({
    "__subclasses__", "__globals__", "__builtins__", "__import__", "__code__", "__closure__",
    "__func__", "__self__", "__base__", "__bases__", "__mro__", "__dict__", "__getattribute__",
    "__loader__", "__spec__", "__reduce__", "__reduce_ex__", "__traceback__",
    "__init_subclass__", "__subclasshook__", "__objclass__", "__array_interface__",
    "__array_struct__", "__class_getitem__", "__set_name__", "__wrapped__", "__kwdefaults__",
    "__defaults__", "__annotations__",
})

_DUNDER = re.compile(r"__[a-z][a-z0-9_]*__")  # Python's special names are lower case


def is_dunder(name: str) -> bool:
    """True for ``__x__`` names."""
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def attribute_violation(name: str) -> str | None:
    """The violation for reading/writing attribute ``name``, or None if it is allowed."""
    if not isinstance(name, str):
        return "builtin:getattr(non-str)"
    if is_dunder(name):
        return None if name in DUNDER_OK else f"dunder:{name}"
    if name in SENSITIVE_ATTRS:
        return f"attr:{name}"
    return None


def module_violation(fullname: str) -> str | None:
    """The violation for importing module or member ``fullname`` (dotted), or None."""
    if fullname == "__future__" or fullname.startswith("__future__."):
        return None  # compiler directives (from __future__ import annotations)
    parts = fullname.split(".")
    if parts[0] not in ALLOWED_IMPORTS:
        return f"import:{parts[0]}"
    if any(p.startswith("_") for p in parts[1:]):
        return f"import:{fullname}"
    for i in range(2, len(parts) + 1):
        if ".".join(parts[:i]) in BLOCKED_MEMBERS:
            return f"import:{'.'.join(parts[:i])}"
    return None


class _Checker(ast.NodeVisitor):
    def __init__(self):
        self.found: list[str] = []
        self._class_depth = 0

    def add(self, v: str | None) -> None:
        if v and v not in self.found:
            self.found.append(v)

    def visit_Import(self, node):
        for alias in node.names:
            self.add(module_violation(alias.name))
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        if node.level:
            self.add("import:relative")
        elif node.module:
            v = module_violation(node.module)
            self.add(v)
            if v is None:
                for alias in node.names:
                    if alias.name != "*":
                        self.add(module_violation(f"{node.module}.{alias.name}"))
        self.generic_visit(node)

    def visit_Name(self, node):
        self._name(node.id)
        if node.id in ATTR_BUILTINS:
            # getattr used as a value (reduce(getattr, ...), g = getattr): name is dynamic
            self.add(f"builtin:{node.id}(dynamic)")
        self.generic_visit(node)

    def _name(self, name: str):
        if name in FORBIDDEN_BUILTINS:
            self.add(f"builtin:{name}")
        elif is_dunder(name) and name not in DUNDER_OK:
            self.add(f"dunder:{name}")

    def visit_Call(self, node):
        f = node.func
        if isinstance(f, ast.Name) and f.id in ATTR_BUILTINS:
            if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                    and isinstance(node.args[1].value, str) and not node.keywords:
                self.add(attribute_violation(node.args[1].value))
            else:
                self.add(f"builtin:{f.id}(dynamic)")
            for a in list(node.args) + [k.value for k in node.keywords]:
                self.visit(a)
            return
        self.generic_visit(node)

    def visit_Attribute(self, node):
        self.add(attribute_violation(node.attr))
        self.generic_visit(node)

    def _def(self, node):
        if is_dunder(node.name) and not (self._class_depth and node.name in DUNDER_METHODS_OK):
            self.add(f"dunder:{node.name}")
        args = node.args
        for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if a is not None:
                self._name(a.arg)
        saved, self._class_depth = self._class_depth, 0
        self.generic_visit(node)
        self._class_depth = saved

    visit_FunctionDef = visit_AsyncFunctionDef = _def

    def visit_ClassDef(self, node):
        self._name(node.name)
        self._class_depth += 1
        self.generic_visit(node)
        self._class_depth -= 1

    def visit_Lambda(self, node):
        args = node.args
        for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if a is not None:
                self._name(a.arg)
        self.generic_visit(node)

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant):  # docstrings and bare strings are inert
            return
        self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, str):
            for m in _DUNDER.findall(node.value):
                if m not in DUNDER_OK:
                    self.add(f"dunder:{m}")

    def visit_alias(self, node):
        if node.asname:
            self._name(node.asname)

    def visit_keyword(self, node):
        if node.arg:
            self._name(node.arg)
        self.generic_visit(node)

    def visit_Global(self, node):
        for n in node.names:
            self._name(n)

    visit_Nonlocal = visit_Global


def static_check(code: str) -> list[str]:
    """Policy violations found in ``code`` by its AST alone; an empty list means none.

    Code that does not parse gives one ``syntax:line N: message`` entry (the sandbox reports
    a syntax error as an error, not as a violation).
    """
    try:
        tree = ast.parse(code)
    except SyntaxError as e:
        return [f"syntax:line {e.lineno}: {e.msg}"]
    except (ValueError, TypeError) as e:  # e.g. null bytes in the source
        return [f"syntax:{e}"]
    checker = _Checker()
    checker.visit(tree)
    return checker.found


def generated_code_violations(names) -> list[str]:
    """Violations among the global/attribute names used by code compiled at run time.

    Applied by the audit hook to every code object that is not loaded from a library file
    (dataclasses/namedtuple/typing generate such code legitimately). ``names`` are the
    ``co_names`` of the code object and of its nested code objects.
    """
    out = []
    for name in names:
        if name in FORBIDDEN_BUILTINS or name in ATTR_BUILTINS:
            out.append(f"builtin:{name}")
        elif name in DANGEROUS_DUNDERS or name in SENSITIVE_ATTRS:
            out.append(f"dunder:{name}" if is_dunder(name) else f"attr:{name}")
    return out
