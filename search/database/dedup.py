"""Normalised code hashes: a program already judged (or in flight) is never evaluated again.

:func:`canonical_code` parses the code with :mod:`ast`, drops docstrings and every other bare
string statement (comments vanish with the parse), renames the local names of each top-level
function consistently (``v0``, ``v1``, ... in order of first appearance), and prints the tree
back with :func:`ast.unparse`. Two programs that differ only in comments, docstrings,
whitespace, quoting, redundant parentheses or the names of their local variables get the same
text; a changed constant, operator, call or global name changes it. The renaming is a
bijection inside each function, so programs with the same canonical text compute the same
thing (except when a caller passes a function's parameters by keyword, which the evaluators
never do: they call ``Z_efficient(params, n)`` / ``log_Z(params, n)`` positionally).

:func:`normalised_hash` is the sha256 of that text (prefix ``ast:``). Code that does not parse
hashes its whitespace-normalised raw text instead (prefix ``raw:``), so resubmitting the same
broken answer is caught too. The canonical text depends on the Python version's
``ast.unparse``; hashes are compared within one run, never across interpreters.
"""

from __future__ import annotations

import ast
import hashlib
from functools import lru_cache

__all__ = ["canonical_code", "digest", "normalised_hash"]

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def canonical_code(code: str, rename_locals: bool = True) -> str | None:
    """The canonical text of ``code``, or None when it does not parse."""
    return _canonical_code(code, bool(rename_locals))


# One program's text is canonicalised by the proposer, the engine's deduplication and the
# database; a template program takes 0.1-0.3 s, so each text is done once per process.
@lru_cache(maxsize=512)
def _canonical_code(code: str, rename_locals: bool) -> str | None:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):  # ValueError: null bytes in the source
        return None
    _drop_string_statements(tree)
    if rename_locals:
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                _rename_function_locals(node)
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        _rename_function_locals(item)
    return ast.unparse(tree)


def normalised_hash(code: str | None, rename_locals: bool = True) -> str:
    """sha256 hex digest of the canonical code (whitespace-normalised raw text if it does not parse)."""
    code = code or ""
    return digest(canonical_code(code, rename_locals), code)


def digest(canonical: str | None, code: str) -> str:
    """The hash given an already computed ``canonical_code(code)`` (None: it did not parse)."""
    text = "ast:" + canonical if canonical is not None else "raw:" + " ".join(code.split())
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _drop_string_statements(tree: ast.AST) -> None:
    """Remove docstrings and bare string expressions from every statement list."""
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            stmts = getattr(node, name, None)
            if not isinstance(stmts, list) or not stmts or not isinstance(stmts[0], ast.stmt):
                continue
            kept = [s for s in stmts if not _is_string_statement(s)]
            if len(kept) != len(stmts):
                setattr(node, name, kept or [ast.Pass()])


def _is_string_statement(stmt: ast.stmt) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str))


def _rename_function_locals(func: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    """Rename the parameters and assigned names of ``func`` (and of functions nested in it).

    One mapping per top-level function, built in a fixed traversal order, so two functions that
    differ by a consistent renaming get the same names. Names declared ``global``/``nonlocal``,
    names only read (globals, builtins, imported modules) and attributes are kept; the new
    names get a prefix no kept name starts with, so the renaming never merges two names.
    """
    nodes = _walk_in_order(func)
    keep: set[str] = set()
    order: dict[str, None] = {}   # insertion-ordered set
    for node in nodes:
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            keep.update(node.names)
    for node in nodes:
        name = None
        if isinstance(node, ast.arg):
            name = node.arg
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            name = node.id
        elif isinstance(node, _SCOPES) and node is not func and hasattr(node, "name"):
            name = node.name
        elif isinstance(node, ast.ExceptHandler) and node.name:
            name = node.name
        if name is not None and name not in keep and name not in order:
            order[name] = None
    kept = {n.id for n in nodes if isinstance(n, ast.Name) and n.id not in order}
    prefix = "v"
    while any(k.startswith(prefix) for k in kept):  # a new name must never equal a kept one
        prefix = "_" + prefix
    mapping = {name: f"{prefix}{i}" for i, name in enumerate(order)}
    for node in nodes:
        if isinstance(node, ast.arg) and node.arg in mapping:
            node.arg = mapping[node.arg]
        elif isinstance(node, ast.Name) and node.id in mapping:
            node.id = mapping[node.id]
        elif isinstance(node, _SCOPES) and node is not func and getattr(node, "name", None) in mapping:
            node.name = mapping[node.name]
        elif isinstance(node, ast.ExceptHandler) and node.name in mapping:
            node.name = mapping[node.name]


def _walk_in_order(node: ast.AST) -> list[ast.AST]:
    """Every node under ``node``, depth-first in source order (``ast.walk`` is breadth-first;
    either is deterministic). Renaming changes names only, never the tree's shape, so one list
    serves every pass."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(list(ast.iter_child_nodes(n))))
    return out
