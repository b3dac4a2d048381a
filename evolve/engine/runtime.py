"""Starting a search on Ray: the local cluster or an existing one (:mod:`evolve.engine.ray_session`),
the proposer and evaluator actors (replaced when they die, :mod:`evolve.engine.ray_pool`), the
strategy (its population in an actor when it has one), the engine, and a clean shutdown whatever
happens: status.json says ``finished``, ``interrupted`` (Ctrl-C, SIGTERM) or ``failed`` with the
reason (any exception), and the actors are killed.
"""

from __future__ import annotations

import dataclasses
import re
import secrets

import ray
from ray.exceptions import RayActorError

from evolve.config import Config
from evolve.engine.dispatch import PoolError
from evolve.engine.engine import Engine, EngineSettings
from evolve.engine.legacy import upgrade_state
from evolve.engine.plan import Replay
from evolve.engine.preflight import RunFailed, check_models, check_proposals
from evolve.engine.progress import Progress
from evolve.engine.ray_pool import ActorProxy, ActorSet, RayPool
from evolve.engine.ray_session import RaySession
from evolve.engine.termination import by_sigterm
from evolve.engine.evaluator_worker import EvaluatorWorker
from evolve.engine.proposer_worker import ProposerWorker
from evolve.store.events import FinishEvent
from evolve.store.failures import one_line
from evolve.store.run_store import RunStore
from search.proposers import ProposerContext
from search.strategies import StrategyContext, strategy_class
from tasks.registry import get_task, user_task_file


def start_ray(address: str | None) -> RaySession:
    """Join ``address`` ("auto", "host:port", "ray://...") or start a local cluster that ends with this
    process (see :class:`RaySession`); ``close()`` the session when done. When Ray is already up here,
    the session is a no-op (false)."""
    return RaySession(address).open()


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
                          budgets=cfg.budgets, weights=cfg.weights(), negative=cfg.prompts.negative, llm=cfg.llm,
                          overlap=cfg.run.overlap_generations, lattice=get_task(cfg.task).square_lattice)


def make_strategy(cfg: Config, remote: bool, name: str | None = None):
    """The configured strategy; with ``remote``, a population that lives in one Ray actor (named
    ``name`` when given, so that `ray list actors` shows whose it is)."""
    context = StrategyContext(seed=cfg.seed, batch_size=cfg.ray.batch_size)
    cls = strategy_class(cfg.strategy)
    if remote and cls.Population is not None:
        actor = ray.remote(num_cpus=0)(cls.Population).options(name=name).remote(cfg.strategy_options, cfg.seed)
        return cls(cfg.strategy_options, context, population=ActorProxy(actor)), [actor]
    return cls(cfg.strategy_options, context), []


def drive(cfg: Config, store: RunStore, address: str | None = None, state: dict | None = None,
          replay: Replay | None = None, progress: Progress | None = None, cluster: str | None = None) -> str:
    """Run (or continue, from a snapshot ``state`` and the journal's ``replay``) the search to the
    end of its budget; returns why it stopped. ``address`` overrides ``ray.address``; when Ray is
    already initialised in this process it is used as it is (``cluster`` then says which it is, for
    run.log). The wall-time budget holds whatever the cluster does (:mod:`evolve.engine.dispatch`).

    Whatever ends the run is on record: ``finished`` with the budget that stopped it,
    ``interrupted`` (Ctrl-C or SIGTERM: a KeyboardInterrupt), or ``failed`` with the exception
    (which propagates). :class:`~evolve.engine.preflight.RunFailed` is raised when a model fails its
    preflight or every proposal of the run failed (the finish record then names the reason)."""
    address = address or cfg.ray.address
    with RaySession(address) as session:
        if session.sentinel is not None:
            session.watch(store.path)
        where = cluster or (session.describe() if session.joined else
                            f"the Ray cluster at {address}" if address else "a Ray cluster already up in this process")
        return _drive(cfg, store, where, state, replay, progress)


