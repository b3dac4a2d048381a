"""One self-contained candidate program from a compiled reader, a chain of actions and a solver.

The program's text is the reader's source, the runtime helpers, each action's functions and the
solver's functions (each read with inspect.getsource from the modules the engine itself calls), with
every import gathered at the top, and a driver that applies the chain in order::

    state = _rt_start(_read_formula(params, n))
    state = _act_gauge(state, {...})
    ...
    return _sol_kaufman(state, {...}) + state["log_shift"]

A task whose quantity is a signed number (a mean energy) gets ``Z_efficient`` returning it; the
others get ``log_Z`` and ``Z_efficient = exp(log_Z)``. Generated programs import only math, numpy,
scipy and networkx (within the sandbox allowlist).
"""

from __future__ import annotations

import inspect
import re

from search.derivation import runtime

_IMPORT = re.compile(r"^(import \S+( as \S+)?|from \S+ import .+)$")


def _split_imports(text: str) -> tuple[list[str], str]:
    """(import lines, the rest) of a source text whose imports are top-level single lines."""
    imports, rest = [], []
    for line in text.splitlines():
        (imports if _IMPORT.match(line) else rest).append(line)
    return imports, "\n".join(rest).strip("\n")


def _functions_text(functions, seen: set) -> str:
    parts = []
    for f in functions:
        if f.__name__ in seen:
            continue
        seen.add(f.__name__)
        parts.append(inspect.getsource(f).rstrip())
    return "\n\n\n".join(parts)


def _chain_parts(reader_source: str, actions) -> tuple[list[str], list[str]]:
    """(import lines, function bodies) of the reader, the runtime and every action of the chain, each once."""
    imports: list[str] = []
    bodies: list[str] = []
    seen: set = set()
    for text in (reader_source, runtime.IMPORTS):
        found, rest = _split_imports(text)
        imports += found
        if rest:
            bodies.append(rest)
    bodies.append(_functions_text(runtime.FUNCTIONS, seen))
    for module, _ in actions:
        imports += _split_imports(module.IMPORTS)[0]
        text = _functions_text(module.FUNCTIONS, seen)
        if text:
            bodies.append(text)
    return imports, bodies


def _assemble(header: str, imports: list[str], bodies: list[str], tail: str) -> str:
    ordered = _order_imports(imports + ["import math"])
    return header.rstrip() + "\n\n" + "\n".join(ordered) + "\n\n\n" + "\n\n\n".join(b for b in bodies if b) + "\n" + tail


def program(header: str, reader_source: str, actions, solver, solver_options: dict, signed: bool) -> str:
    """The candidate program. ``actions`` is [(module, options)]; ``signed``: the task's quantity is a
    signed number (the program's Z_efficient returns it through the solver's energy function)."""
    imports, bodies = _chain_parts(reader_source, actions)
    found, rest = _split_imports(solver.source(solver_options))
    imports += found
    bodies.append(rest)
    steps = "\n".join(f"    state = {m.ENTRY.__name__}(state, {dict(o)!r})" for m, o in actions)
    if signed:
        if solver.energy is None:
            raise ValueError(f"the {solver.NAME} solver gives log Z, not the signed quantity this task asks for")
        tail = f'''

def _value(params, n):
    """The quantity for these params at size n, by the derivation above."""
    state = _rt_start(_read_formula(params, int(n)))
{steps}
    return float({solver.energy}(state, {dict(solver_options)!r}))


def Z_efficient(params, n):
    """The task's (signed) quantity."""
    return _value(params, n)
'''
    else:
        tail = f'''

def log_Z(params, n):
    """Natural log of the task's quantity for these params at size n, by the derivation above."""
    state = _rt_start(_read_formula(params, int(n)))
{steps}
    if state["statistic"] != "log_z":
        raise ValueError("the chain left a mean energy, not a log Z")
    return float({solver.entry}(state, {dict(solver_options)!r})) + float(state["log_shift"])


def Z_efficient(params, n):
    """The quantity itself (OverflowError once it exceeds a float: log_Z has no such limit)."""
    return math.exp(log_Z(params, n))
'''
    return _assemble(header, imports, bodies, tail)


def answer_program(header: str, reader_source: str, actions, kind: str, pieces) -> str:
    """A program whose answer is not an exact value (evaluators/answer_kinds.py): ``kind`` "bounds" with
    ``pieces`` [(lower solver, options), (upper solver, options)] defines log_Z_bounds(params, n) -> (lo, hi);
    "approximation" with [(solver, options)] defines log_Z_approx(params, n) -> [[control, value], ...]. The
    chain's ``log_shift`` is added to every value (the steps are exact identities)."""
    imports, bodies = _chain_parts(reader_source, actions)
    for solver, options in pieces:
        found, rest = _split_imports(solver.source(options))
        imports += found
        bodies.append(rest)
    steps = "\n".join(f"    state = {m.ENTRY.__name__}(state, {dict(o)!r})" for m, o in actions)
    head = f'''    state = _rt_start(_read_formula(params, int(n)))
{steps}
    if state["statistic"] != "log_z":
        raise ValueError("the chain left a mean energy, not a log Z")
    shift = float(state["log_shift"])'''
    if kind == "bounds":
        (lower, lo_opt), (upper, hi_opt) = pieces
        tail = f'''

def log_Z_bounds(params, n):
    """(lo, hi): rigorous bounds on the natural log of the task's quantity, by the derivation above."""
{head}
    return (float({lower.entry}(state, {dict(lo_opt)!r})) + shift, float({upper.entry}(state, {dict(hi_opt)!r})) + shift)
'''
    else:
        (solver, options), = pieces
        tail = f'''

def log_Z_approx(params, n):
    """[[control, value], ...]: the natural log of the task's quantity at increasing control, by the derivation above."""
{head}
    return [[c, float(v) + shift] for c, v in {solver.entry}(state, {dict(options)!r})]
'''
    return _assemble(header, imports, bodies, tail)


#: the only modules a derivation program imports (inside the sandbox allowlist)
ALLOWED_ROOTS = ("math", "decimal", "numpy", "scipy", "networkx")   # decimal: the torus programs' cold class sums


def _order_imports(lines: list[str]) -> list[str]:
    for line in lines:
        root = line.split()[1].split(".")[0]
        if root not in ALLOWED_ROOTS:
            raise ValueError(f"a rendered piece imports {root!r}: derivation programs import only {ALLOWED_ROOTS}")
    plain = sorted({ln for ln in lines if ln.startswith("import ")})
    froms = sorted({ln for ln in lines if ln.startswith("from ")})
    return plain + ([""] if plain and froms else []) + froms
