"""The engine and its two protocols without Ray: a proposer or a strategy added as one file plus
its config section runs end to end; run events survive the journal codec as typed records; the
config tree reads every component's own section."""

import dataclasses
import io
import sys
import textwrap

import pytest

import search.proposers
import search.strategies
from evaluators.verdict import Numerical, Rung, Verdict
from evolve.config import config_from_dict
from evolve.engine.engine import STATE_SCHEMA, Engine
from evolve.engine.plan import plan_generation
from evolve.engine.pools import LocalPool
from evolve.engine.progress import Progress
from evolve.engine.runtime import engine_settings, make_strategy, proposer_context
from evolve.engine.evaluator_worker import EvaluatorWorker
from evolve.engine.proposer_worker import ProposerWorker
from evolve.store.events import (BudgetEvent, DuplicateEvent, EvaluationEvent, FinishEvent, PromotionEvent,
                                 ProposalEvent, SnapshotEvent, decode, encode)
from evolve.store.journal import read_journal
from evolve.store.run_store import RunStore
from search.candidate import Candidate
from search.database.events import MigrationEvent, ResetEvent
from search.records import Evaluation, JudgedProgram

DOUBLING = '''
    """A toy proposer: Z = factor^n, whatever the task (right only at beta = 0)."""
    from dataclasses import dataclass

    from search.candidate import Candidate
    from search.proposers import register


    @dataclass(frozen=True)
    class DoublingOptions:
        weight: float = 0.0
        factor: float = 2.0


    @register
    class Doubling:
        name = "doubling"
        Options = DoublingOptions

        def __init__(self, task, options, context):
            self.task, self.factor = task, options.factor

        def propose(self, request):
            k = request.generation  # a different program each generation
            code = f"def Z_efficient(params, n):\\n    return {self.factor} ** n + {k} * 0.0\\n"
            return Candidate(id=request.id, task=self.task.id, code=code, tractable_class="transfer_matrix",
                             complexity_O="O(n)", proposer=self.name,
                             parent_ids=[request.parent.id] if request.parent else [])
'''

FIRST_FOUND = '''
    """A toy strategy: every slot rewrites the first judged program; nothing else is kept."""
    from dataclasses import dataclass

    from search.records import Selection
    from search.strategies import register


    @dataclass(frozen=True)
    class FirstFoundOptions:
        patience: int = 3


    @register
    class FirstFound:
        name = "first_found"
        Options = FirstFoundOptions
        rejudge_duplicates = False

        def __init__(self, options, context):
            self.first = None

        def select(self, generation, slots):
            return [Selection(self.first, journal={"anchor": self.first.id if self.first else None})] * slots

        def absorb(self, slot, selection, program):
            if self.first is None and program.evaluation is not None:
                self.first = program

        def end_generation(self, generation):
            return []

        def finished(self):
            return None

        def state(self):
            return {"first": self.first.to_dict() if self.first else None}

        def load(self, state):
            from search.records import JudgedProgram
            self.first = JudgedProgram.from_dict(state["first"]) if state["first"] else None
'''

