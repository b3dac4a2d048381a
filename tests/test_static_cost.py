"""Static evidence from the AST: enumerations, dense matrices, loop nests, linear algebra, guards."""

from pathlib import Path

import pytest

from evaluators.checks.growth import Growth
from evaluators.checks.static_cost import static_evidence

FIXTURES = Path(__file__).parent / "fixtures" / "candidates"


def top(code: str):
    found = static_evidence(code)
    return found[0] if found else None


def implied(code: str) -> Growth | None:
    f = top(code)
    return f.implies if f else None


EXP_N = [
    ("itertools.product", """
import itertools, math
def Z_efficient(params, n):
    Z = 0.0
    for s in itertools.product([-1, 1], repeat=n):
        Z += math.exp(sum(s))
    return Z
""", 5),
    ("aliased product with starred list", """
from itertools import product as P
def Z_efficient(params, n):
    return sum(1 for s in P(*[(-1, 1)] * n))
""", 4),
    ("product of a comprehension of pairs", """
import itertools
def Z_efficient(params, n):
    return sum(1 for s in itertools.product(*[(-1, 1) for _ in range(n)]))
""", 4),
    ("range(2**n)", """
def Z_efficient(params, n):
    Z = 0
    for x in range(2 ** n):
        Z += x
    return Z
""", 4),
    ("range(1 << n) with bit decoding", """
def Z_efficient(params, n):
    Z = 0
    for x in range(1 << n):
        for i in range(n):
            Z += (x >> i) & 1
    return Z
""", 4),
    ("np.arange(2**n) vectorised", """
import numpy as np
def log_Z(params, n):
    idx = np.arange(2**n, dtype=np.int64)
    spins = 1 - 2 * ((idx[:, None] >> np.arange(n)) & 1)
    return float(spins.sum())
""", 4),
    ("repeat=<expr in n>", """
import itertools
def Z_efficient(params, n):
    m = n - 1
    return sum(1 for s in itertools.product((1, -1), repeat=m))
""", 5),
    ("np.ndindex", """
import numpy as np
def Z_efficient(params, n):
    return sum(1 for s in np.ndindex(*([2] * n)))
""", 4),
]


@pytest.mark.parametrize("name,code,line", EXP_N, ids=[c[0] for c in EXP_N])
def test_enumeration_over_all_configurations_is_exponential(name, code, line):
    f = top(code)
    assert f is not None and f.kind == "enumeration", (name, static_evidence(code))
    assert f.implies.kind == "exp" and f.implies.rate == pytest.approx(1.0, abs=0.1)
    assert f.line == line and f.detail.startswith(f"line {line}:")
    assert "2^n" in f.detail or "2^(n - 1)" in f.detail


def test_bit_decoding_is_named():
    f = top(EXP_N[4][1])
    assert "bit shifts" in f.detail


@pytest.mark.parametrize("root", ["int(math.sqrt(n))", "math.isqrt(n)", "round(n ** 0.5)",
                                  "int(round(math.sqrt(n)))", "int(np.sqrt(n))"])
def test_row_states_over_sqrt_n_side_are_exp_sqrt(root):
    code = f"""
import math
import numpy as np
def Z_efficient(params, n):
    L = {root}
    v = np.ones(2 ** L)
    for r in range(L):
        for a in range(2 ** L):
            v[a] = v[a] * 2
    return v.sum()
"""
    g = implied(code)
    assert g is not None and g.kind == "exp_sqrt", static_evidence(code)
    kinds = {f.kind for f in static_evidence(code)}
    assert "enumeration" in kinds


def test_dense_transfer_matrix_is_exp_sqrt_with_its_size():
    code = """
import math
import numpy as np
def Z_efficient(params, n):
    L = math.isqrt(n)
    T = np.zeros((2**L, 2**L))
    return float(np.linalg.eigvalsh(T).max())
"""
    found = static_evidence(code)
    by_kind = {f.kind: f for f in found}
    assert by_kind["dense_matrix"].implies == Growth("exp_sqrt", 2.0)
    assert by_kind["dense_linalg"].implies == Growth("exp_sqrt", 3.0)
    assert by_kind["dense_linalg"].line == 7 and "2^(sqrt n) x 2^(sqrt n)" in by_kind["dense_linalg"].detail


