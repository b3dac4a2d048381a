"""Static AST check of candidate code (layer 1 of the sandbox): no process is started here."""
import pytest

from evaluators.sandbox import ALLOWED_IMPORTS, static_check
from evaluators.sandbox.policy import generated_code_violations, module_violation

LEGIT = '''
"""Docstrings may mention __init__ and __class__ freely."""
from __future__ import annotations
import math, cmath, itertools, functools, operator, fractions, collections, decimal, typing
import numpy as np
import scipy.linalg
import scipy.sparse.linalg as spla
from scipy.special import logsumexp
from dataclasses import dataclass, field
from collections import namedtuple

P = namedtuple("P", "a b")

@dataclass(frozen=True)
class Edge:
    u: int
    v: int
    w: float = 1.0

class Matrix:
    __slots__ = ("data",)
    def __init__(self, data):
        self.data = np.asarray(data)
    def __matmul__(self, other):
        return Matrix(self.data @ other.data)
    def __repr__(self):
        return f"Matrix({self.data!r}) of {type(self).__name__}"

class Sub(Matrix):
    def __init__(self, data):
        super().__init__(data)

@functools.lru_cache(maxsize=None)
def fib(k):
    return k if k < 2 else fib(k - 1) + fib(k - 2)

def Z_efficient(params, n):
    beta = float(params.get("beta", 1.0))
    return sum(math.exp(-beta * k) for k in range(n)) + getattr(params, "get")("x", 0.0)

def log_Z(params, n):
    if __name__ == "__main__":
        pass
    return math.log(Z_efficient(params, n))
'''


def test_allowlist_is_the_papers_plus_networkx_and_pymatching():
    assert ALLOWED_IMPORTS == {"math", "numpy", "scipy", "itertools", "functools", "operator", "fractions",
                               "collections", "cmath", "decimal", "dataclasses", "typing", "networkx", "pymatching"}


@pytest.mark.parametrize("code, refused", [
    ("from networkx import write_edgelist", "networkx.write_edgelist"),
    ("from networkx import read_gml", "networkx.read_gml"),
    ("import networkx.readwrite", "networkx.readwrite"),
    ("import networkx.drawing.nx_pydot", "networkx.drawing"),
    ("from networkx.utils import open_file", "networkx.utils"),
    ("from networkx.lazy_imports import attach", "networkx.lazy_imports"),
])
def test_networkx_file_process_and_import_members_are_refused(code, refused):
    assert any(refused in v for v in static_check(code)), static_check(code)



def test_legitimate_numerical_code_passes():
    assert static_check(LEGIT) == []


@pytest.mark.parametrize("code, violation", [
    ("import os", "import:os"),
    ("import os.path", "import:os"),
    ("import sys as s", "import:sys"),
    ("from subprocess import run", "import:subprocess"),
    ("import importlib", "import:importlib"),
    ("import threading", "import:threading"),
    ("import socket", "import:socket"),
    ("import ctypes", "import:ctypes"),
    ("import pathlib", "import:pathlib"),
    ("from . import x", "import:relative"),
    ("import numpy.testing", "import:numpy.testing"),
    ("from numpy import save", "import:numpy.save"),
    ("from numpy import ctypeslib", "import:numpy.ctypeslib"),
    ("from numpy.lib import format", "import:numpy.lib.format"),
    ("import scipy.io", "import:scipy.io"),
    ("import scipy._lib", "import:scipy._lib"),
    ("from numpy._core import multiarray", "import:numpy._core"),
])
def test_imports_outside_the_allowlist(code, violation):
    assert violation in static_check(code)


@pytest.mark.parametrize("code, violation", [
    ("eval('1')", "builtin:eval"),
    ("exec('x = 1')", "builtin:exec"),
    ("compile('1', 's', 'eval')", "builtin:compile"),
    ("__import__('os')", "builtin:__import__"),
    ("open('/etc/passwd')", "builtin:open"),
    ("globals()", "builtin:globals"),
    ("locals()", "builtin:locals"),
    ("vars(int)", "builtin:vars"),
    ("breakpoint()", "builtin:breakpoint"),
    ("input()", "builtin:input"),
    ("memoryview(b'x')", "builtin:memoryview"),
    ("f = eval", "builtin:eval"),
])
def test_forbidden_builtins(code, violation):
    assert violation in static_check(code)


