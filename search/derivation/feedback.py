"""The chain in the Verdict's feedback: what a derivation candidate was built from, step by step,
so the next proposal (or a reader of the journal) sees which steps were checked and which solver
finished it."""

from __future__ import annotations


def chain_text(record: list[dict]) -> str:
    """One line per step of a Candidate's ``derivation`` record."""
    lines = []
    for k, step in enumerate(record):
        check = step.get("check") or {}
        if step.get("action") == "solve":
            claims = step.get("claims", {})
            lines.append(f"solver {step.get('summary')}: claims {claims.get('tractable_class')}, "
                         f"{claims.get('complexity_O')}")
            continue
        status = {True: "checked", False: "FAILED its check", None: "not checked"}[check.get("passed")]
        lines.append(f"step {k} {step.get('action')}: {status}")
    return "; ".join(lines)


def with_chain(feedback: str, record: list[dict]) -> str:
    """The Verdict's feedback with the derivation the candidate came from appended (unchanged without one)."""
    if not record:
        return feedback
    return f"{feedback}\nDerivation the program was rendered from: {chain_text(record)}."
