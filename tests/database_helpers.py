"""Synthetic judged programs for the database tests: real Verdicts, tiny distinct codes."""

from evaluators.checks.growth import from_description
from evaluators.verdict import Complexity, Numerical, Rung, Verdict
from search.database import Program

POLY2 = "polynomial, about n^2 (from timings over n = 16..256)"
EXP1 = "exponential in n, about 2^(1 n) (from the code)"


def verdict(accept=True, n=64, measured=POLY2, passed=True, honest=True, consistent=True, physics=True,
            err=1e-13, violations=(), claimed="O(n^2)"):
    sizes = [m for m in (4, 8, 16, 32, 64, 128, 256, 512, 1024) if m <= n] or [n]
    rungs = [Rung(m, 0.01, err, passed, "probe" if m <= 16 else "ladder") for m in sizes]
    v = Verdict("P01", "accept" if accept else "reject",
                Numerical(passed, err, 3, 0 if passed else 1, n, rungs),
                Complexity(claimed, measured, honest))
    g = from_description(measured)          # the typed growth the audit records beside its sentence
    if g is not None:
        v.complexity.measured_kind, v.complexity.measured_rate = g.kind, None if g.rate == float("inf") else g.rate
    v.class_.claimed, v.class_.consistent, v.physics.passed = "transfer_matrix", consistent, physics
    v.sandbox.violations = list(violations)
    return v


def code(c=1.0, extra=""):
    """A small distinct program per constant (method family: closed form)."""
    return f"import math\n\n\ndef log_Z(params, n):\n    return {c!r} * n * math.log(2 * math.cosh(params['beta'])){extra}\n"


def program(pid, c=1.0, cls="transfer_matrix", parents=(), extra="", **kw):
    return Program.new(pid, code(c, extra), verdict(**kw), cls, "O(n^2)", 0.9, parents)
