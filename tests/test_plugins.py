"""One plugin mechanism (tasks/plugins.py): a new derivation action or solver is one module plus its
registration; a plugin that lacks what its kind declares is refused when it loads, naming the gap."""

import sys
import textwrap

import pytest

import search.derivation.actions as actions_pkg
import search.derivation.solvers as solvers_pkg
from search.derivation import derive
from search.derivation.actions import ACTIONS
from search.derivation.solvers import ANSWER_SOLVERS, SOLVERS
from tasks.plugins import PluginError, Registry
from tasks.registry import get_task

# an action that renames nothing and changes nothing: Z unchanged, so its check passes; it applies to a
# model with pair couplings and is tried first (ORDER 1)
IDENTITY = '''
    """A do-nothing action (a test plugin)."""
    import sys

    from search.derivation.actions import register

    NAME = "identity_step"
    SUMMARY = "leaves the model as it is"
    COST = "O(n)"
    LABELS = ()
    PRESERVES_ENERGY = True
    ORDER = 1
    FIRST_STEP = False
    OPTION_SPACE = {}
    IMPORTS = ""


    def _act_identity(model, options):
        """The model unchanged."""
        return dict(model)


    FUNCTIONS = (_act_identity,)
    ENTRY = _act_identity


    def admits(view):
        return None if view.kind == "model" and view.has_pairs else "no pair model"


    def explain(view, options):
        return {}


    register(sys.modules[__name__])
'''


@pytest.fixture
def plugin_folder(tmp_path, monkeypatch):
    """A folder appended to the actions' and solvers' package paths; what is registered is forgotten after."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    list(ACTIONS), list(SOLVERS)                       # the built-ins are registered first
    for package in (actions_pkg, solvers_pkg):
        monkeypatch.setattr(package, "__path__", [*package.__path__, str(folder)])
        monkeypatch.setattr(package._registry, "entries", dict(package._registry.entries))
    yield folder
    for module in folder.glob("*.py"):
        for package in (actions_pkg, solvers_pkg):
            sys.modules.pop(f"{package.__name__}.{module.stem}", None)


def test_a_new_action_is_one_module_and_the_search_uses_it(plugin_folder, sandbox):
    (plugin_folder / "identity_step.py").write_text(textwrap.dedent(IDENTITY))
    assert "identity_step" in ACTIONS and list(ACTIONS)[0] == "identity_step"     # found, and first by ORDER
    d = derive(get_task("P04"), sandbox=sandbox, max_nodes=3)
    tried = {p.key for p in d.plans} | {s.action for s in d.failed}
    assert any(key.startswith("identity_step ->") for key in tried), tried


def test_a_plugin_that_lacks_a_declared_attribute_is_refused_naming_it(plugin_folder):
    text = textwrap.dedent(IDENTITY).replace("COST = \"O(n)\"\n", "").replace("identity_step", "broken_step")
    (plugin_folder / "broken_step.py").write_text(text)
    with pytest.raises(PluginError, match=r"derivation action search\.derivation\.actions\.broken_step does not "
                                          r"declare COST \(a derivation action declares NAME, SUMMARY, COST"):
        ACTIONS.lookup("broken_step")
    bare = Registry(__name__, "widget", required=("size",))
    with pytest.raises(PluginError, match="widget Gadget does not declare size"):
        bare.register(type("Gadget", (), {"name": "gadget"}))


def test_capabilities_are_declared_flags_not_names():
    cheap = {name for name, s in SOLVERS.items() if s.cheap}
    first = {name for name, a in ACTIONS.items() if a.FIRST_STEP}
    assert cheap == {"product", "kaufman", "magnetisation"}
    assert first == {"nishimori", "dual_rbim", "dual_layers", "face_dual", "cycle_dual"}
    assert [s.fallback for s in SOLVERS.values()].count(True) == 1 and SOLVERS["elimination"].fallback
    answers = {name: s.answer for name, s in ANSWER_SOLVERS.items()}      # not exact: never among SOLVERS
    assert answers == {"mean_field": "lower", "tree_reweighted": "upper", "boundary_mps": "approximation"}
    assert not set(answers) & set(SOLVERS) and all(s.answer == "exact" for s in SOLVERS.values())
