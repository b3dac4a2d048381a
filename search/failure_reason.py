"""The failure that actually happened to a rejected program, in one line.

The verifier reports every failure at once (the Verdict's ``feedback``); negative prompting and
reports need the *first* check that failed, in the order of the cascade (sandbox, did it run,
probes against brute force, promotion ladder, complexity audit, class consistency, physical
assertions), named with its reason. It is read from the Verdict's fields, with the feedback
line of that stage for the detail, never from a line that merely mentions "error": an accepted
stage ("All samples passed") is never named as the failure.
"""

from __future__ import annotations

from evaluators.verdict import Verdict

MAX_CHARS = 200
DID_NOT_RUN = "Your code did not run. Error: "


def first_failure(verdict: Verdict | None) -> str | None:
    """``"<check>: <reason>"`` of the first failed check of a rejected Verdict; None if accepted."""
    if verdict is None:
        return None
    if verdict.accepted:
        return None
    lines = [ln.strip() for ln in (verdict.feedback or "").splitlines() if ln.strip()]
    return _short(_first(verdict, lines))


def _first(v: Verdict, lines: list[str]) -> str:
    if v.sandbox.violations:
        return "sandbox: forbidden construct(s) " + ", ".join(v.sandbox.violations[:4])
    ran = next((ln for ln in lines if ln.startswith(DID_NOT_RUN)), None)
    if ran is not None:
        return "did not run: " + ran[len(DID_NOT_RUN):]
    num = v.numerical
    if not num.passed:
        bad_probes = [r for r in num.rungs if r.stage == "probe" and not r.passed]
        if bad_probes or not num.rungs:
            detail = next((ln[2:] for ln in lines if ln.startswith("- ")), None)
            count = f"{len(bad_probes)}/{num.probes} probe samples failed" if num.probes else "the probes failed"
            return f"probes: {count}" + (f" ({detail})" if detail else "")
        ladder = next((ln for ln in lines if ln.startswith("At n=")), None)
        return "promotion ladder: " + (ladder or "a rung beyond the probes was wrong")
    if v.complexity.honest is False or any(ln.startswith("Complexity:") for ln in lines):
        line = next((ln for ln in lines if ln.startswith("Complexity:")), None)
        return "complexity audit: " + (line[len("Complexity:"):].strip() if line else
                                       f"claimed {v.complexity.claimed}, measured {v.complexity.measured}")
    class_line = next((ln for ln in lines if ln.startswith("Tractable class:")), None)
    if v.class_.consistent is False or class_line is not None:
        reasons = "; ".join(r for r in v.class_.reasons if r)
        return "class consistency: " + (reasons or (class_line[len("Tractable class:"):].strip() if class_line else "")
                                        or f"{v.class_.claimed} is inconsistent")
    failed = next((c for c in v.physics.checks if not c.passed), None)
    if failed is not None:
        return f"physical assertion {failed.name}: {failed.detail}"
    internal = next((ln for ln in lines if ln.startswith("Internal evaluator error")), None)
    if internal is not None:
        return internal
    return "rejected: " + (lines[-1] if lines else "no reason recorded")


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 3] + "..."
