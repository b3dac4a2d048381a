"""The chain in words, wherever a derivation candidate is shown: the Verdict's feedback (so the next
proposal sees which steps were checked and which solver finished it), a prompt's parent, `evolve
lineage` and `evolve show`. Everything reads a Candidate's ``derivation`` record (plain dicts, as
journaled: search/derivation/record.py)."""

from __future__ import annotations

from search.derivation.record import Check

#: a parameter value longer than this is cut in step lines
PARAM_CHARS = 120


def chain_text(record: list[dict]) -> str:
    """One short clause per step of a Candidate's ``derivation`` record, joined by '; '."""
    lines = []
    for k, step in enumerate(record):
        check = step.get("check") or {}
        if step.get("action") == "solve":
            lines.append(f"solver {step.get('summary')}: {_claims(step)}")
            continue
        status = {True: "checked", False: "FAILED its check", None: "not checked"}[check.get("passed")]
        lines.append(f"step {k} {step.get('action')}: {status}")
    return "; ".join(lines)


def chain_line(record: list[dict]) -> str:
    """The chain on one line: "read_formula -> gauge -> kaufman (2 steps checked; claims gauge, O(n))"."""
    steps = [s for s in record if s.get("action") != "solve"]
    solve = [s for s in record if s.get("action") == "solve"]
    names = [str(s.get("action")) for s in steps] + [str(s.get("summary")) for s in solve]
    passed = sum(1 for s in steps if (s.get("check") or {}).get("passed") is True)
    failed = sum(1 for s in steps if (s.get("check") or {}).get("passed") is False)
    status = f"{passed} of {len(steps)} steps checked" + (f", {failed} FAILED" if failed else "")
    claims = f"; {_claims(solve[0])}" if solve else "; no solver"
    return f"{' -> '.join(names)} ({status}{claims})"


def step_lines(record: list[dict], leaves: bool = False) -> list[str]:
    """One line per step: its number, action and parameters, and its check (what the step left too,
    with ``leaves``); the solver last, with its options and claims."""
    out = []
    for k, step in enumerate(record):
        params = _params(step.get("params") or {})
        if step.get("action") == "solve":
            out.append(f"solver {step.get('summary')}{params}: {_claims(step)}")
            continue
        check = Check(**{key: v for key, v in (step.get("check") or {}).items() if key in Check.__dataclass_fields__})
        line = f"step {k} {step.get('action')}{params}: check {check.text()}"
        change = step.get("log_change")
        if isinstance(change, (int, float)) and change != 0.0:
            line += f"; log Z before = log Z after {change:+.6g}"
        if leaves and step.get("result"):
            line += f"; leaves {step['result']}"
        out.append(line)
    return out


def with_chain(feedback: str, record: list[dict]) -> str:
    """The Verdict's feedback with the derivation the candidate came from appended (unchanged without
    one), and, when the derivation found nothing polynomial, the structure it measured and why each
    step and solver did not apply."""
    if not record:
        return feedback
    text = f"{feedback}\nDerivation the program was rendered from: {chain_text(record)}."
    diagnosis = [line for step in record if step.get("action") == "solve" for line in step.get("diagnosis") or ()]
    if diagnosis:
        text += "\nNo polynomial chain was found. " + "\n".join(str(line) for line in diagnosis)
    return text


def _claims(solve: dict) -> str:
    claims = solve.get("claims") or {}
    return f"claims {claims.get('tractable_class')}, {claims.get('complexity_O')}"


def _params(params: dict) -> str:
    shown = {k: v for k, v in params.items() if v not in ([], {}, None, "")}
    if not shown:
        return ""
    parts = []
    for k, v in shown.items():
        text = str(v)
        parts.append(f"{k}={text[:PARAM_CHARS] + '...' if len(text) > PARAM_CHARS else text}")
    return " (" + ", ".join(parts) + ")"
