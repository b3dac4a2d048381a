"""Tuning a search strategy's hyperparameters with Optuna (`evolve tune`).

The search space is the config's ``tune.params``: dotted config keys mapped to
``{low, high, log}`` (a float or int range; ints when the key is an int) or ``{choices: [...]}``.
Each trial copies the config, sets the sampled values, and runs one search with the config's
budgets (:func:`evolve.engine.runtime.drive`) in its own run directory, ``<study dir>/trial-<number>``.
The space itself is parsed by :mod:`evolve.tuning.space`.

Trials run in parallel as Ray tasks (:mod:`evolve.tuning.trial`), ``tune.parallel_trials`` at a
time, through Optuna's ask-and-tell interface: the tuner asks for a trial, launches it, and
tells each result as soon as its task finishes (``ray.wait``), then asks for the next. The TPE
sampler runs with ``constant_liar`` so that trials asked while others are in flight do not all
sample the same region.

Objective (``tune.objective``): ``evaluations_to_first_accept`` (minimised) is the position of
the first accepted program among the run's evaluations ordered by program id (generation, then
slot, so arrival order within a generation does not matter); a run without one scores
``budgets.evaluations + 1``. ``best_score`` (maximised) is the best
:func:`search.database.fitness` among the judged programs.

The study lives in its Optuna storage (default ``sqlite:///<run.root>/tune.db``): a rerun adds
trials to the same study, and ``optuna-dashboard`` or ``optuna.load_study`` can inspect it. The
tuning directory (the sqlite file's directory, else ``<run.root>/tune``) holds one folder per
study, ``<study>/``, with the trials' run directories, ``trials.jsonl`` (one JSON line per
trial launched, finished, failed, pruned or found interrupted) and ``best.yaml``, the best
parameters written as a ready config after every call.

Interrupted tunings. A tuner killed mid-trial leaves its trials RUNNING in the storage. The next
call marks each such trial FAIL and enqueues its parameters again, so they are re-run from
scratch as a new trial (user attribute ``retry_of``; the partial run directory is kept). A
trial is left alone while the tuner that launched it (user attribute ``tuner``: host, pid) is
still alive on this host, so two tuners can share a study.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

import optuna
import ray
import yaml
from optuna.trial import TrialState

from evolve.config import ConfigError, config_from_dict, load_config
from evolve.engine.ray_session import check_capacity
from evolve.engine.runtime import start_ray, task_file_payloads
from evolve.store.status import read_status
from evolve.tuning.objective import DIRECTIONS
from evolve.tuning.space import apply, parse_space, suggest
from evolve.tuning.trial import RAY_RESOURCE_STEP, evaluator_share, run_trial, trial_dir_name



# -- storage and records --------------------------------------------------------------------------
def tuning_dir(storage: str, run_root: str) -> Path:
    """Where the study folders go: next to the sqlite file, else <run_root>/tune."""
    if storage.startswith("sqlite:///"):
        return Path(storage[len("sqlite:///"):]).parent
    return Path(run_root) / "tune"


class TrialLog:
    """``<study dir>/trials.jsonl``: what the tuner did, one JSON object per line, appended and
    flushed as it happens (event: launched | finished | failed | pruned | interrupted)."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, event: str, trial: int, **fields) -> None:
        line = json.dumps({"event": event, "trial": trial, "t": time.time(), **fields}, default=str)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    def read(self) -> list[dict]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _this_tuner() -> dict:
    return {"host": socket.gethostname(), "pid": os.getpid()}


def _tuner_alive(owner) -> bool:
    """True when ``owner`` ({"host", "pid"}) is another live process on this host."""
    if not isinstance(owner, dict) or owner.get("host") != socket.gethostname():
        return False
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True


def recover_interrupted(study, log_file: TrialLog, log=print) -> list[int]:
    """Mark FAIL the trials a dead tuner left RUNNING and enqueue their parameters again (they
    are re-run from scratch: a run is cheap to repeat, and a fresh trial keeps the Optuna record
    of the interrupted one honest). Returns the numbers of the trials marked failed."""
    failed = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        owner = t.user_attrs.get("tuner")
        if _tuner_alive(owner):
            log(f"trial {t.number} is running under the live tuner {owner['host']}:{owner['pid']}; left alone")
            continue
        study.tell(t.number, state=TrialState.FAIL)
        failed.append(t.number)
        if t.params:
            study.enqueue_trial(t.params, user_attrs={"retry_of": t.number})
        log_file.write("interrupted", t.number, params=t.params, run_dir=t.user_attrs.get("run_dir"),
                       action="marked FAIL; parameters enqueued for a re-run" if t.params else "marked FAIL")
        log(f"trial {t.number} was interrupted ({t.user_attrs.get('run_dir', 'no run directory')}): "
            f"marked failed, {'its parameters are re-run' if t.params else 'nothing to re-run'}")
    return failed