@pytest.mark.parametrize("code, violation", [
    ("getattr(x, name)", "builtin:getattr(dynamic)"),
    ("getattr(x, '__cl' + 'ass__')", "builtin:getattr(dynamic)"),
    ("setattr(x, n, 1)", "builtin:setattr(dynamic)"),
    ("delattr(x, n)", "builtin:delattr(dynamic)"),
    ("getattr(x, '__class__')", "dunder:__class__"),
    ("setattr(x, '__dict__', {})", "dunder:__dict__"),
    ("functools.reduce(getattr, ['a', 'b'], x)", "builtin:getattr(dynamic)"),
    ("g = getattr", "builtin:getattr(dynamic)"),
])
def test_dynamic_attribute_access(code, violation):
    assert violation in static_check(code)


@pytest.mark.parametrize("code, violation", [
    ("().__class__", "dunder:__class__"),
    ("object.__subclasses__()", "dunder:__subclasses__"),
    ("f.__globals__", "dunder:__globals__"),
    ("__builtins__['eval']", "dunder:__builtins__"),
    ("x.__dict__", "dunder:__dict__"),
    ("f.__code__", "dunder:__code__"),
    ("__loader__", "dunder:__loader__"),
    ("__spec__", "dunder:__spec__"),
    ("e.__traceback__", "dunder:__traceback__"),
    ("operator.attrgetter('__class__')", "dunder:__class__"),
    ("s = '{0.__globals__}'.format(f)", "dunder:__globals__"),
    ("f'{x.__class__}'", "dunder:__class__"),
    ("class A:\n    __array_interface__ = {}", "dunder:__array_interface__"),
    ("class A:\n    @property\n    def __array_interface__(self):\n        return {}",
     "dunder:__array_interface__"),
    ("def __getattr__(name):\n    pass", "dunder:__getattr__"),
    ("class A:\n    def __init_subclass__(cls):\n        pass", "dunder:__init_subclass__"),
    ("class A:\n    def __del__(self):\n        pass", "dunder:__del__"),
    ("lambda __builtins__: 0", "dunder:__builtins__"),
])
def test_dunders(code, violation):
    assert violation in static_check(code)


@pytest.mark.parametrize("code, violation", [
    ("g.gi_frame", "attr:gi_frame"),
    ("tb.tb_frame.f_back.f_globals", "attr:f_globals"),
    ("frame.f_builtins", "attr:f_builtins"),
    ("a.ctypes.data", "attr:ctypes"),
    ("np.ctypeslib.as_array(p)", "attr:ctypeslib"),
    ("a.tofile('/tmp/x')", "attr:tofile"),
    ("np.fromfile('/etc/passwd')", "attr:fromfile"),
    ("np.loadtxt('/etc/passwd')", "attr:loadtxt"),
    ("np.savetxt('/tmp/x', a)", "attr:savetxt"),
    ("np.lib.stride_tricks.as_strided(a, (10**9,), (8,))", "attr:as_strided"),
    ("np.memmap('/tmp/x')", "attr:memmap"),
])
def test_frame_file_and_raw_memory_attributes(code, violation):
    assert violation in static_check(code)


def test_every_violation_is_reported_not_just_the_first():
    found = static_check("import os\nimport sys\neval('1')\nx.__class__\n")
    assert {"import:os", "import:sys", "builtin:eval", "dunder:__class__"} <= set(found)
    assert len(found) == len(set(found))


def test_syntax_error_is_reported_as_syntax():
    found = static_check("def f(:\n    pass")
    assert len(found) == 1 and found[0].startswith("syntax:line 1")


def test_module_violation_helper():
    assert module_violation("numpy.linalg") is None
    assert module_violation("scipy.sparse.linalg") is None
    assert module_violation("os") == "import:os"
    assert module_violation("numpy.lib.format") == "import:numpy.lib.format"


def test_generated_code_check_accepts_dataclass_code_and_refuses_injection():
    dataclass_names = {"__dataclass_builtins_object__", "__setattr__", "__class__",
                       "__qualname__", "MISSING", "_HAS_DEFAULT_FACTORY", "hash"}
    assert generated_code_violations(dataclass_names) == []
    assert "builtin:__import__" in generated_code_violations({"__import__", "system"})
    assert "dunder:__subclasses__" in generated_code_violations({"__subclasses__"})
    assert "builtin:open" in generated_code_violations({"open"})
