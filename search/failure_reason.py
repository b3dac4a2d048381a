"""The failure that actually happened to a rejected program, in one line.

The verifier reports every failure at once (the Verdict's ``feedback``); negative prompting, export
and replay need the *first* check that failed, in the order of the cascade (sandbox, did it run,
probes against brute force, promotion ladder, complexity audit, class consistency, physical
assertions). The verifier records it as a typed field where the check fails
(:class:`evaluators.verdict.Failure`); this module only renders it. A Verdict journaled before that
field existed is named from its other typed fields, never by reading its feedback's prose.
"""

from __future__ import annotations

from evaluators.verdict import Failure, Verdict

MAX_CHARS = 200


def first_failure(verdict: Verdict | None) -> str | None:
    """``"<check>: <reason>"`` of the first failed check of a rejected Verdict; None if accepted."""
    failure = failure_of(verdict)
    return None if failure is None else _short(failure.text())


def failure_of(verdict: Verdict | None) -> Failure | None:
    """The first failed check of a rejected Verdict (None if accepted): its recorded one, or for a Verdict
    journaled before ``failure`` existed, the earliest stage its typed fields show failed."""
    if verdict is None or verdict.accepted:
        return None
    if verdict.failure is not None:
        return verdict.failure
    return _from_fields(verdict)


def _from_fields(v: Verdict) -> Failure:
    if v.sandbox.violations:
        return Failure("sandbox", "forbidden construct(s) " + ", ".join(v.sandbox.violations[:4]))
    num = v.numerical
    if not num.passed:
        if not num.rungs:
            return Failure("did not run", "no value was returned")
        bad_probes = [r for r in num.rungs if r.stage == "probe" and not r.passed]
        if bad_probes:
            return Failure("probes", f"{len(bad_probes)}/{num.probes or len(bad_probes)} probe samples failed")
        bad = next((r for r in num.rungs if not r.passed), None)
        return Failure("promotion ladder", f"At n={bad.n} (beyond the probe sizes) the value was wrong" if bad else
                       "a rung beyond the probes was wrong")
    if v.complexity.honest is False:
        return Failure("complexity audit", f"claimed {v.complexity.claimed}, measured {v.complexity.measured}")
    if v.class_.consistent is False:
        return Failure("class consistency", "; ".join(r for r in v.class_.reasons if r)
                       or f"{v.class_.claimed} is inconsistent")
    failed = next((c for c in v.physics.checks if not c.passed), None)
    if failed is not None:
        return Failure("physical assertion", failed.detail, failed.name)
    if v.complexity.claimed is None or v.complexity.honest is None:
        return Failure("complexity audit", f"the claim {v.complexity.claimed!r} could not be confirmed")
    return Failure("internal evaluator error", "rejected without a recorded failed check")


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 3] + "..."
