"""A language model speaks derivations: a chain of actions and a solver in a small JSON schema.

Instead of code, a model may answer with::

    {"derivation": [{"action": "gauge"}, {"action": "decoration", "options": {"repeat": true}}],
     "solver": "kaufman", "solver_options": {}, "justification": "..."}

:func:`parse_chain` checks it (known actions and solvers, known options with allowed values; one line
saying what is wrong otherwise) and gives a :class:`Plan`; :func:`propose_from_text` has the engine
check every step of that plan on the task and render it (engine.derive_plan), so what the model
proposes is judged exactly as the derivation proposer's own chains. Steps are numbered as in the
derivation record: step 0 reads the formula, the model's first action is step 1. :func:`prompt_text`
writes the prompt block: the schema and the actions and solvers the structure analysis admits for the
task, each with the shortest chain after which it applies (search/derivation/admission.py);
:func:`chain_answer` writes a recorded plan back in the schema (a parent shown in a prompt).
"""

from __future__ import annotations

import json
import re

from search.candidate import Candidate
from search.derivation.actions import ACTIONS
from search.derivation.admission import admission
from search.derivation.engine import derive_plan
from search.derivation.proposer import DerivationProposer, to_candidate
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
    for k, step in enumerate(steps, 1):           # step 0 is the reading of the formula
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
                      sandbox=None, proposer: str = "llm", checker: DerivationProposer | None = None) -> Candidate:
    """The candidate of a model's derivation answer: parsed, every step checked on the task, rendered.
    A failed candidate (``parse_error`` says which step failed and why, the steps checked before it are
    in ``derivation``) when any of that fails. ``checker`` (a DerivationProposer: its sandbox, its
    formulas and its cache of checked plans) replaces ``formula``, ``source``, ``seed`` and ``sandbox``."""
    provenance = dict(proposer=proposer, response=text, response_format="derivation_json")
    try:
        plan, _ = parse_chain(text)
    except ChainFormatError as exc:
        return Candidate.failed(cid, task.id, f"the derivation answer is malformed: {exc}", **provenance)
    if checker is not None:
        d = checker.derivation(task, plan)
    else:
        d = derive_plan(task, plan, formula, source, seed=seed, sandbox=sandbox)
    cand = to_candidate(d, cid, task.id, operation="chain proposed in the derivation schema")
    if not cand.ok:
        cand.parse_error = f"the derivation was refused: {d.error}"
    cand.proposer, cand.response, cand.response_format = proposer, text, "derivation_json"
    return cand


def prompt_text(task, formula=None, seed: int = 0) -> str:
    """The prompt block that lets a model answer with a chain: the schema, and the actions and solvers
    the structure analysis admits for the task (only those), each with where it applies first."""
    found = admission(task, formula, seed)
    lines = ["For this request, answer with a derivation instead of code: a chain of transformations of the model, "
             "each checked by the engine before the next (log Z before = log Z after + the recorded change, exactly, "
             "on small instances), ended by a solver. The engine renders the chain as the program; its tractable class and "
             "complexity follow from the chain. The answer is one JSON object:",
             '{"derivation": [{"action": NAME, "options": {...}}, ...], "solver": NAME, "solver_options": {...}, '
             '"justification": "..."}',
             f"Step 0 (reading the task's formula into a model) is done for you; your actions are steps 1, 2, ... in "
             f"order, at most {MAX_STEPS}. Options may be left out (the first value listed is the default).", "",
             "Actions the structure analysis admits for this task (with default options, where each applies first):"]
    for name, chain in found.actions.items():
        a = ACTIONS[name]
        opts = "" if not a.OPTION_SPACE else f" options {_space(a.OPTION_SPACE)};"
        lines.append(f"- {name}: {a.SUMMARY.rstrip('.')};{opts} applies {_where(chain)}")
    if not found.actions:
        lines.append("- none: no transformation applies; answer with a solver and an empty derivation")
    lines.append("Solvers that apply (the same way):")
    for name, chain in found.solvers.items():
        s = SOLVERS[name]
        opts = "" if not s.OPTION_SPACE else f" options {_space(s.OPTION_SPACE)};"
        lines.append(f"- {name}: {s.SUMMARY.rstrip('.')};{opts} applies {_where(chain)}")
    lines.append(f"(Explored {found.explored} chain prefixes up to {found.depth} steps.) A step that does not apply "
                 "or fails its check is refused, naming the step and the reason.")
    return "\n".join(lines)


def chain_answer(plan: dict) -> str:
    """A recorded plan (``Plan.to_dict()``, as a candidate's ``prompt_meta["derivation_plan"]``) written
    back in the answer schema."""
    steps = [{"action": a, **({"options": o} if o else {})} for a, o in plan.get("actions", [])]
    return json.dumps({"derivation": steps, "solver": plan.get("solver"),
                       "solver_options": plan.get("solver_options") or {}})


def _where(chain: tuple) -> str:
    return "to the formula as read" if not chain else "after " + " -> ".join(chain)


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


#: a reasoning model's scratchpad, removed before the answer is read
_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S | re.I)


def _json_object(text: str) -> dict:
    if not isinstance(text, str):
        raise ChainFormatError("the answer is not text")
    text = _THINK.sub(" ", text)
    fenced = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.S)
    body = fenced.group(1) if fenced else text[text.find("{"): text.rfind("}") + 1] if "{" in text else ""
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ChainFormatError(f"the answer holds no JSON object ({exc.msg} at position {exc.pos})") from None
    if not isinstance(obj, dict):
        raise ChainFormatError("the answer's JSON is not an object")
    return obj