@dataclass
class TuneResult:
    study: str
    storage: str
    trials: int                 # trials in the study, this call's included (re-queued ones too)
    completed: int
    best_value: float | None
    best_params: dict
    best_config: Path | None
    study_dir: Path | None = None


def open_study(storage: str, study_name: str, direction: str, study_dir: Path):
    """The study in ``storage`` (created if new); a storage that cannot be used (a URL SQLAlchemy
    cannot parse, a directory that cannot be made or written) is a ConfigError naming it, before
    anything else happens."""
    import sqlalchemy.exc  # lazy: only the tuner needs it (optuna's own dependency)

    try:
        study_dir.parent.mkdir(parents=True, exist_ok=True)  # sqlite creates the file, not its directory
    except OSError as exc:
        raise ConfigError(f"Optuna storage {storage!r} cannot be used: cannot create {study_dir.parent} "
                          f"({exc.strerror or exc})") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        return optuna.create_study(storage=storage, study_name=study_name, direction=direction, load_if_exists=True)
    except (sqlalchemy.exc.SQLAlchemyError, ImportError, OSError, ValueError) as exc:
        why = " ".join(str(exc).split("\n")[0].split())[:200] or type(exc).__name__
        raise ConfigError(f"Optuna storage {storage!r} cannot be used ({type(exc).__name__}: {why}); give --storage "
                          "a URL such as sqlite:///runs/tune.db in a directory you may write") from None


HEARTBEAT_S = 20.0    # how often the tuner says how its running trials are doing


def _trial_progress(number: int, study_dir: Path, launched_at: dict[int, float]) -> str:
    """One trial's progress in a few words, from its run's status.json (the engine keeps its counts current)."""
    counts = (read_status(study_dir / trial_dir_name(number)) or {}).get("counts") or {}
    seconds = time.monotonic() - launched_at.get(number, time.monotonic())
    return (f"trial {number} {seconds:.0f} s, {counts.get('proposals', 0)} proposal(s), "
            f"{counts.get('evaluations', 0)} evaluation(s)")


