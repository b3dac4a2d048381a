"""Feedback text for proposers: the StatMechBench-v0 verifier's three branches (Appendix C),
plus our additions. Reference values are never disclosed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProbeFailure:
    n: int
    rel_err: float | None  # None when the call raised or returned something uncomparable
    reason: str | None = None


def did_not_run(error: str) -> str:
    """Branch (a)."""
    return f"Your code did not run. Error: {error}"


def numerical_summary(n_samples: int, failures: list[ProbeFailure], max_rel_err: float | None) -> str:
    """Branches (b) and (c): at most three failed-probe lines."""
    head = f"Verifier ran on {n_samples} (n, params) samples."
    if not failures:
        return f"{head}\nAll samples passed (max relative error {max_rel_err or 0.0:.2e})."
    lines = [head, f"{len(failures)}/{n_samples} samples failed."]
    lines += [f"- {probe_failure_text(f)}" for f in failures[:3]]
    return "\n".join(lines)


def probe_failure_text(f: ProbeFailure) -> str:
    """One failed probe, as the paper's verifier words it (a wrong value) or naming the size (no value)."""
    if f.rel_err is not None:
        return f"relative error {f.rel_err:.2e} >> 1e-06 -- your computed Z disagrees with brute force."
    return f"at n={f.n}: {f.reason}"


def violations_text(violations: list[str]) -> str:
    return "Sandbox violations (these constructs are not allowed): " + ", ".join(violations)
