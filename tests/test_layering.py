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


def targets(path: Path):
    """What the top-level imports of ``path`` execute: ``from pkg import module`` runs pkg's __init__ and the
    module, so it is an edge to the module (whose own import of pkg is its edge); ``from pkg import name``
    an edge to pkg's __init__ itself. Package inits are modules like any other here."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in MODULES]
            yield from submodules
            if len(submodules) < len(node.names):
                yield node.module


def graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for name, path in MODULES.items():
        g.add_node(name)
        for target in targets(path):
            dep = resolve(target)
            if dep is not None and dep != name:
                g.add_edge(name, dep)
    return g


def test_imports_point_down_the_layers():
    wrong = [(a, b) for a, b in graph().edges
             if LAYERS.index(b.split(".")[0]) > LAYERS.index(a.split(".")[0])]
    assert not wrong, f"imports that point up a layer: {wrong}"


def test_there_are_no_import_cycles():
    """Package inits included: a submodule importing a name from its own package's __init__, which imports
    the submodule back, is a cycle."""
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


#: the core: what runs every plugin of a kind and must know none by name
CORE = ("evolve/engine", "search/derivation")
#: plugin modules living beside the core, and the reader of old snapshots (whose format named strategies)
NOT_CORE = {"evolve/engine/legacy.py", "search/derivation/proposer.py", "search/derivation/llm_format.py"}
#: (file, word): a plugin's name used in another sense
OTHER_SENSE = {("search/derivation/diagnosis.py", "gauge")}   # a FamilyStructure disorder kind


def test_no_plugin_is_named_in_the_core():
    """The engine and the derivation search read what a plugin can do from its declared flags (calls_models,
    Population, FIRST_STEP, CHEAP, FALLBACK, step_check), never from its name."""
    import search.derivation.actions as actions
    import search.derivation.solvers as solvers
    import search.proposers as proposers
    import search.strategies as strategies

    names = {n for module in (proposers, strategies, actions, solvers) for n in module._registry.names()}
    assert {"llm", "islands", "gauge", "enumeration", "tensor_contraction"} <= names
    named = []
    for where in CORE:
        for path in sorted((ROOT / where).glob("*.py")):
            rel = str(path.relative_to(ROOT))
            if rel in NOT_CORE:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and node.value in names and (rel, node.value) not in OTHER_SENSE:
                    named.append(f"{rel}:{node.lineno} {node.value!r}")
    assert not named, f"plugins named in the core: {named}"


def test_no_derivation_plugin_reads_another_plugins_reason_text():
    """A solver or action decides from the view's typed facts (nn_torus, frustration, widths, ...), not by
    reading another plugin's refusal and matching words in it: the torus Pfaffian once read Kaufman's
    reason for "one positive coupling per direction", so rewording Kaufman's message changed what
    the torus Pfaffian accepted."""
    import search.derivation.actions as actions
    import search.derivation.solvers as solvers

    names = set(actions._registry.names()) | set(solvers._registry.names())
    reads = []
    for where in ("search/derivation/solvers", "search/derivation/actions"):
        for path in sorted((ROOT / where).glob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            own = {node.value.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                   and any(isinstance(t, ast.Name) and t.id == "NAME" for t in node.targets)
                   and isinstance(node.value, ast.Constant)}
            for node in ast.walk(tree):
                key = None
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and node.func.attr in ("get", "reason") and node.args:
                    key = node.args[0]
                elif isinstance(node, ast.Subscript):
                    key = node.slice
                if isinstance(key, ast.Constant) and key.value in names - own:
                    reads.append(f"{path.relative_to(ROOT)}:{node.lineno} {key.value!r}")
    assert not reads, f"plugins reading another plugin's reason: {reads}"


#: modules that read words out of text they are given by a user or a model (command-line values, an
#: LLM's answer, a submission's JSON, code the audit hook sees), not text another layer wrote
READS_INPUT_TEXT = {"evolve/commands/threshold.py", "search/derivation/llm_format.py", "evaluators/sandbox/audit.py",
                    "evaluators/submission.py"}


def test_no_module_decides_by_the_words_of_another_layers_message():
    """A decision is taken on a typed field (an exception class, CallResult.error_type, a Verdict's
    failure stage, a view fact), not by testing a message for a phrase: ``"..." in reason``,
    ``error.startswith("MemoryError")``, ``"other settings" in str(exc)``. Rewording a message then
    cannot change behaviour."""
    names = {"error", "reason", "why", "failure", "message", "feedback", "detail", "summary", "text"}

    def textual(node) -> bool:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str":
            return bool(node.args) and isinstance(node.args[0], ast.Name)      # str(exc), not str(a path)
        return (isinstance(node, ast.Attribute) and node.attr in names) or (isinstance(node, ast.Name) and node.id in names)

    found = []
    for layer in ("evolve", "search", "evaluators", "tasks"):
        for path in sorted((ROOT / layer).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            if rel in READS_INPUT_TEXT:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)) \
                        and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str) \
                        and textual(node.comparators[0]):
                    found.append(f"{rel}:{node.lineno}")
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and node.func.attr in ("startswith", "endswith") and textual(node.func.value):
                    found.append(f"{rel}:{node.lineno}")
    assert not found, f"decisions on a message's words: {found}"


def _all_imports(path: Path) -> set[str]:
    """The project modules ``path`` imports anywhere (top level or inside functions)."""
    return {dep for _, name in imports(path, top_level_only=False) if (dep := resolve(name)) is not None}


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


ORACLES = "evaluators.oracles"
LINALG, CONTRACTION, METHODS = f"{ORACLES}.linalg", f"{ORACLES}.contraction", f"{ORACLES}.methods"
#: what every kind of oracle module may use: the shared signals and the call's time budget
ORACLE_COMMON = {f"{ORACLES}.base", f"{ORACLES}.budget"}
#: the benchmarks of evolve/bench and the modules that may run them: their commands and the bench report
BENCH_USERS = ("evolve.bench", "evolve.commands", "evolve.report.bench_report")


def test_benchmarks_live_outside_the_product_and_only_their_commands_load_them():
    """Benchmark harnesses (which time one configuration against another, and may reach into a
    module's internals to do it) are in evolve/bench, not beside what they measure; the engine, the
    store, the analysis and tuning never load them, and no oracle module is named like one."""
    loaders = sorted(name for name, path in MODULES.items()
                     if not any(_under(name, user) for user in BENCH_USERS)
                     and any(_under(dep, "evolve.bench") for dep in _all_imports(path)))
    assert not loaders, f"modules outside the benchmarks and their commands that import evolve.bench: {loaders}"
    harnesses = sorted(name for name in MODULES if _under(name, ORACLES)
                       and name.rsplit(".", 1)[-1].endswith(("_bench", "_perf")))
    assert not harnesses, f"benchmark harnesses inside the oracle package: {harnesses}"


def _private_uses(path: Path) -> list[str]:
    """Where ``path`` reaches into project modules: the private names it uses (``from pkg.mod import
    _name``, and ``mod._name`` where ``mod`` is a project module imported under that name; dunders
    excepted) and the modules whose globals it sets (``setattr(mod, ...)``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases, found = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and resolve(node.module):
            for alias in node.names:
                if f"{node.module}.{alias.name}" in MODULES:
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                elif alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{node.module}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in MODULES:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.append(f"{aliases[node.value.id]}.{node.attr}")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
                and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in aliases):
            found.append(f"setattr({aliases[node.args[0].id]}, ...)")
    return found


def test_benchmarks_use_only_public_names_of_what_they_measure(tmp_path):
    """A benchmark sets what it compares through parameters (settings objects, keyword arguments),
    never by swapping a module's globals or calling its private functions: a harness that reaches
    into internals breaks silently when they change, and leaves them changed when it fails."""
    private = {name: uses for name, path in MODULES.items() if _under(name, "evolve.bench")
               if (uses := _private_uses(path))}
    assert not private, f"benchmarks using private names of the product: {private}"
    planted = tmp_path / "probe.py"  # the check itself finds what it must
    planted.write_text("from evaluators.oracles import tensor_network as tn\n"
                       "from evaluators.oracles.planar import _bridges\ntn._TREE_CACHE.clear()\n"
                       "setattr(tn, 'MAX_FLOPS', 1.0)\n", encoding="utf-8")
    assert sorted(_private_uses(planted)) == ["evaluators.oracles.planar._bridges",
                                              "evaluators.oracles.tensor_network._TREE_CACHE",
                                              "setattr(evaluators.oracles.tensor_network, ...)"]


def test_oracle_methods_are_registered_only_by_their_adapters():
    """The method registry is reached by the adapters (evaluators/oracles/methods/, one module per
    method, each registering itself) and by the registry that chooses among them; an adapter reaches
    its method's own module, never the linear algebra or the contraction machinery directly."""
    users = sorted(name for name, path in MODULES.items()
                   if not _under(name, METHODS) and METHODS in _all_imports(path))
    assert users == [f"{ORACLES}.registry"], f"modules besides the registry that use the method registry: {users}"
    adapters = [name for name in MODULES if _under(name, METHODS) and name != METHODS]
    assert len(adapters) >= 10
    for name in adapters:
        text = MODULES[name].read_text(encoding="utf-8")
        assert "register(sys.modules[__name__])" in text, f"{name} does not register itself"
        reached = {dep for dep in _all_imports(MODULES[name]) if _under(dep, ORACLES) and dep != METHODS}
        machinery = sorted(dep for dep in reached if _under(dep, LINALG) or _under(dep, CONTRACTION))
        assert not machinery, f"{name} reaches the machinery past its method's module: {machinery}"
    registering = sorted(name for name, path in MODULES.items() if _under(name, ORACLES) and not _under(name, METHODS)
                         and "register(sys.modules[__name__])" in path.read_text(encoding="utf-8"))
    assert not registering, f"oracle modules registering outside methods/: {registering}"


def test_linear_algebra_and_contraction_are_libraries_below_the_methods():
    """evaluators/oracles/linalg (the sparse skew Pfaffian and its kernels) imports nothing of the
    project but itself: no model, no budget, no contraction. evaluators/oracles/contraction (path
    search, executor rates, executor) imports itself, the oracles' shared signals and budget, and the
    oracle cache's directory (where the machine's rates are learned); never linalg, never a method's
    module. The methods' modules (planar, torus_sparse, tensor_network, ...) are what put them to use."""
    wrong = []
    for name, path in MODULES.items():
        deps = _all_imports(path) - {name}
        if _under(name, LINALG):
            wrong += [(name, d) for d in deps if not _under(d, LINALG)]
        elif _under(name, CONTRACTION):
            allowed = ORACLE_COMMON | {"evaluators.oracle_cache"}
            wrong += [(name, d) for d in deps if not _under(d, CONTRACTION) and d not in allowed]
    assert not wrong, f"imports across the oracle sub-packages: {sorted(wrong)}"