BASE = {"task": "P01", "seed": 4,
        "budgets": {"proposals": 6, "evaluations": 6, "wall_time_s": 600},
        "evaluator": {"samples": 1, "ladder": False, "judge": False},
        "ray": {"batch_size": 3}}


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    """A folder appended to both registries' package paths: a module dropped there is "one new file"."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    search.proposers.proposer_names(), search.strategies.strategy_names()  # the built-ins are registered first
    for package in (search.proposers, search.strategies):
        monkeypatch.setattr(package, "__path__", [*package.__path__, str(folder)])
        monkeypatch.setattr(package._registry, "entries", dict(package._registry.entries))  # forgotten afterwards
    yield folder
    for module in folder.glob("*.py"):   # imported again (and registered again) by the next test that writes it
        for package in (search.proposers, search.strategies):
            sys.modules.pop(f"{package.__name__}.{module.stem}", None)


def run_locally(cfg, store, sandbox):
    """The engine on in-process workers (no Ray), as `evolve bench` runs it."""
    sections = {n: o for n, o in cfg.proposers.items() if o.weight > 0}
    pool = LocalPool(ProposerWorker(cfg.task, sections, proposer_context(cfg)),
                     EvaluatorWorker(cfg.task, cfg.evaluator.verify_options(cfg.seed), sandbox=sandbox))
    strategy, _ = make_strategy(cfg, remote=False)
    engine = Engine(engine_settings(cfg), strategy, pool, store, Progress(cfg.budgets, stream=io.StringIO()))
    return engine.run(), engine


def events_of(store):
    return [decode(r) for r in read_journal(store.path / "journal.msgpack").records]


def test_a_new_proposer_is_one_file_and_its_config_section(plugin_dir, tmp_path, sandbox):
    (plugin_dir / "doubling.py").write_text(textwrap.dedent(DOUBLING))
    cfg = config_from_dict({**BASE, "proposers": {"structural": 0.0, "derivation": 0.0,
                                                  "doubling": {"weight": 1.0, "factor": 2.0}}})
    assert cfg.proposers["doubling"].factor == 2.0 and cfg.weights() == {"structural": 0.0, "derivation": 0.0,
                                                                         "doubling": 1.0, "llm": 0.0}
    with pytest.raises(Exception, match="proposers.doubling.factor"):
        config_from_dict({**BASE, "proposers": {"doubling": {"weight": 1.0, "factor": "two"}}})
    with RunStore.create(tmp_path / "runs", cfg.to_dict(), cfg.task) as store:
        reason, _ = run_locally(cfg, store, sandbox)
        events = events_of(store)
    assert reason == "proposal budget reached (6)"
    proposals = [e.candidate for e in events if isinstance(e, ProposalEvent)]
    judged = [e.evaluation for e in events if isinstance(e, EvaluationEvent)]
    assert len(proposals) == 6 and {c.proposer for c in proposals} == {"doubling"}
    # 2 distinct programs (one per generation): the rest are duplicates, journaled with the program they repeat
    dups = [e for e in events if isinstance(e, DuplicateEvent)]
    assert len(judged) == 2 and len(dups) == 4 and {d.of for d in dups} == {j.id for j in judged}
    assert all(j.verdict.verdict == "reject" and "samples failed" in j.verdict.feedback for j in judged)


def test_a_new_strategy_is_one_file_and_its_config_section(plugin_dir, tmp_path, sandbox):
    (plugin_dir / "first_found.py").write_text(textwrap.dedent(FIRST_FOUND))
    cfg = config_from_dict({**BASE, "strategy": "first_found", "strategies": {"first_found": {"patience": 5}}})
    assert cfg.strategy_options.patience == 5
    with RunStore.create(tmp_path / "runs", cfg.to_dict(), cfg.task) as store:
        _, engine = run_locally(cfg, store, sandbox)
        state, _ = store.latest_snapshot()
        events = events_of(store)
    proposals = [e for e in events if isinstance(e, ProposalEvent)]
    # the first judged in slot order (the strategy absorbs in slot order; evaluations end in any order)
    first = min(e.evaluation.id for e in events if isinstance(e, EvaluationEvent))
    later = [e for e in proposals if e.generation > 0]
    assert later and all(e.extra == {"anchor": first} for e in later), "the strategy's journal fields are kept"
    assert all(e.candidate.parent_ids[:1] == [first] for e in later), "the structural proposer mutated that parent"
    assert state["strategy"]["first"]["candidate"]["id"] == first and state["schema"] == STATE_SCHEMA
    assert state["best"]["id"] == engine.best[1]


def test_the_structural_proposer_is_told_what_the_run_knows(plugin_dir, tmp_path, sandbox, monkeypatch):
    """Every slot mutates the same parent. Told the run's known programs (``uses_known``), the
    structural proposer writes a new program for every slot; told nothing, it repeats some."""
    (plugin_dir / "first_found.py").write_text(textwrap.dedent(FIRST_FOUND))
    cfg = config_from_dict({**BASE, "task": "P04", "strategy": "first_found", "proposers": {"structural": 1.0},
                            "budgets": {"proposals": 9, "evaluations": 9, "wall_time_s": 600}})

    def duplicates(name):
        with RunStore.create(tmp_path / name, cfg.to_dict(), cfg.task) as store:
            run_locally(cfg, store, sandbox)
            events = events_of(store)
        assert len([e for e in events if isinstance(e, ProposalEvent)]) == 9
        return len([e for e in events if isinstance(e, DuplicateEvent)])

    assert duplicates("told") == 0
    monkeypatch.setattr(search.proposers.proposer_class("structural"), "uses_known", False)
    assert duplicates("blind") > 0


RAISING = '''
    """Two faulty proposers: one raises in every proposal, one cannot even be built."""
    from dataclasses import dataclass

    from search.proposers import register


    @dataclass(frozen=True)
    class FaultyOptions:
        weight: float = 0.0


    @register
    class Raising:
        name = "raising"
        Options = FaultyOptions

        def __init__(self, task, options, context):
            pass

        def propose(self, request):
            return [][request.slot + 7]          # IndexError


    @register
    class Unbuildable:
        name = "unbuildable"
        Options = FaultyOptions

        def __init__(self, task, options, context):
            raise RuntimeError("no such model " + "x" * 400)

        def propose(self, request):
            raise AssertionError("never built")
'''


def test_a_proposer_that_raises_never_ends_the_run(plugin_dir, tmp_path, sandbox):
    """Exceptions of a proposer (in propose or while it is built) become failed proposals of kind
    "proposer" with the exception's kind and message; the run goes on with the other proposers, the
    journal holds every failure, and `evolve show`'s summary counts them."""
    from evolve.store.lineage import run_summary
    (plugin_dir / "raising.py").write_text(textwrap.dedent(RAISING))
    cfg = config_from_dict({**BASE, "proposers": {"structural": 1.0, "derivation": 0.0, "raising": 1.0,
                                                  "unbuildable": 1.0},
                            "budgets": {"proposals": 9, "evaluations": 9, "wall_time_s": 600}})
    with RunStore.create(tmp_path / "runs", cfg.to_dict(), cfg.task) as store:
        reason, _ = run_locally(cfg, store, sandbox)
        events = events_of(store)
        summary = run_summary(store.path)
    assert reason == "proposal budget reached (9)"
    proposals = [e.candidate for e in events if isinstance(e, ProposalEvent)]
    faulty = [c for c in proposals if c.proposer in ("raising", "unbuildable")]
    assert faulty and all(not c.ok and c.error_kind == "proposer" for c in faulty)
    assert {c.parse_error.split(":")[0] for c in faulty} <= {"proposer raising", "proposer unbuildable"}
    raised = [c.parse_error for c in faulty if c.proposer == "raising"]
    assert raised and all("it raised IndexError: list index out of range" in e for e in raised)
    unbuilt = [c.parse_error for c in faulty if c.proposer == "unbuildable"]
    assert unbuilt and all("could not be set up: RuntimeError: no such model" in e and len(e) < 400 for e in unbuilt)
    assert any(c.ok and c.proposer == "structural" for c in proposals)
    assert summary["failed_by_kind"]["proposer"] == len(faulty) == summary["failed_proposals"]


