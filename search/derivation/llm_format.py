"""A language model speaks derivations: a chain of actions and a solver in a small JSON schema.

Instead of code, a model may answer with::

    {"derivation": [{"action": "gauge"}, {"action": "decoration", "options": {"repeat": true}}],
     "solver": "kaufman", "solver_options": {}, "justification": "..."}

:func:`parse_chain` checks it (known actions and solvers, known options with allowed values; one line
saying what is wrong otherwise) and gives a :class:`Plan`; :func:`propose_from_text` has the engine
check every step of that plan on the task and render it (engine.derive_plan), so what the model
proposes is judged exactly as the derivation proposer's own chains. :func:`prompt_text` writes the
prompt block: the schema, every action and solver with what it does, and which of them the structure
analysis admits for the task as it is read (later steps are checked when the chain is applied).
"""

from __future__ import annotations

import json
import re

from search.candidate import Candidate
from search.derivation.actions import ACTIONS
from search.derivation.engine import derive_plan, root_view
from search.derivation.proposer import to_candidate
from search.derivation.record import Plan
from search.derivation.solvers import SOLVERS

SCHEMA = {
    "type": "object",
    "required": ["derivation", "solver"],
    "properties": {
        "derivation": {"type": "array", "items": {
            "type": "object", "required": ["action"],
            "properties": {"action": {"enum": list(ACTIONS)}, "options": {"type": "object"}}}},
        "solver": {"enum": list(SOLVERS)},
        "solver_options": {"type": "object"},
        "justification": {"type": "string"},
    },
}
#: a chain longer than this is refused (the engine's own search stops at 4 steps)
MAX_STEPS = 8


class ChainFormatError(ValueError):
    """The text is not a derivation in the schema; the message says what is wrong, in one line."""


def parse_chain(text: str) -> tuple[Plan, str]:
    """(the plan, the justification) of a model's answer: a JSON object, bare or in a ```json fence."""
    obj = _json_object(text)
    steps = obj.get("derivation")
    if not isinstance(steps, list):
        raise ChainFormatError('"derivation" must be a list of {"action": ..., "options": {...}} objects')
    if len(steps) > MAX_STEPS:
        raise ChainFormatError(f"a chain of {len(steps)} steps is longer than {MAX_STEPS}")
    actions = []
    for k, step in enumerate(steps):
        if not isinstance(step, dict) or not isinstance(step.get("action"), str):
            raise ChainFormatError(f"step {k} is not an object with an \"action\" name")
        name = step["action"]
        if name not in ACTIONS:
            raise ChainFormatError(f"step {k}: unknown action {name!r}; the actions are {', '.join(ACTIONS)}")
        actions.append((name, _options(step.get("options", {}), ACTIONS[name].OPTION_SPACE, f"step {k} ({name})")))
    solver = obj.get("solver")
    if solver not in SOLVERS:
        raise ChainFormatError(f"unknown solver {solver!r}; the solvers are {', '.join(SOLVERS)}")
    options = _options(obj.get("solver_options", {}), SOLVERS[solver].OPTION_SPACE, f"solver {solver}")
    why = obj.get("justification", "")
    if not isinstance(why, str):
        raise ChainFormatError('"justification" must be a string')
    return Plan(tuple(actions), solver, options, (), "", why, ()), why


def propose_from_text(task, text: str, cid: str, formula=None, source: str = "the task's formula", seed: int = 0,
                      sandbox=None, proposer: str = "llm") -> Candidate:
    """The candidate of a model's derivation answer: parsed, every step checked on the task, rendered.
    A failed candidate (with the reason and whatever steps were checked) when any of that fails."""
    try:
        plan, _ = parse_chain(text)
    except ChainFormatError as exc:
        return Candidate.failed(cid, task.id, f"derivation answer: {exc}", proposer=proposer, response=text,
                                response_format="derivation_json")
    d = derive_plan(task, plan, formula, source, seed=seed, sandbox=sandbox)
    cand = to_candidate(d, cid, task.id, operation="chain proposed in the derivation schema")
    cand.proposer, cand.response, cand.response_format = proposer, text, "derivation_json"
    return cand


def prompt_text(task, formula=None, seed: int = 0) -> str:
    """The prompt block that lets a model answer with a chain: schema, library, and what applies now."""
    view = root_view(task, formula, seed)
    lines = ["You may answer with a derivation instead of code: a chain of transformations of the model, each "
             "checked by the engine before the next (log Z before = log Z after + the recorded change, exactly, "
             "on small instances), ended by a solver. Answer with one JSON object:",
             '{"derivation": [{"action": NAME, "options": {...}}, ...], "solver": NAME, "solver_options": {...}, '
             '"justification": "..."}', "", "Actions:"]
    for name, a in ACTIONS.items():
        reason = a.admits(view)
        status = "admitted now" if reason is None else f"not now: {reason}"
        opts = "" if not a.OPTION_SPACE else f" options {_space(a.OPTION_SPACE)};"
        lines.append(f"- {name}: {a.SUMMARY};{opts} [{status}]")
    lines.append("Solvers:")
    for name, s in SOLVERS.items():
        reason = s.applies(view)
        status = "applies now" if reason is None else f"not now: {reason}"
        opts = "" if not s.OPTION_SPACE else f" options {_space(s.OPTION_SPACE)};"
        lines.append(f"- {name}: {s.SUMMARY};{opts} [{status}]")
    lines.append("The tractable class and the complexity are derived from the chain you give; a step that does "
                 "not apply or fails its check ends the chain with that reason.")
    return "\n".join(lines)


def _space(space: dict) -> str:
    return ", ".join(f"{k} in {list(v)}" for k, v in space.items())


def _options(raw, space: dict, where: str) -> dict:
    if not isinstance(raw, dict):
        raise ChainFormatError(f"{where}: options must be an object")
    out = {}
    for k, v in raw.items():
        if k not in space:
            raise ChainFormatError(f"{where}: unknown option {k!r}" + (f"; known: {', '.join(space)}" if space else ""))
        if v not in space[k]:
            raise ChainFormatError(f"{where}: option {k} must be one of {list(space[k])}, got {v!r}")
        out[k] = v
    return out


def _json_object(text: str) -> dict:
    if not isinstance(text, str):
        raise ChainFormatError("the answer is not text")
    fenced = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.S)
    body = fenced.group(1) if fenced else text[text.find("{"): text.rfind("}") + 1] if "{" in text else ""
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ChainFormatError(f"the answer holds no JSON object ({exc.msg} at position {exc.pos})") from None
    if not isinstance(obj, dict):
        raise ChainFormatError("the answer's JSON is not an object")
    return obj
