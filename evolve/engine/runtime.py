"""Starting a search on Ray: the embedded local cluster or an existing one, the proposer and
evaluator actors, the strategy (its population in an actor when it has one), the engine, and a
clean shutdown whatever happens.
"""

from __future__ import annotations

import dataclasses
import logging
import os

import ray

from evolve.config import Config
from evolve.engine.engine import Engine, EngineSettings
from evolve.engine.legacy import upgrade_state
from evolve.engine.plan import Replay
from evolve.engine.pools import ActorProxy, RayPool
from evolve.engine.preflight import RunFailed, check_models, check_proposals
from evolve.engine.progress import Progress
from evolve.engine.workers import EvaluatorWorker, ProposerWorker
from evolve.store.events import FinishEvent
from evolve.store.run_store import RunStore
from search.proposers import ProposerContext
from search.strategies import StrategyContext, strategy_class
from search.strategies.islands import IslandDatabase, IslandsStrategy
from tasks.registry import user_task_file


def start_ray(address: str | None) -> bool:
    """Join ``address`` ("auto", "host:port", "ray://...") or start an embedded cluster; True if we started it."""
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    kwargs = dict(include_dashboard=False, logging_level=logging.ERROR, configure_logging=True)
    if address:
        ray.init(address=address, **kwargs)
    else:
        ray.init(**kwargs)
    return True


def task_file_payloads(task_id: str) -> list[dict]:
    """The text of the user task file defining ``task_id`` (none for a catalogued task), shipped to
    every worker: the text the driver validated, so nodes without the file, or a file edited
    during the run, cannot give the workers another task."""
    record = user_task_file(task_id)
    return [] if record is None else [record.payload()]


def proposer_context(cfg: Config) -> ProposerContext:
    return ProposerContext(seed=cfg.seed, variant=cfg.variant, llm=cfg.llm, prompts=cfg.prompts)


def engine_settings(cfg: Config) -> EngineSettings:
    return EngineSettings(seed=cfg.seed, batch_size=cfg.ray.batch_size, checkpoint_interval=cfg.run.checkpoint_interval,
                          budgets=cfg.budgets, weights=cfg.weights(), negative=cfg.prompts.negative, llm=cfg.llm)


def make_strategy(cfg: Config, remote: bool):
    """The configured strategy; with ``remote``, a population that lives in one Ray actor."""
    context = StrategyContext(seed=cfg.seed, batch_size=cfg.ray.batch_size)
    cls = strategy_class(cfg.strategy)
    if cls is IslandsStrategy and remote:
        actor = ray.remote(num_cpus=0)(IslandDatabase).remote(cfg.strategy_options, cfg.seed)
        return IslandsStrategy(cfg.strategy_options, context, database=ActorProxy(actor)), [actor]
    return cls(cfg.strategy_options, context), []


def drive(cfg: Config, store: RunStore, address: str | None = None, state: dict | None = None,
          replay: Replay | None = None, progress: Progress | None = None) -> str:
    """Run (or continue, from a snapshot ``state`` and the journal's ``replay``) the search to the
    end of its budget; returns why it stopped. ``address`` overrides ``ray.address``. Raises
    :class:`~evolve.engine.preflight.RunFailed` when a model fails its preflight or every proposal
    of the run failed (the run directory then says so: status ``failed`` and the finish reason)."""
    address = address or cfg.ray.address
    started = start_ray(address)
    actors = []
    files = task_file_payloads(cfg.task)
    try:
        strategy, actors = make_strategy(cfg, remote=True)
        sections = {name: options for name, options in cfg.proposers.items() if options.weight > 0}
        proposers = [ray.remote(num_cpus=0)(ProposerWorker).remote(cfg.task, sections, proposer_context(cfg), files)
                     for _ in range(cfg.ray.num_proposers)]
        options = cfg.evaluator.verify_options(cfg.seed)
        evaluators = [ray.remote(num_cpus=cfg.ray.evaluator_cpus)(EvaluatorWorker).remote(cfg.task, options, files)
                      for _ in range(cfg.ray.num_evaluators)]
        actors += [*proposers, *evaluators]
        progress = progress or Progress(cfg.budgets)
        engine = Engine(engine_settings(cfg), strategy, RayPool(proposers, evaluators), store, progress, replay)
        if state is not None:
            engine.restore(upgrade_state(state, cfg.strategy))
        store.set_status("running", **dataclasses.asdict(engine.counters))
        store.log(f"search started on {'cluster ' + address if address else 'an embedded Ray cluster'}: "
                  f"strategy {cfg.strategy}, {cfg.ray.num_evaluators} evaluators, {cfg.ray.num_proposers} proposers")
        try:
            if engine.stop_reason() is None:      # a resumed run with nothing left to do calls no model
                check_models(cfg, store)
            reason = engine.run()
            if engine.fatal:
                raise RunFailed(engine.fatal)
            check_proposals(store)
        except RunFailed as exc:
            store.record(FinishEvent(f"failed: {exc}"))
            store.set_status("failed", reason=str(exc), **dataclasses.asdict(engine.counters))
            store.log(f"failed: {exc}")
            progress.finish(engine.counters, f"failed: {exc}")
            raise
        except KeyboardInterrupt:
            store.set_status("interrupted", **dataclasses.asdict(engine.counters))
            store.log("interrupted; `evolve resume` continues from the last snapshot")
            raise
        store.record(FinishEvent(reason))
        store.set_status("finished", reason=reason, **dataclasses.asdict(engine.counters))
        store.log(f"finished: {reason}")
        progress.finish(engine.counters, f"finished: {reason}")
        return reason
    finally:
        for actor in actors:
            try:
                ray.kill(actor)
            except Exception:  # noqa: BLE001 - best effort during shutdown
                pass
        if started:
            ray.shutdown()