# -- the tuner ------------------------------------------------------------------------------------
def tune(config_path: str | Path, trials: int, storage: str | None = None, study_name: str | None = None,
         address: str | None = None, parallel: int | None = None, log=print) -> TuneResult:
    """Run ``trials`` more trials of the study (created if new), ``parallel`` at a time (default
    ``tune.parallel_trials``), and write its best config; one log line per finished trial."""
    cfg = load_config(config_path)
    if not cfg.tune.params:
        raise ConfigError(f"{config_path} has no tune.params: nothing to tune")
    parallel = cfg.tune.parallel_trials if parallel is None else parallel
    if parallel < 1:
        raise ConfigError("parallel trials must be at least 1")
    base = cfg.to_dict()
    space = parse_space(cfg.tune.params, base)
    objective = cfg.tune.objective
    storage = storage or f"sqlite:///{Path(cfg.run.root) / 'tune.db'}"
    study_name = study_name or f"{Path(config_path).stem}-{cfg.strategy}"
    study_dir = tuning_dir(storage, cfg.run.root) / study_name
    direction = DIRECTIONS[objective]
    study = open_study(storage, study_name, direction, study_dir)
    if study.direction.name.lower() != direction:
        raise ConfigError(f"study {study_name} in {storage} is {study.direction.name.lower()}d, "
                          f"but tune.objective {objective} is {direction}d")
    if not study.trials and study_dir.is_dir() and any(study_dir.glob("trial-*")):
        raise ConfigError(f"{study_dir} holds trial runs of an earlier study named {study_name} (its storage is "
                          "gone?): name another study with --study, or move that directory away")
    # seeded, and differing between calls so that a rerun does not repeat the first trials; the
    # constant liar makes trials asked while others run avoid the points those others sample
    study.sampler = optuna.samplers.TPESampler(seed=cfg.seed + len(study.trials), constant_liar=True)
    study.set_user_attr("objective", objective)
    study.set_user_attr("config", str(config_path))
    records = TrialLog(study_dir / "trials.jsonl")
    recover_interrupted(study, records, log)

    log(f"study {study_name} in {storage}: {trials} trial(s) to run, {parallel} at a time; "
        + ("starting a local Ray cluster" if address is None else f"joining the Ray cluster at {address}"))
    started_ray = start_ray(address)
    try:
        if started_ray.joined:      # a cluster without a CPU would leave every trial's evaluators pending forever
            check_capacity(RAY_RESOURCE_STEP, started_ray.describe())
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        # num_cpus=0: the task only waits on its own actors (see evolve.tuning.trial); max_retries=0:
        # a retried trial would find its run directory taken, and a crash is a failed trial anyway
        remote_trial = ray.remote(num_cpus=0, max_retries=0)(run_trial)
        payloads = task_file_payloads(cfg.task)
        pending: dict = {}
        launched_at: dict[int, float] = {}
        asked = finished = 0
        while asked < trials or pending:
            while asked < trials and len(pending) < parallel:
                asked += 1
                trial = study.ask()
                values = suggest(trial, space)
                try:
                    trial_cfg = config_from_dict(apply(base, values))
                except ConfigError as exc:
                    study.tell(trial, state=TrialState.PRUNED)
                    records.write("pruned", trial.number, params=values, error=str(exc))
                    log(f"trial {trial.number}: {values} is not a valid config, pruned: {exc}")
                    finished += 1
                    continue
                raw = trial_cfg.to_dict()  # each trial's evaluators reserve at most cpus / parallel in all
                raw["ray"]["evaluator_cpus"] = evaluator_share(cpus, parallel, trial_cfg.ray.num_evaluators,
                                                               trial_cfg.ray.evaluator_cpus)
                run_dir = study_dir / trial_dir_name(trial.number)
                trial.set_user_attr("tuner", _this_tuner())
                trial.set_user_attr("run_dir", str(run_dir))
                trial.set_user_attr("evaluator_cpus", raw["ray"]["evaluator_cpus"])
                # a user task travels as text (a cluster node need not hold the file), not as a path
                shipped = {**raw, "task_files": []} if payloads else raw
                pending[remote_trial.remote(trial.number, shipped, objective, str(study_dir), payloads)] = (trial, values)
                records.write("launched", trial.number, params=values, run_dir=str(run_dir),
                              evaluator_cpus=raw["ray"]["evaluator_cpus"])
                launched_at[trial.number] = time.monotonic()
                log(f"trial {trial.number} launched: {values} ({run_dir})")
            if not pending:
                continue
            done, _ = ray.wait(list(pending), num_returns=1, timeout=HEARTBEAT_S)
            if not done:      # a trial takes minutes: say how the running ones are doing meanwhile
                log("running: " + "; ".join(_trial_progress(t.number, study_dir, launched_at)
                                            for t, _ in pending.values()))
                continue
            (ref,) = done
            trial, values = pending.pop(ref)
            finished += 1
            try:
                out = ray.get(ref)
            except ray.exceptions.RayError as exc:
                study.tell(trial, state=TrialState.FAIL)
                error = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
                records.write("failed", trial.number, params=values, error=error)
                log(f"trial {trial.number}: {values} FAILED: {error} [{finished}/{trials}, {len(pending)} running]")
                continue
            for key in ("started", "ended", "stop_reason", "worker"):
                trial.set_user_attr(key, out[key])
            study.tell(trial, out["value"])
            records.write("finished", trial.number, params=values, **{k: v for k, v in out.items() if k != "number"})
            best = study.best_trial
            log(f"trial {trial.number}: {values} -> {objective} = {out['value']:g} "
                f"({out['ended'] - out['started']:.0f} s, {out['stop_reason']}); best so far {best.value:g} "
                f"(trial {best.number}) [{finished}/{trials}, {len(pending)} running]")
    finally:
        started_ray.close()
    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    best_path = None
    if done:
        best_path = study_dir / "best.yaml"
        best_raw = apply(base, study.best_params)
        config_from_dict(best_raw)  # the written file must load
        header = (f"# Best of {len(done)} trials of study {study_name} ({storage}); {objective} = "
                  f"{study.best_value:g}\n# tuned: {study.best_params}\n")
        tmp = best_path.with_suffix(".yaml.tmp")
        tmp.write_text(header + yaml.safe_dump(best_raw, sort_keys=False), encoding="utf-8")
        tmp.replace(best_path)
    return TuneResult(study_name, storage, len(study.trials), len(done), study.best_value if done else None,
                      study.best_params if done else {}, best_path, study_dir)
