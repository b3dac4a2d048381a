"""A candidate as the evaluators see it: code plus the claims made about it.

Files are either the paper's response schema as JSON (``tractable_class``, ``complexity_O``,
``confidence``, ``justification``, ``code``) or a ``.py`` file: its code, and its claims from comment
lines at its top (before the first line of code), one per line::

    # tractable_class: transfer_matrix
    # complexity_O: O(n)

as the ``best/program.py`` of a run carries them (the combined ``# class claim: X   complexity
claim: Y`` line of runs written before is read too). A ``.py`` without them claims nothing, and a
candidate that claims no complexity cannot be accepted.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path


#: a candidate that defines one of these answers with bounds or an approximation instead of an exact value
ANSWER_FUNCTIONS = (("log_Z_bounds", "bounds"), ("log_Z_approx", "approximation"))


class SubmissionError(ValueError):
    """The file cannot be read as a candidate; the message is one line for the user."""


@dataclass(frozen=True)
class Submission:
    code: str
    tractable_class: str | None = None
    complexity_O: str | None = None
    confidence: float | None = None
    justification: str | None = None

    def defines(self, name: str) -> bool:
        """True when the code defines a top-level function ``name`` (False if it does not parse)."""
        return name in top_level_functions(self.code)

    @property
    def answer_kind(self) -> str:
        """"bounds" (it defines log_Z_bounds), "approximation" (log_Z_approx) or "exact" (evaluators/answer_kinds.py)."""
        names = top_level_functions(self.code)
        return next((kind for name, kind in ANSWER_FUNCTIONS if name in names), "exact")

    @classmethod
    def from_response(cls, obj: dict) -> "Submission":
        """From the paper's JSON response object."""
        if not isinstance(obj, dict):
            raise SubmissionError("the JSON must be an object with a 'code' key")
        code = obj.get("code")
        if not isinstance(code, str) or not code.strip():
            raise SubmissionError("the JSON has no 'code' string")
        conf = obj.get("confidence")
        try:   # a number in [0, 1]; anything else (true, NaN, "high") is no claim at all
            conf = None if conf is None or isinstance(conf, bool) else float(conf)
        except (TypeError, ValueError, OverflowError):
            conf = None
        if conf is not None and not 0.0 <= conf <= 1.0:
            conf = None
        text = lambda k: obj[k] if isinstance(obj.get(k), str) else None  # noqa: E731
        return cls(code, text("tractable_class"), text("complexity_O"), conf, text("justification"))


def load_submission(path: str | Path) -> Submission:
    """Read a ``.json`` (paper schema) or ``.py`` candidate; SubmissionError with a one-line reason otherwise."""
    path = Path(path)
    if not path.exists():
        raise SubmissionError(f"candidate file not found: {path}")
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SubmissionError(f"cannot read {path}: {exc}") from None
    if path.suffix == ".py":
        if not raw.strip():
            raise SubmissionError(f"{path} is empty")
        return Submission(code=raw, **header_claims(raw))
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SubmissionError(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    return Submission.from_response(obj)


_CLAIM = re.compile(r"^#\s*(tractable_class|complexity_O)\s*:\s*(.*?)\s*$")
_OLD_CLAIMS = re.compile(r"^#\s*class claim:\s*(.*?)\s{2,}complexity claim:\s*(.*?)\s*$")


def header_claims(code: str) -> dict:
    """``tractable_class`` and ``complexity_O`` from the comment lines at the top of ``code`` (see the
    module docstring); a claim that is absent, empty or ``None`` is left out."""
    found: dict = {}
    for line in code.splitlines():
        text = line.strip()
        if text and not text.startswith("#"):
            break                       # claims live in the header, not in comments among the code
        m = _CLAIM.match(text)
        if m:
            found.setdefault(m.group(1), m.group(2))
            continue
        old = _OLD_CLAIMS.match(text)
        if old:
            found.setdefault("tractable_class", old.group(1))
            found.setdefault("complexity_O", old.group(2))
    return {k: v for k, v in found.items() if v and v != "None"}


@lru_cache(maxsize=64)   # verify asks several times per candidate; a long program parses in 50 ms
def top_level_functions(code: str) -> frozenset[str]:
    """Names of the top-level ``def`` s of ``code`` (empty when it does not parse)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return frozenset()
    return frozenset(node.name for node in tree.body if isinstance(node, ast.FunctionDef))
