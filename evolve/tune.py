"""Tuning a search strategy's hyperparameters with Optuna (`evolve tune`).

The search space is the config's ``tune.params``: dotted config keys mapped to
``{low, high, log}`` (a float or int range; ints when the key is an int) or ``{choices: [...]}``.
Each trial copies the config, sets the sampled values, and runs one search with the config's
budgets (:func:`evolve.runtime.drive`) in its own run directory under the tuning directory.
Trials run one after another on one Ray session (each trial already spreads its evaluations
over the evaluator actors; concurrent trials would compete for the same CPUs).

Objective (``tune.objective``): ``evaluations_to_first_accept`` (minimised) is the position of
the first accepted program among the run's evaluations ordered by program id (generation, then
slot, so arrival order within a generation does not matter); a run without one scores
``budgets.evaluations + 1``. ``best_score`` (maximised) is the best
:func:`search.database.fitness` among the judged programs.

The study lives in its Optuna storage (default ``sqlite:///<run.root>/tune.db``): a rerun adds
trials to the same study, and ``optuna-dashboard`` or ``optuna.load_study`` can inspect it. After
every call the best parameters are written as a ready config, ``<study>-best.yaml``, next to
the sqlite file.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

FROZEN = ("task", "tune", "run", "seed")   # sections and keys a trial may not change
DIRECTIONS = {"evaluations_to_first_accept": "minimize", "best_score": "maximize"}


# -- the search space -----------------------------------------------------------------------------
def parse_space(params: dict, config: dict) -> dict[str, dict]:
    """Validated search space: name -> {"choices": [...]} or {"low", "high", "log", "int"}."""
    space = {}
    for name, spec in params.items():
        if not isinstance(name, str) or name.split(".")[0] in FROZEN:
            raise ValueError(f"`{name}` cannot be tuned")
        current = _get(config, name)
        if not isinstance(spec, dict):
            raise ValueError(f"`{name}` must map to {{low, high, log}} or {{choices: [...]}}")
        unknown = set(spec) - {"low", "high", "log", "choices"}
        if unknown:
            raise ValueError(f"`{name}` has unknown keys {sorted(unknown)} (known: low, high, log, choices)")
        if "choices" in spec:
            if set(spec) != {"choices"} or not isinstance(spec["choices"], list) or not spec["choices"]:
                raise ValueError(f"`{name}`: choices is a non-empty list and comes alone")
            space[name] = {"choices": list(spec["choices"])}
            continue
        low, high, log = spec.get("low"), spec.get("high"), spec.get("log", False)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)) or low >= high:
            raise ValueError(f"`{name}` needs numbers low < high")
        if not isinstance(log, bool) or (log and low <= 0):
            raise ValueError(f"`{name}`: log is true or false, and a log range needs low > 0")
        is_int = isinstance(current, int) and not isinstance(current, bool)
        if is_int and not (float(low).is_integer() and float(high).is_integer()):
            raise ValueError(f"`{name}` is an integer key: low and high must be integers")
        space[name] = {"low": low, "high": high, "log": log, "int": is_int}
    return space


def _get(config: dict, name: str):
    node = config
    for part in name.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ValueError(f"`{name}` is not a config key")
        node = node[part]
    if isinstance(node, dict):
        raise ValueError(f"`{name}` is a section, not a key")
    return node


def apply(config: dict, values: dict) -> dict:
    """A deep copy of ``config`` with the dotted keys of ``values`` set."""
    out = copy.deepcopy(config)
    for name, value in values.items():
        node = out
        *path, last = name.split(".")
        for part in path:
            node = node[part]
        node[last] = value
    return out


def suggest(trial, space: dict[str, dict]) -> dict:
    values = {}
    for name, spec in space.items():
        if "choices" in spec:
            values[name] = trial.suggest_categorical(name, spec["choices"])
        elif spec["int"]:
            values[name] = trial.suggest_int(name, int(spec["low"]), int(spec["high"]), log=spec["log"])
        else:
            values[name] = trial.suggest_float(name, float(spec["low"]), float(spec["high"]), log=spec["log"])
    return values


# -- the objective --------------------------------------------------------------------------------
def objective_value(records: list[dict], objective: str, evaluation_budget: int) -> float:
    evals = sorted((r for r in records if r.get("kind") == "evaluation"), key=lambda r: r["id"])
    if objective == "evaluations_to_first_accept":
        for i, rec in enumerate(evals):
            if (rec.get("verdict") or {}).get("verdict") == "accept":
                return float(i + 1)
        return float(evaluation_budget + 1)
    if objective == "best_score":
        from search.database import fitness

        return max((fitness(r["score"]) for r in evals), default=0.0)
    raise ValueError(f"unknown objective {objective!r}")


# -- storage --------------------------------------------------------------------------------------
def tuning_dir(storage: str, run_root: str) -> Path:
    """Where trial runs and the best config go: next to the sqlite file, else <run_root>/tune."""
    if storage.startswith("sqlite:///"):
        return Path(storage[len("sqlite:///"):]).parent
    return Path(run_root) / "tune"


@dataclass
class TuneResult:
    study: str
    storage: str
    trials: int                 # trials in the study, this call's included
    completed: int
    best_value: float | None
    best_params: dict
    best_config: Path | None


def tune(config_path: str | Path, trials: int, storage: str | None = None, study_name: str | None = None,
         address: str | None = None, log=print) -> TuneResult:
    """Add ``trials`` trials to the study (created if new) and write its best config."""
    import optuna
    import ray

    from evolve.config import ConfigError, config_from_dict, load_config
    from evolve.journal import read_journal
    from evolve.progress import Progress
    from evolve.run_store import RunStore
    from evolve.runtime import drive, start_ray

    cfg = load_config(config_path)
    if not cfg.tune.params:
        raise ConfigError(f"{config_path} has no tune.params: nothing to tune")
    base = cfg.to_dict()
    space = parse_space(cfg.tune.params, base)
    storage = storage or f"sqlite:///{Path(cfg.run.root) / 'tune.db'}"
    study_name = study_name or f"{Path(config_path).stem}-{cfg.strategy}"
    root = tuning_dir(storage, cfg.run.root)
    root.mkdir(parents=True, exist_ok=True)
    direction = DIRECTIONS[cfg.tune.objective]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage=storage, study_name=study_name, direction=direction, load_if_exists=True)
    if study.direction.name.lower() != direction:
        raise ConfigError(f"study {study_name} in {storage} is {study.direction.name.lower()}d, "
                          f"but tune.objective {cfg.tune.objective} is {direction}d")
    # a seeded sampler that differs between calls, so a rerun does not repeat the first trials
    study.sampler = optuna.samplers.TPESampler(seed=cfg.seed + len(study.trials))
    study.set_user_attr("objective", cfg.tune.objective)
    study.set_user_attr("config", str(config_path))

    def objective(trial) -> float:
        values = suggest(trial, space)
        raw = apply(base, values)
        try:
            trial_cfg = config_from_dict(raw)
        except ConfigError as exc:
            raise optuna.TrialPruned(f"invalid combination: {exc}") from None
        store = RunStore.create(root / f"{study_name}-trials", trial_cfg.to_dict(), trial_cfg.task,
                                run_id=f"trial-{trial.number:04d}-{os.getpid()}")
        try:
            reason = drive(trial_cfg, store, progress=Progress(trial_cfg.budgets, stream=open(os.devnull, "w")))
        finally:
            store.close()
        value = objective_value(read_journal(store.path / "journal.msgpack").records, cfg.tune.objective,
                                trial_cfg.budgets.evaluations)
        trial.set_user_attr("run_dir", str(store.path))
        trial.set_user_attr("stop_reason", reason)
        log(f"trial {trial.number}: {values} -> {cfg.tune.objective} = {value:g} ({store.path})")
        return value

    started = start_ray(address)
    try:
        study.optimize(objective, n_trials=trials)
    finally:
        if started:
            ray.shutdown()
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    best_path = None
    if done:
        best_path = root / f"{study_name}-best.yaml"
        best_raw = apply(base, study.best_params)
        config_from_dict(best_raw)  # the written file must load
        header = (f"# Best of {len(done)} trials of study {study_name} ({storage}); {cfg.tune.objective} = "
                  f"{study.best_value:g}\n# tuned: {study.best_params}\n")
        tmp = best_path.with_suffix(".yaml.tmp")
        tmp.write_text(header + yaml.safe_dump(best_raw, sort_keys=False), encoding="utf-8")
        tmp.replace(best_path)
    return TuneResult(study_name, storage, len(study.trials), len(done), study.best_value if done else None,
                      study.best_params if done else {}, best_path)