def test_every_run_event_survives_the_journal_codec():
    verdict = Verdict(task="P04", verdict="accept", numerical=Numerical(True, 1e-12, 3, 0, 1024,
                                                                        [Rung(16, 0.1, 1e-13, True, "probe")]))
    cand = Candidate(id="g0001s02", task="P04", code="x = 1", tractable_class="pfaffian", parent_ids=["g0000s00"],
                     prompt="the user message", response="{...}")
    events = [ProposalEvent(cand, 1, 2, 1, {"tree_parent": "g0000s00"}),
              EvaluationEvent(Evaluation("g0001s02", verdict, (2.0, 1.0, 10.0), 1.5, "host:1")),
              DuplicateEvent("g0001s03", "g0001s02"), PromotionEvent("g0001s02", (2.0, 1.0, 10.0)),
              MigrationEvent(0, 1, "a", "a~3", True, None), ResetEvent(1, "stagnant", 0, "a", "a~4", ["b"]),
              BudgetEvent({"proposals": 4, "usd": 0.5}), SnapshotEvent("snap-0000000010.msgpack", 10),
              FinishEvent("proposal budget reached (4)")]
    for event in events:
        assert decode(encode(event)) == event
    assert decode({"kind": "something-new", "x": 1}) is None
    # a duplicate journaled before duplicates named their original still reads
    assert decode({"kind": "duplicate", "id": "g0000s01"}) == DuplicateEvent("g0000s01", None)


def test_judged_programs_cross_process_boundaries_as_plain_data_and_back():
    verdict = Verdict(task="P01", verdict="reject", feedback="1/3 samples failed.")
    jp = JudgedProgram(Candidate(id="a", task="P01", code="x = 1"), Evaluation("a", verdict, (1.0, 0.0)))
    assert JudgedProgram.from_dict(jp.to_dict()) == jp and jp.feedback == "1/3 samples failed."
    failed = JudgedProgram(Candidate.failed("b", "P01", "no JSON object in the answer"))
    assert failed.feedback == "Your code did not run. Error: no JSON object in the answer"
    assert "same" in JudgedProgram(Candidate(id="c", task="P01", code="x = 1"), duplicate_of="a").feedback


def test_the_config_reads_older_layouts_and_keeps_one_default_per_key():
    old = config_from_dict({"task": "P01", "proposers": {"structural": 1.0, "llm": 0.0},
                            "database": {"islands": 3}, "tree": {"exploration_c": 2.0}, "prompts": None,
                            "tune": {"params": {"database.temperature": {"low": 0.01, "high": 1.0}}}})
    assert old.strategies["islands"].islands == 3 and old.strategies["tree"].exploration_c == 2.0
    assert list(old.tune.params) == ["strategies.islands.temperature"]
    # the database's own dataclass is the section: its defaults are the run's defaults
    from search.database import DatabaseConfig
    assert config_from_dict({}).strategies["islands"] == DatabaseConfig()
    again = config_from_dict(old.to_dict())
    assert dataclasses.asdict(again) == dataclasses.asdict(old)


def test_slots_draw_their_proposer_by_weight_in_config_order():
    slots = [s for g in range(200) for s in plan_generation(g, 4, {"structural": 1.0, "llm": 3.0}, 0, 10 ** 6)]
    share = sum(s.proposer == "llm" for s in slots) / len(slots)
    assert 0.7 < share < 0.8
    assert plan_generation(5, 4, {"a": 1.0, "b": 0.0}, 0, 3) == plan_generation(5, 4, {"a": 1.0, "b": 0.0}, 0, 3)
    assert [s.proposer for s in plan_generation(5, 4, {"a": 1.0, "b": 0.0}, 0, 3)] == ["a"] * 3
