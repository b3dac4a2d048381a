"""Normalised code hashes: cosmetic changes keep the hash, changes of meaning change it."""

import json
import math
from pathlib import Path

import pytest

from search.database.dedup import canonical_code, normalised_hash
from tasks.registry import get_task

FIXTURES = Path(__file__).parent / "fixtures" / "candidates"

BASE = '''
import math


def log_Z(params, n):
    beta = params["beta"]
    total = 0.0
    for i in range(n - 1):
        total += math.log(2 * math.cosh(beta * params["J"][i]))
    return math.log(2) + total
'''

COSMETIC = '''"""A module docstring."""
import math

# a comment line

def log_Z(params,   n):
    """Open chain: bond variables are independent."""
    beta = params['beta']   # the inverse temperature
    total = 0.0

    for i in range(n - 1):
        "a stray string statement"
        total += math.log(2 * math.cosh((beta * params["J"][i])))
    return (math.log(2) + total)
'''

RENAMED = '''
import math


def log_Z(p, size):
    b = p["beta"]
    acc = 0.0
    for k in range(size - 1):
        acc += math.log(2 * math.cosh(b * p["J"][k]))
    return math.log(2) + acc
'''


def test_comments_docstrings_whitespace_do_not_change_the_hash():
    assert normalised_hash(COSMETIC) == normalised_hash(BASE)
    assert canonical_code(COSMETIC) == canonical_code(BASE)


def test_consistent_renaming_of_locals_does_not_change_the_hash():
    assert normalised_hash(RENAMED) == normalised_hash(BASE)
    assert normalised_hash(RENAMED, rename_locals=False) != normalised_hash(BASE, rename_locals=False)


@pytest.mark.parametrize("old, new", [
    ("math.log(2) + total", "math.log(3) + total"),   # a constant
    ("range(n - 1)", "range(n)"),                      # a bound
    ("2 * math.cosh", "2 * math.sinh"),                # a called function
    ("math.log(2) + total", "total - math.log(2)"),    # an operator
    ("def log_Z", "def Z_efficient"),                  # the entry point's name
    ('params["beta"]', 'params["b"]'),                 # a string that is data, not a docstring
])
def test_a_change_of_meaning_changes_the_hash(old, new):
    changed = BASE.replace(old, new)
    assert changed != BASE
    assert normalised_hash(changed) != normalised_hash(BASE)


def test_renaming_never_merges_a_local_with_a_global():
    # the new local names must not coincide with a global that is only read
    a = "def f(a):\n    return a + v0\n"
    b = "def f(a):\n    return a + a\n"
    c = "def f(a):\n    return a + _v0\n"
    hashes = {normalised_hash(a), normalised_hash(b), normalised_hash(c)}
    assert len(hashes) == 3


def test_swapping_two_locals_consistently_is_the_same_program_but_swapping_roles_is_not():
    a = "def f(x, y):\n    return x - y\n"
    b = "def f(y, x):\n    return y - x\n"   # same program, names swapped
    c = "def f(x, y):\n    return y - x\n"   # a different program
    assert normalised_hash(a) == normalised_hash(b)
    assert normalised_hash(a) != normalised_hash(c)


def test_globals_and_nonlocals_keep_their_names():
    a = "K = 1\ndef f(x):\n    global K\n    K = x\n    return K\n"
    b = "K = 1\ndef f(y):\n    global K\n    K = y\n    return K\n"
    c = "G = 1\ndef f(x):\n    global G\n    G = x\n    return G\n"
    assert normalised_hash(a) == normalised_hash(b)
    assert normalised_hash(a) != normalised_hash(c)


def test_a_body_of_only_a_docstring_becomes_pass():
    assert canonical_code('def f():\n    """only a docstring"""\n') == "def f():\n    pass"


def test_unparsable_code_hashes_its_whitespace_normalised_text():
    broken = "def f(:\n    return 1\n"
    assert canonical_code(broken) is None
    assert normalised_hash(broken) == normalised_hash("def   f(:\n\n        return 1")
    assert normalised_hash(broken) != normalised_hash("def f(:\n    return 2\n")
    assert normalised_hash(None) == normalised_hash("")
    # a parsable program never collides with the raw text of the same characters
    assert normalised_hash("x = 1") != normalised_hash("x = (")


def _fixture_tasks() -> dict[str, str]:
    """Fixture file -> task id, from every claims*.json beside the fixtures."""
    out = {}
    for claims in sorted(FIXTURES.glob("claims*.json")):
        out.update({k: v["task"] for k, v in json.loads(claims.read_text()).items()})
    return out


@pytest.mark.parametrize("name", sorted(_fixture_tasks()))
def test_the_canonical_code_computes_the_same_values(name):
    """Canonicalisation must never change what a program computes (else dedup could drop a good one)."""
    code = (FIXTURES / name).read_text()
    task = get_task(_fixture_tasks()[name])
    canon = canonical_code(code)
    assert canon is not None and canon != code
    original, renamed = {}, {}
    exec(compile(code, name, "exec"), original)
    exec(compile(canon, name, "exec"), renamed)
    entry = "log_Z" if "log_Z" in original else "Z_efficient"
    n = task.probe_sizes[0]
    for sample in range(3):
        params = task.probe_params(n, seed=7, sample=sample)
        a, b = original[entry](params, n), renamed[entry](params, n)
        assert math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
