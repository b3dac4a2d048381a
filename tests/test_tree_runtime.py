"""The tree strategy on Ray: a tiny run on P01 with the structural proposer completes, grows a
tree (children name the node they were expanded from), and a run stopped by its budget then
resumed with a larger one judges nothing twice and ends where an uninterrupted run ends."""

import os
from pathlib import Path

import pytest

from evolve.config import config_from_dict
from evolve.store.journal import read_journal
from evolve.engine.plan import Replay
from evolve.engine.progress import Progress
from evolve.store.run_store import RunStore
from run_population import generation, last_comparable_generation, population

ray = pytest.importorskip("ray")

BASE = {
    "task": "P01",
    "seed": 5,
    "strategy": "tree",
    "tree": {"exploration_c": 1.2},
    "budgets": {"proposals": 8, "evaluations": 8, "wall_time_s": 600},
    "evaluator": {"samples": 1, "ladder_total_s": 10, "ladder_max_n": 1000, "rung_timeout_s": 5, "judge": False},
    "ray": {"num_evaluators": 2, "num_proposers": 1, "batch_size": 4, "evaluator_cpus": 0.5},
}


@pytest.fixture(scope="module")
def ray_cluster(ray_session):
    """The session's Ray (tests/conftest.py: one ray.init per worker, not one per file); its address."""
    return ray.get_runtime_context().gcs_address


@pytest.fixture(scope="module")
def clean_run(ray_cluster, tmp_path_factory):
    """The uninterrupted reference run, shared by the tests."""
    return run(BASE, tmp_path_factory.mktemp("clean"))


def quiet(cfg):
    return Progress(cfg.budgets, stream=open(os.devnull, "w"))


def run(raw: dict, root: Path) -> RunStore:
    from evolve.engine.runtime import drive

    cfg = config_from_dict(raw)
    store = RunStore.create(root, cfg.to_dict(), cfg.task)
    drive(cfg, store, progress=quiet(cfg))
    store.close()
    return store


def records(path: Path, kind: str) -> list[dict]:
    return [r for r in read_journal(Path(path) / "journal.msgpack").records if r["kind"] == kind]


def test_tree_run_completes_and_children_hang_under_judged_nodes(clean_run):
    store = clean_run
    props = records(store.path, "proposal")
    evals = records(store.path, "evaluation")
    assert len(props) == 8
    judged = {r["id"] for r in evals}
    assert len(judged) == len(evals) >= 2
    parents = [p["candidate"]["tree_parent"] for p in props]
    assert all(p is None for p in parents[:4]), "the first generation is seeded without parents"
    assert all(p in judged or p is None for p in parents[4:]), "later generations expand judged nodes or the root"
    for p in props[4:]:  # the proposer was told which program it rewrote
        if p["candidate"]["tree_parent"] is not None:
            assert p["candidate"]["parent_ids"][:1] == [p["candidate"]["tree_parent"]]
    state, _ = store.latest_snapshot()
    tree = state["strategy"]["tree"]
    assert {n["id"] for n in tree["nodes"]} == judged
    # one visit per expansion chosen: generation 1 (launched), and generations 2 and 3, selected ahead
    # (generations overlap) but not launched, the budget being spent: the snapshot holds them open
    assert tree["total_visits"] == 12
    assert [(g["number"], g["launched"]) for g in state["open"]] == [(2, False), (3, False)]
    chosen = parents[4:] + [sel["journal"]["tree_parent"] for g in state["open"] for sel in g["selections"]]
    assert tree["drafts"] == chosen.count(None)  # fresh drafts are the root's visits
    assert (store.path / "best" / "program.py").exists()


def test_budget_stop_then_resume_repeats_nothing_and_matches_an_uninterrupted_run(ray_cluster, clean_run, tmp_path):
    from evolve.engine.runtime import drive

    first = run({**BASE, "budgets": {**BASE["budgets"], "proposals": 4, "evaluations": 4}}, tmp_path / "stopped")
    before = {r["id"] for r in records(first.path, "evaluation")}
    assert before
    first.close()
    store = RunStore.open(first.path)
    cfg = config_from_dict(store.config)
    cfg.budgets.proposals += 4  # what `evolve resume --extra-proposals 4` does
    cfg.budgets.evaluations += 4
    state, covered = store.latest_snapshot()
    assert state["counters"]["generation"] == 1 and state["strategy"]["tree"]["nodes"]
    replay = Replay.from_records(read_journal(first.path / "journal.msgpack").records, covered)
    drive(cfg, store, state=state, replay=replay, progress=quiet(cfg))
    ids = [r["id"] for r in records(first.path, "evaluation")]
    assert len(ids) == len(set(ids)), "a program was judged twice"
    assert before < set(ids), "the resumed run judged new programs and lost none"
    assert len(records(first.path, "proposal")) == 8
    clean = clean_run
    assert population(first.path, clean.path) == population(clean.path, first.path)
    last = last_comparable_generation(first.path, clean.path)   # the clock can change later choices
    tree_of = lambda p: sorted((c["candidate"]["id"], c["candidate"]["tree_parent"]) for c in records(p, "proposal")
                               if generation(c["candidate"]["id"]) <= last)
    assert tree_of(first.path) == tree_of(clean.path)
