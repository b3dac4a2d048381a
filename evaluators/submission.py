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
        """From the paper's JSON response object (read by :func:`read_answer`, as a run reads it)."""
        return read_answer(obj)[0]


def read_answer(obj: dict) -> tuple[Submission, list[str]]:
    """The paper's answer object (``tractable_class``, ``complexity_O``, ``confidence``, ``justification``,
    ``code``) as a Submission, with notes on what was read other than written. The one reader of the
    schema: ``evolve verify`` on a file and a run's parser of a model's answer judge the same claims.

    ``code``: a non-empty string (a Markdown fence around it is removed); ``confidence``: a number in
    [0, 1] or a percentage ("90%"), anything else no claim; ``tractable_class``: a library label written
    another way ("Transfer-Matrix") is read as the label."""
    if not isinstance(obj, dict):
        raise SubmissionError("the JSON must be an object with a 'code' key")
    code = obj.get("code")
    if not isinstance(code, str) or not code.strip():
        raise SubmissionError("the JSON has no 'code' string")
    notes = []
    conf = as_confidence(obj.get("confidence"))
    if obj.get("confidence") is not None and conf is None:
        notes.append(f"confidence {obj.get('confidence')!r} is not a number in [0, 1]; ignored")
    text = lambda k: obj[k].strip() if isinstance(obj.get(k), str) and obj[k].strip() else None  # noqa: E731
    label = normalise_label(text("tractable_class"))
    if label != text("tractable_class"):
        notes.append(f"class {text('tractable_class')!r} read as the library label {label!r}")
    return Submission(strip_code_fence(code), label, text("complexity_O"), conf, text("justification")), notes


def normalise_label(value: str | None, labels: tuple[str, ...] | None = None) -> str | None:
    """``"Transfer-Matrix"`` -> ``"transfer_matrix"`` when that is a library label (``labels``, default the
    library's CLASS_LABELS); else unchanged."""
    if value is None:
        return None
    if labels is None:
        from tasks.base import CLASS_LABELS  # noqa: PLC0415 - tasks.base loads numpy and networkx; `evolve --help` imports this module
        labels = CLASS_LABELS
    key = re.sub(r"[\s\-]+", "_", value.strip().strip("'\"`").lower())
    return key if key in labels else value


def as_confidence(value) -> float | None:
    """A confidence in [0, 1] from a number or a percentage string; None for anything else."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        text = str(value).strip()
        v = float(text.rstrip("%")) / (100.0 if text.endswith("%") else 1.0)
    except (TypeError, ValueError, OverflowError):
        return None
    return v if 0.0 <= v <= 1.0 else None


def strip_code_fence(code: str) -> str:
    """Models sometimes wrap the code string itself in a Markdown fence."""
    m = re.fullmatch(r"\s*```[A-Za-z0-9_+-]*[^\n]*\n(.*?)\n?```\s*", code, re.S)
    return m.group(1) if m else code


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
