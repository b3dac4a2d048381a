"""Turn a model's answer into code plus claims, whatever shape the answer takes.

Shapes understood, tried in this order:

1. SEARCH/REPLACE diff blocks against a parent program (see :mod:`search.diffs`), with the
   claims in a JSON object, in prose, or else inherited from the parent;
2. the paper's JSON object, alone (``json``), in a Markdown fence (``json_fenced``) or with
   prose around it (``json_prose``); literal newlines inside strings are tolerated, and with
   several objects the last one carrying code is the answer;
3. a fenced Python block defining ``Z_efficient`` (or ``log_Z``) with the claims in prose
   (``python_prose``): the class is a library label found in the text, the complexity an
   ``O(...)`` mention, the confidence a stated number.

Reasoning scratchpads (``<think>...</think>``) are removed first.
:func:`parse_response` never raises: it returns a :class:`ParsedResponse` or a
:class:`ParseFailure` whose reason is written to be fed back to the model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from evaluators.submission import as_confidence, read_answer
from search.diffs import DiffError, apply_diff, has_diff_blocks
from tasks.base import CLASS_LABELS

FUNCTIONS = ("Z_efficient", "log_Z")
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_DEF = re.compile(r"^def\s+(Z_efficient|log_Z)\s*\(", re.M)
_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S | re.I)  # reasoning models' scratchpad


@dataclass(frozen=True)
class ParseFailure:
    """The answer yields no code. ``kind`` is "parse" or "diff"."""

    reason: str
    kind: str = "parse"


@dataclass
class ParsedResponse:
    code: str
    tractable_class: str | None = None
    complexity_O: str | None = None
    confidence: float | None = None
    justification: str | None = None
    format: str = "json"
    notes: list[str] = field(default_factory=list)


def parse_response(text: str | None, parent_code: str | None = None, parent_claims: dict | None = None,
                   labels: tuple[str, ...] = CLASS_LABELS) -> ParsedResponse | ParseFailure:
    """Parse one model answer. ``parent_code`` enables diffs; ``parent_claims`` fills claims a diff omits."""
    try:
        return _parse(text, parent_code, parent_claims, labels)
    except Exception as exc:  # a parser bug must not kill a run; record it as a failed proposal
        return ParseFailure(f"the response could not be parsed ({type(exc).__name__}: {exc})")


def _parse(text, parent_code, parent_claims, labels):
    if text is None or not str(text).strip():
        return ParseFailure("the response was empty")
    text = _THINK.sub(" ", str(text).replace("\r\n", "\n"))
    if not text.strip():
        return ParseFailure("the response held only reasoning (a <think> block) and no answer")
    if has_diff_blocks(text):
        return _parse_diff(text, parent_code, parent_claims or {}, labels)
    obj, where = find_json_object(text)
    if obj is not None and isinstance(obj.get("code"), str) and obj["code"].strip():
        return _from_json(obj, where)
    python = _python_block(text)
    if python is not None:
        prose = _FENCE.sub(" ", text)
        claims = {k: v for k, v in (obj or {}).items() if k != "code"}
        out = _from_prose(python, prose, labels, claims)
        if obj is not None:
            out.notes.append("JSON object without a 'code' string; code taken from the Python block")
        return out
    if obj is not None:
        return ParseFailure("the JSON object has no non-empty 'code' string defining Z_efficient(params, n)")
    if _looks_like_json(text):
        return ParseFailure(f"the response looks like JSON but is not valid JSON ({_json_error(text)})")
    return ParseFailure("no JSON object with a 'code' field and no fenced Python block defining Z_efficient(params, n) was found")


# -- JSON -----------------------------------------------------------------------------------

def find_json_object(text: str) -> tuple[dict | None, str]:
    """The answer's JSON object in ``text`` and where it was: "json", "json_fenced" or "json_prose".

    An object with a "code" string wins over one without; among several, the last (a final
    answer comes after drafts); fenced objects win over bare ones in prose.
    """
    decoder = json.JSONDecoder(strict=False)
    try:
        obj = decoder.decode(text.strip())
        if isinstance(obj, dict):
            return obj, "json"
    except ValueError:
        pass
    fenced = [o for m in _FENCE.finditer(text) if m.group(1).lower() in ("json", "") and m.group(2).strip().startswith("{")
              for o in _objects(m.group(2), decoder)]
    prose = _objects(text, decoder)
    for objs, where in ((fenced, "json_fenced"), (prose, "json_prose")):
        with_code = [o for o in objs if isinstance(o.get("code"), str) and o["code"].strip()]
        if with_code:
            return with_code[-1], where
    for objs, where in ((fenced, "json_fenced"), (prose, "json_prose")):
        if objs:
            return objs[0], where
    return None, ""


def _objects(text: str, decoder: json.JSONDecoder) -> list[dict]:
    """Every non-empty top-level JSON object in ``text``, left to right, not nested in one another."""
    out, pos = [], 0
    for m in re.finditer(r"\{", text):
        if m.start() < pos:
            continue
        try:
            obj, end = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        if isinstance(obj, dict) and obj:
            out.append(obj)
            pos = end
    return out


def _from_json(obj: dict, where: str) -> ParsedResponse:
    sub, notes = read_answer(obj)
    return ParsedResponse(sub.code, sub.tractable_class, sub.complexity_O, sub.confidence, sub.justification, where,
                          notes)


def _looks_like_json(text: str) -> bool:
    s = text.strip()
    if s.startswith("```"):
        s = s.split("\n", 1)[-1]
    return s.lstrip().startswith("{") or '"code"' in s


def _json_error(text: str) -> str:
    s = text.strip()
    m = _FENCE.search(s)
    if m and m.group(2).strip().startswith("{"):
        s = m.group(2).strip()
    start = s.find("{")
    try:
        json.JSONDecoder(strict=False).raw_decode(s, max(start, 0))
    except json.JSONDecodeError as exc:
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    except ValueError as exc:  # pragma: no cover - raw_decode raises JSONDecodeError
        return str(exc)
    return "no object found"


# -- Python block with claims in prose ------------------------------------------------------

def _python_block(text: str) -> str | None:
    """The last fenced block that defines Z_efficient or log_Z (Python or untagged)."""
    best = None
    for m in _FENCE.finditer(text):
        if m.group(1).lower() in ("python", "py", "python3", "") and _DEF.search(m.group(2)):
            best = m.group(2)
    return best.rstrip() + "\n" if best is not None else None


def _from_prose(code: str, prose: str, labels, claims: dict) -> ParsedResponse:
    notes: list[str] = []
    label = claims.get("tractable_class") if claims.get("tractable_class") in labels else None
    label = label or class_from_prose(prose, labels, notes)
    cplx = claims.get("complexity_O") if isinstance(claims.get("complexity_O"), str) else None
    cplx = cplx or complexity_from_prose(prose)
    conf = as_confidence(claims.get("confidence"))
    conf = conf if conf is not None else confidence_from_prose(prose)
    just = claims.get("justification") if isinstance(claims.get("justification"), str) else None
    just = just or (" ".join(prose.split())[:1000] or None)
    return ParsedResponse(code, label, cplx, conf, just, "python_prose", notes)


def class_from_prose(prose: str, labels=CLASS_LABELS, notes: list[str] | None = None) -> str | None:
    """A library label stated in prose: an explicit "tractable_class: X" wins, else the first mentioned."""
    alt = "|".join(re.escape(lab) for lab in sorted(labels, key=len, reverse=True))
    explicit = re.search(rf"tractable[_ ]class\W{{0,6}}({alt})\b", prose, re.I)
    if explicit:
        return explicit.group(1).lower()
    found = [m.group(1).lower() for m in re.finditer(rf"(?<![A-Za-z0-9_])({alt})(?![A-Za-z0-9_])", prose, re.I)]
    distinct = list(dict.fromkeys(found))
    if len(distinct) > 1 and notes is not None:
        notes.append(f"several class labels in the prose ({', '.join(distinct)}); took the first")
    return distinct[0] if distinct else None


def complexity_from_prose(prose: str) -> str | None:
    """An ``O(...)`` mention with balanced parentheses; one after the word "complexity" wins."""
    spans = []
    for m in re.finditer(r"(?<![A-Za-z0-9_])O\(", prose):
        depth, i = 0, m.end() - 1
        while i < len(prose):
            depth += {"(": 1, ")": -1}.get(prose[i], 0)
            if depth == 0:
                break
            i += 1
        if depth == 0 and i - m.end() < 60:
            spans.append((m.start(), prose[m.start():i + 1]))
    if not spans:
        return None
    for start, expr in spans:
        if re.search(r"complexity\W{0,20}$", prose[max(0, start - 40):start], re.I):
            return expr
    return spans[0][1]


def confidence_from_prose(prose: str) -> float | None:
    m = re.search(r"confidence\W{0,6}(?:of|is|:|=)?\s*([0-9]*\.?[0-9]+)\s*(%?)", prose, re.I)
    if not m:
        return None
    return as_confidence(m.group(1) + m.group(2))


# -- diffs ----------------------------------------------------------------------------------

def _parse_diff(text: str, parent_code, parent_claims: dict, labels) -> ParsedResponse | ParseFailure:
    if parent_code is None:
        return ParseFailure("the response contains SEARCH/REPLACE blocks but there is no parent program to apply them to", "diff")
    try:
        code = apply_diff(parent_code, text)
    except DiffError as exc:
        return ParseFailure(f"the SEARCH/REPLACE diff does not apply to the parent program.\n{exc}", "diff")
    outside = re.sub(r"<{5,9} ?SEARCH.*?>{5,9} ?REPLACE", " ", text, flags=re.S)
    obj, _ = find_json_object(outside)
    claims = {**{k: v for k, v in parent_claims.items() if v is not None},
              **{k: v for k, v in (obj or {}).items() if k != "code" and v is not None}}
    notes = []
    if obj is None:
        prose = _FENCE.sub(" ", outside)
        stated = {"tractable_class": class_from_prose(prose, labels), "complexity_O": complexity_from_prose(prose),
                  "confidence": confidence_from_prose(prose)}
        claims.update({k: v for k, v in stated.items() if v is not None})
        notes.append("claims not given as JSON; taken from the prose or inherited from the parent")
    label = claims.get("tractable_class") if claims.get("tractable_class") in labels else None
    return ParsedResponse(code, label, claims.get("complexity_O") if isinstance(claims.get("complexity_O"), str) else None,
                          as_confidence(claims.get("confidence")),
                          claims.get("justification") if isinstance(claims.get("justification"), str) else None,
                          "diff", notes)