def test_outer_product_of_state_arrays_is_a_dense_matrix():
    f_states = FIXTURES / "p03_correct.py"
    found = static_evidence(f_states.read_text())
    kinds = {f.kind: f.implies for f in found}
    assert kinds["enumeration"] == Growth("exp_sqrt", 1.0)           # the 2^L row states
    assert kinds["dense_matrix"].kind == "exp_sqrt"                  # states @ states.T
    assert kinds["dense_linalg"] == Growth("exp_sqrt", 3.0)          # eigvalsh of 2^L x 2^L


def test_fixture_candidates():
    read = lambda name: (FIXTURES / name).read_text()  # noqa: E731
    assert implied(read("p06_bruteforce.py")) == Growth("exp", 1.0)
    assert implied(read("p04_rowtransfer.py")).kind == "exp_sqrt"
    for name in ("p01_correct.py", "p02_correct.py", "p05_correct.py"):
        assert static_evidence(read(name)) == [], name


def test_triple_nested_loop_over_n_is_cubic():
    code = """
def Z_efficient(params, n):
    t = 0
    for i in range(n):
        for j in range(n):
            for k in range(i, n):
                t += 1
    return t
"""
    f = top(code)
    assert f.kind == "loop_nest" and f.implies == Growth("poly", 3.0) and f.line == 6


def test_dense_determinant_of_n_by_n_is_cubic():
    code = """
import numpy as np
from numpy.linalg import slogdet
def log_Z(params, n):
    M = np.eye(2 * n)
    sign, ld = slogdet(M)
    return ld
"""
    f = top(code)
    assert f.kind == "dense_linalg" and f.implies == Growth("poly", 3.0) and f.line == 6


NEGATIVES = [
    ("a single loop over range(n)", """
def Z_efficient(params, n):
    Z = 1.0
    for i in range(n - 1):
        Z *= 2.0
    return Z
"""),
    ("2**n as a normalisation constant", """
import math
def Z_efficient(params, n):
    return 2 ** n * math.cosh(params["beta"]) ** (n - 1) / 2**n * 2**n
"""),
    ("fixed-size enumeration", """
import itertools
def Z_efficient(params, n):
    return sum(1 for s in itertools.product([-1, 1], repeat=3)) * n
"""),
    ("2x2 transfer matrices", """
import numpy as np
def Z_efficient(params, n):
    T = np.ones((2, 2))
    v = np.ones(2)
    for i in range(n):
        v = v @ T
    return v.sum()
"""),
    ("magnetisation sum", """
import numpy as np
def Z_efficient(params, n):
    k = np.arange(n + 1)
    return float(np.exp(k).sum())
"""),
    ("syntax error", "def f(:"),
    ("huge constants are not evaluated", """
x = ((10 ** 200) ** 200) ** 200
def Z_efficient(params, n):
    for i in range(2 ** (2 ** 64)):
        pass
"""),
]


@pytest.mark.parametrize("name,code", NEGATIVES, ids=[c[0] for c in NEGATIVES])
def test_no_false_evidence(name, code):
    assert static_evidence(code) == [], name


@pytest.mark.parametrize("guard", [
    "    if n > 20:\n        return 2.0 ** n\n",
    "    if n >= 21:\n        raise ValueError('too big')\n",
    "    assert n <= 20\n",
])
def test_enumeration_after_a_size_guard_is_bounded(guard):
    code = ("import itertools\ndef Z_efficient(params, n):\n" + guard
            + "    return sum(1 for s in itertools.product([-1, 1], repeat=n))\n")
    found = static_evidence(code)
    assert len(found) == 1 and found[0].kind == "bounded" and found[0].implies is None
    assert "only when" in found[0].detail


def test_enumeration_inside_a_small_n_branch_is_bounded_but_else_branch_is_not():
    code = """
import numpy as np
def Z_efficient(params, n):
    if n <= 16:
        return float(len(np.arange(2 ** n)))
    else:
        return float(sum(1 for x in range(2 ** n)))
"""
    found = {f.line: f for f in static_evidence(code)}
    assert found[5].kind == "bounded" and found[5].implies is None
    assert found[7].kind == "enumeration" and found[7].implies == Growth("exp", 1.0)


def test_helper_function_with_side_parameter():
    code = """
import math
def rows(L):
    return [a for a in range(2 ** L)]
def Z_efficient(params, n):
    L = math.isqrt(n)
    return len(rows(L))
"""
    assert implied(code) == Growth("exp_sqrt", 1.0)
