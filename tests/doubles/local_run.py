"""A search run in this process: the real engine, config, run store, proposers (litellm to a
scripted server) and verifier, with in-process workers instead of Ray actors. Tests and
benchmarks that need many proposals use it; `evolve launch` (Ray) is tested separately."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from evolve.config import config_from_dict
from evolve.engine.engine import Engine
from evolve.engine.plan import Replay
from evolve.engine.pools import LocalPool
from evolve.engine.preflight import check_models
from evolve.engine.progress import Progress
from evolve.engine.runtime import engine_settings, make_strategy, proposer_context
from evolve.engine.evaluator_worker import EvaluatorWorker
from evolve.engine.proposer_worker import ProposerWorker
from evolve.store.journal import read_journal
from evolve.store.run_store import RunStore


@dataclass
class LocalRun:
    path: Path
    engine: Engine
    reason: str


def local_run(raw: dict, root: Path, sandbox=None, evaluator=None, resume: Path | None = None,
              progress_stream=None) -> LocalRun:
    """Run the config ``raw`` to its end in a new run directory under ``root`` (or continue the run
    at ``resume`` from its snapshot and journal, as `evolve resume` does); the progress lines go to
    ``progress_stream`` (default: nowhere)."""
    cfg = config_from_dict(raw)
    if resume is None:
        store = RunStore.create(root, cfg.to_dict(), cfg.task)
        state, replay = None, None
    else:
        store = RunStore.open(resume)
        snap = store.latest_snapshot()
        state, covered = snap if snap is not None else (None, 0)
        replay = Replay.from_records(read_journal(store.path / "journal.msgpack").records, covered)
    sections = {name: options for name, options in cfg.proposers.items() if options.weight > 0}
    proposer = ProposerWorker(cfg.task, sections, proposer_context(cfg))
    evaluator = evaluator or EvaluatorWorker(cfg.task, cfg.evaluator.verify_options(cfg.seed), sandbox=sandbox)
    strategy, _ = make_strategy(cfg, remote=False)
    engine = Engine(engine_settings(cfg), strategy, LocalPool(proposer, evaluator), store,
                    Progress(cfg.budgets, stream=progress_stream or io.StringIO()), replay)
    try:
        if state is not None:
            engine.restore(state)
        check_models(cfg, store)
        reason = engine.run()
        store.set_status("finished", reason=reason)
    finally:
        store.close()
    return LocalRun(store.path, engine, reason)
