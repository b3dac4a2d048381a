"""The islands search on Ray: runs end to end, spreads work over workers, survives SIGKILL,
and a resumed run reaches the same population as an uninterrupted one."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from evolve.config import config_from_dict
from evolve.store.journal import read_journal
from evolve.engine.engine import STATE_SCHEMA
from evolve.engine.plan import Replay
from evolve.engine.progress import Progress
from evolve.store.run_store import RunStore, read_executor_rates
from run_population import population

ray = pytest.importorskip("ray")

# Ray workers inherit the environment at ray.init: the scripted provider's key must be set before.
os.environ.setdefault("SCRIPTED_TEST_KEY", "sk-scripted-test")

BASE = {
    "task": "P01",
    "seed": 3,
    "budgets": {"proposals": 8, "evaluations": 8, "wall_time_s": 600},
    "evaluator": {"samples": 1, "ladder_total_s": 10, "ladder_max_n": 1000, "rung_timeout_s": 5, "judge": False},
    "database": {"islands": 2, "migration_interval": 4},
    "ray": {"num_evaluators": 2, "num_proposers": 1, "batch_size": 4, "evaluator_cpus": 0.5},
}


@pytest.fixture(scope="module")
def ray_cluster(ray_session):
    """The session's Ray (tests/conftest.py: one ray.init per worker, not one per file); its address."""
    return ray.get_runtime_context().gcs_address


def run(raw: dict, root: Path, **kw) -> RunStore:
    from evolve.engine.runtime import drive

    cfg = config_from_dict(raw)
    store = RunStore.create(root, cfg.to_dict(), cfg.task)
    drive(cfg, store, progress=Progress(cfg.budgets, stream=open(os.devnull, "w")), **kw)
    return store


def records(store_path: Path, kind: str) -> list[dict]:
    return [r for r in read_journal(Path(store_path) / "journal.msgpack").records if r["kind"] == kind]


@pytest.fixture(scope="module")
def clean_run(ray_cluster, tmp_path_factory) -> RunStore:
    """One uninterrupted run of BASE: the launch test reads it, the SIGKILL test compares its resumed
    run with it (the same seed and config; one launch instead of two)."""
    return run(BASE, tmp_path_factory.mktemp("clean"))


def test_launch_finds_an_accepted_program_and_spreads_work(clean_run):
    store = clean_run
    evals = records(store.path, "evaluation")
    assert len(records(store.path, "proposal")) == 8
    assert any(r["verdict"]["verdict"] == "accept" for r in evals)
    assert len({r["worker"] for r in evals}) == 2, "both evaluator actors did work"
    assert (store.path / "best" / "program.py").exists() and (store.path / "snapshots").is_dir()
    assert read_executor_rates(store.path) is not None   # the oracle's executor rates its evaluators used
    ids = [r["id"] for r in evals]
    assert len(ids) == len(set(ids))
    status = yaml.safe_load((store.path / "status.json").read_text())
    assert status["state"] == "finished"


