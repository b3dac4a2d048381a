"""The architecture as docs/architecture.md draws it, checked on the source: imports point down the layers
(tasks <- evaluators <- search <- evolve), no module imports itself back through a cycle, and
imports sit at the top of modules (an import inside a function says why on its line or the one
before)."""

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("tasks", "evaluators", "search", "evolve")   # each may import only those before it (and itself)


def modules() -> dict[str, Path]:
    out = {}
    for layer in LAYERS:
        for path in (ROOT / layer).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


MODULES = modules()


def resolve(name: str) -> str | None:
    """The project module an import names (the longest known prefix), or None for third parties."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        if ".".join(parts[:k]) in MODULES:
            return ".".join(parts[:k])
    return None


def imports(path: Path, top_level_only: bool):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node, node.module
            for alias in node.names:  # `from pkg import module`
                yield node, f"{node.module}.{alias.name}"


def graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for name, path in MODULES.items():
        g.add_node(name)
        for _, target in imports(path, top_level_only=True):
            dep = resolve(target)
            if dep is not None and dep != name and not name.startswith(dep + "."):  # a package's own __init__
                g.add_edge(name, dep)
    return g


def test_imports_point_down_the_layers():
    wrong = [(a, b) for a, b in graph().edges
             if LAYERS.index(b.split(".")[0]) > LAYERS.index(a.split(".")[0])]
    assert not wrong, f"imports that point up a layer: {wrong}"


def test_there_are_no_import_cycles():
    cycles = list(nx.simple_cycles(graph()))
    assert not cycles, f"import cycles: {cycles[:5]}"


@pytest.mark.parametrize("layer", ["evolve", "search"])
def test_imports_inside_functions_say_why(layer):
    unexplained = []
    for name, path in MODULES.items():
        if not name.startswith(layer):
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        top = {n.lineno for n, _ in imports(path, top_level_only=True)}
        for node, _ in imports(path, top_level_only=False):
            if node.lineno in top:
                continue
            here, before = lines[node.lineno - 1], lines[node.lineno - 2] if node.lineno > 1 else ""
            if "#" not in here and not before.strip().startswith("#"):
                unexplained.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not unexplained, f"imports inside functions without a reason: {sorted(set(unexplained))}"
