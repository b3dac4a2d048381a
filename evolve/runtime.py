"""Starting a search on Ray: the embedded local cluster or an existing one, the database actor,
the proposer and evaluator pools, and a clean shutdown whatever happens.
"""

from __future__ import annotations

import dataclasses
import logging
import os

import ray

from evolve.config import Config
from evolve.database_actor import DatabaseActor
from evolve.plan import Replay
from evolve.progress import Progress
from evolve.run_store import RunStore
from evolve.search_loop import IslandSearch
from evolve.tree_search import TreeSearch
from evolve.workers import EvaluatorWorker, ProposerWorker


def start_ray(address: str | None) -> bool:
    """Join ``address`` ("auto", "ray://...") or start an embedded cluster; True if we started it."""
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    kwargs = dict(include_dashboard=False, logging_level=logging.ERROR, configure_logging=True)
    if address:
        ray.init(address=address, **kwargs)
    else:
        ray.init(**kwargs)
    return True


def verify_options(cfg: Config) -> dict:
    from evaluators.checks.judgement import JudgeBudget
    from evaluators.ladder import LadderBudget

    e = cfg.evaluator
    return {"seed": cfg.seed, "samples": e.samples, "timeout_s": e.timeout_s, "memory_mb": e.memory_mb,
            "ladder": e.ladder, "judge": e.judge,
            "ladder_budget": LadderBudget(rung_timeout_s=e.rung_timeout_s, memory_mb=e.memory_mb,
                                          total_s=e.ladder_total_s),
            "judge_budget": JudgeBudget(memory_mb=e.memory_mb)}


def task_file_payloads(task_id: str) -> list[dict]:
    """The text of the user task file defining ``task_id`` (none for a catalogued task), shipped to
    every worker: the text the driver validated, so nodes without the file, or a file edited
    during the run, cannot give the workers another task."""
    from tasks.registry import user_task_file

    record = user_task_file(task_id)
    return [] if record is None else [record.payload()]


def drive(cfg: Config, store: RunStore, address: str | None = None, state: dict | None = None,
          replay: Replay | None = None, progress: Progress | None = None) -> str:
    """Run (or continue) the search to the end of its budget; returns why it stopped."""
    started = start_ray(address)
    actors = []
    files = task_file_payloads(cfg.task)
    try:
        db = ray.remote(num_cpus=0)(DatabaseActor).remote(dataclasses.asdict(cfg.database), cfg.seed)
        proposers = [ray.remote(num_cpus=0)(ProposerWorker).remote(cfg.task, cfg.seed, cfg.variant, cfg.llm, cfg.prompts,
                                                                   task_files=files)
                     for _ in range(cfg.ray.num_proposers)]
        evaluators = [ray.remote(num_cpus=cfg.ray.evaluator_cpus)(EvaluatorWorker).remote(cfg.task, verify_options(cfg),
                                                                                          task_files=files)
                      for _ in range(cfg.ray.num_evaluators)]
        actors = [db, *proposers, *evaluators]
        progress = progress or Progress(cfg.budgets)
        search_class = {"islands": IslandSearch, "tree": TreeSearch}[cfg.strategy]
        search = search_class(cfg, store, db, proposers, evaluators, progress)
        if state is not None:
            search.restore(state, replay or Replay())
        elif replay is not None:
            search.replay = replay
        store.set_status("running", **dataclasses.asdict(search.counters))
        store.log(f"search started on {'cluster ' + address if address else 'an embedded Ray cluster'}: "
                  f"strategy {cfg.strategy}, {cfg.ray.num_evaluators} evaluators, {cfg.ray.num_proposers} proposers")
        try:
            reason = search.run()
        except KeyboardInterrupt:
            store.set_status("interrupted", **dataclasses.asdict(search.counters))
            store.log("interrupted; `evolve resume` continues from the last snapshot")
            raise
        store.journal.append({"kind": "finish", "reason": reason})
        store.set_status("finished", reason=reason, **dataclasses.asdict(search.counters))
        store.log(f"finished: {reason}")
        progress.finish(search.counters, f"finished: {reason}")
        return reason
    finally:
        for actor in actors:
            try:
                ray.kill(actor)
            except Exception:  # noqa: BLE001 - best effort during shutdown
                pass
        if started:
            ray.shutdown()