def test_sigkill_then_resume_loses_and_repeats_nothing(ray_cluster, clean_run, tmp_path):
    raw = {**BASE, "run": {"root": str(tmp_path / "killed")}}
    cfg_path = tmp_path / "cfg.yaml"
    cfg_path.write_text(yaml.safe_dump(raw))
    proc = subprocess.Popen([sys.executable, "-m", "evolve.cli", "launch", str(cfg_path), "--address", ray_cluster],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    journal = None
    deadline = time.monotonic() + 240
    # kill at a random point after the first evaluation has been journaled (the structural proposer's
    # duplicates can leave a run with fewer evaluations than the target: stop waiting when it ends)
    target = 1 + int.from_bytes(os.urandom(1), "big") % 4
    while time.monotonic() < deadline and proc.poll() is None:
        runs = list((tmp_path / "killed").glob("*/journal.msgpack"))
        if runs:
            journal = runs[0]
            if len([r for r in read_journal(journal).records if r["kind"] == "evaluation"]) >= target:
                break
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    journal = next(iter((tmp_path / "killed").glob("*/journal.msgpack")), journal)
    assert journal is not None
    before = {r["id"] for r in records(journal.parent, "evaluation")}
    assert before

    from evolve.engine.runtime import drive

    store = RunStore.open(journal.parent)
    cfg = config_from_dict(store.config)
    snap = store.latest_snapshot()
    state, covered = snap if snap is not None else (None, 0)
    replay = Replay.from_records(read_journal(journal).records, covered)
    drive(cfg, store, state=state, replay=replay, progress=Progress(cfg.budgets, stream=open(os.devnull, "w")))
    evals = records(journal.parent, "evaluation")
    ids = [r["id"] for r in evals]
    assert len(ids) == len(set(ids)), "a program was judged twice"
    assert before <= set(ids), "a judged program was lost"
    assert len(records(journal.parent, "proposal")) == 8  # the budget was completed, not exceeded
    # same seed, never interrupted: the same population
    assert population(journal.parent, clean_run.path) == population(clean_run.path, journal.parent)


# -m slow (26-57 s, a Ray run of its own): the default run checks the same on tests/test_report.py's LLM
# islands run (test_the_islands_run_parses_judges_prices_and_names_parents, and the report's model and
# negative-prompting tests on it)
@pytest.mark.slow
def test_scripted_llm_islands_run_with_negative_prompting(ray_cluster, tmp_path):
    from doubles.scripted_server import Reply, Rule, ScriptedServer

    fixtures = Path(__file__).parent / "fixtures" / "candidates"
    import json

    good = json.dumps({"tractable_class": "transfer_matrix", "complexity_O": "O(n)", "confidence": 0.9,
                       "justification": "Independent bond variables.", "code": (fixtures / "p01_correct.py").read_text()})
    wrong = json.dumps({"tractable_class": "transfer_matrix", "complexity_O": "O(n)", "confidence": 0.9,
                        "justification": "guess", "code": "def Z_efficient(params, n):\n    return 2.0 ** n\n"})
    rules = [Rule(r"[\s\S]*", [Reply(wrong), Reply("this is not JSON at all"), Reply(good)], repeat_last=True)]
    with ScriptedServer(rules) as server:
        raw = {**BASE, "proposers": {"structural": 0.0, "llm": 1.0},
               "llm": {"models": [{"name": "openai/scripted", "api_base": server.base_url, "api_key_env": "SCRIPTED_TEST_KEY",
                                   "input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}], "retries": 1},
               "prompts": {"negative": {"enabled": True, "start_after_accepted": 1, "max_items": 4}}}
        store = run(raw, tmp_path)
    props = records(store.path, "proposal")
    assert len(props) == 8
    assert all(p["candidate"]["proposer"] == "llm" and p["candidate"]["prompt"] for p in props)
    assert any(p["candidate"]["response"] == "this is not JSON at all" and p["candidate"]["parse_error"] for p in props)
    verdicts = {r["id"]: r["verdict"]["verdict"] for r in records(store.path, "evaluation")}
    assert "accept" in verdicts.values() and "reject" in verdicts.values()
    assert any(p["candidate"]["prompt_meta"].get("negative") for p in props), "negative prompting was used"
    edges = [(pid, p["candidate"]["id"]) for p in props for pid in p["candidate"]["parent_ids"][:1]]
    assert edges, "later generations name their parents"
    assert sum(p["candidate"]["cost_usd"] for p in props) > 0


@pytest.mark.parametrize("strategy", ["islands", pytest.param("tree", marks=pytest.mark.slow)])  # tree: -m slow
def test_a_run_written_before_the_engine_split_resumes(ray_cluster, tmp_path, strategy, capsys):
    """tests/fixtures/legacy_runs: finished runs of the code before evolve/engine existed (commit
    a7d685f), whose snapshots hold the whole search in the old database-actor layout."""
    import shutil

    from evolve import cli

    run_dir = tmp_path / strategy
    shutil.copytree(Path(__file__).parent / "fixtures" / "legacy_runs" / strategy, run_dir)
    before = {r["id"] for r in records(run_dir, "evaluation")}
    # two more proposals, not a whole generation of four: the old config has no ladder_max_n, so each
    # evaluation climbs P01's ladder for up to its 10 s budget, and two run at once on the two evaluators
    assert cli.main(["resume", str(run_dir), "--extra-proposals", "2", "--address", ray_cluster]) == 0
    assert "created before runs recorded their config's identity" in capsys.readouterr().err
    (resume,) = records(run_dir, "resume")
    assert resume["config_sha256"] and resume["extra"] == {"proposals": 2, "evaluations": 2}
    ids = [r["id"] for r in records(run_dir, "evaluation")]
    assert len(ids) == len(set(ids)) and before <= set(ids)
    assert len(records(run_dir, "proposal")) == 10  # 8 before, 2 more: nothing repeated
    with RunStore.open(run_dir) as store:
        state, _ = store.latest_snapshot()
    assert state["schema"] == STATE_SCHEMA and state["counters"]["proposals"] == 10
    from search.database import normalised_hash

    codes = {r["candidate"]["id"]: r["candidate"]["code"] for r in records(run_dir, "proposal")}
    assert {normalised_hash(codes[i]) for i in before} <= set(state["seen"]), \
        "the old run's programs still deduplicate new proposals"