def failure_reason(exc: BaseException, run_dir) -> str:
    """One line for status.json and run.log: what went wrong, cut at a word boundary, and, when an
    actor died (the strategy's database, or evaluators that kept dying), that a resume continues."""
    if isinstance(exc, RayActorError):
        text = str(exc)
        name = re.search(r"class_name:\s*(\w+)", text)
        cause = re.search(r"The actor is dead because ([^\n]*)", text)
        what = f"the {name.group(1)} actor" if name else "a Ray actor of the run"
        why = one_line(cause.group(1), 200).rstrip(".") if cause else one_line(text.splitlines()[0] if text else "", 200)
        return (f"{what} died ({type(exc).__name__}: {why}); nothing journaled is lost: `evolve resume {run_dir}` "
                "continues the run from its last snapshot")
    if isinstance(exc, PoolError):
        return f"{one_line(str(exc), 300)}; `evolve resume {run_dir}` continues the run from its last snapshot"
    return one_line(f"{type(exc).__name__}: {exc}", 500)


def _drive(cfg, store, where, state, replay, progress) -> str:
    engine = None
    actors, sets = [], []
    files = task_file_payloads(cfg.task)

    def counters() -> dict:
        return dataclasses.asdict(engine.counters) if engine is not None else {}

    try:
        # named, so `ray list actors` (and a test that kills one) can find them: run id, then a tag of this
        # drive (two runs may share a run id in different folders), then kind, index and incarnation
        name = f"evolve:{store.run_id}:{secrets.token_hex(3)}"
        strategy, actors = make_strategy(cfg, remote=True, name=f"{name}:database")
        sections = {key: options for key, options in cfg.proposers.items() if options.weight > 0}
        proposers = ActorSet("proposer", "propose", lambda i, k: ray.remote(num_cpus=0)(ProposerWorker).options(
            name=f"{name}:proposer:{i}.{k}").remote(cfg.task, sections, proposer_context(cfg), files),
            cfg.ray.num_proposers, log=store.log)
        sets.append(proposers)
        # learned once, recorded in the run directory, the same for every evaluator and every resume
        options = cfg.evaluator.verify_options(cfg.seed, store.executor_rates())
        evaluators = ActorSet("evaluator", "evaluate", lambda i, k: ray.remote(num_cpus=cfg.ray.evaluator_cpus)(
            EvaluatorWorker).options(name=f"{name}:evaluator:{i}.{k}").remote(cfg.task, options, files),
            cfg.ray.num_evaluators, log=store.log)
        sets.append(evaluators)
        pool = RayPool(proposers, evaluators)
        progress = progress or Progress(cfg.budgets)
        engine = Engine(engine_settings(cfg), strategy, pool, store, progress, replay)
        if state is not None:
            engine.restore(upgrade_state(state, cfg.strategy))
        store.set_status("running", **counters())
        store.log(f"search started on {where}: "
                  f"strategy {cfg.strategy}, {cfg.ray.num_evaluators} evaluators, {cfg.ray.num_proposers} proposers")
        if engine.stop_reason() is None:      # a resumed run with nothing left to do calls no model
            check_models(cfg, store)
        reason = engine.run()
        if engine.fatal:
            raise RunFailed(engine.fatal)
        check_proposals(store)
    except RunFailed as exc:
        _best_effort(store.record, FinishEvent(f"failed: {exc}"))
        _best_effort(store.set_status, "failed", reason=str(exc), **counters())
        _best_effort(store.log, f"failed: {exc}")
        if engine is not None:
            progress.finish(engine.counters, f"failed: {exc}")
        raise
    except KeyboardInterrupt as exc:      # Ctrl-C, or SIGTERM (evolve.engine.termination.Terminated)
        why = "SIGTERM" if by_sigterm(exc) else "interrupted (Ctrl-C)"
        _best_effort(store.set_status, "interrupted", reason=why, **counters())
        _best_effort(store.log, f"{why}; `evolve resume {store.path}` continues from the last snapshot")
        raise
    except BaseException as exc:
        why = failure_reason(exc, store.path)
        _best_effort(store.set_status, "failed", reason=why, **counters())
        _best_effort(store.log, f"failed: {why}")
        raise
    finally:
        for actor in [*actors, *(a for group in sets for a in group.actors)]:
            try:
                ray.kill(actor)
            except Exception:  # noqa: BLE001 - best effort during shutdown
                pass
    store.record(FinishEvent(reason))
    store.set_status("finished", reason=reason, **counters())
    store.log(f"finished: {reason}")
    progress.finish(engine.counters, f"finished: {reason}")
    return reason


def _best_effort(fn, *args, **kwargs) -> None:
    """Record how a run ended, if the run directory still lets us (a full disk must not hide the real error)."""
    try:
        fn(*args, **kwargs)
    except Exception:  # noqa: BLE001 - the exception being handled is the one to report
        pass
