"""One tuning trial as a Ray task, and how much CPU its evaluators may reserve.

A trial is one search run (:func:`evolve.engine.runtime.drive`) with the trial's config, in its own run
directory ``<study dir>/trial-<number>``, scored by the tuning objective from the run's journal.
:func:`run_trial` runs inside a Ray worker: the Ray session is already up there, so ``drive``
joins it and starts the trial's own database, proposer and evaluator actors beside those of the
other trials in flight.

Resources. The trial task itself declares ``num_cpus=0``: it only waits on its actors, and a
CPU reserved by a waiting task is a CPU no evaluator can use. Its evaluators reserve
``ray.evaluator_cpus`` each, and that reservation is what can deadlock: with 2 CPUs, two trials
of two 1-CPU evaluators would each get one evaluator placed and wait forever on the other (a
generation round-robins over all its evaluators). :func:`evaluator_share` therefore lowers each
evaluator's reservation so that the evaluators of all ``parallel`` trials fit in the cluster
at once. Reservations are bookkeeping, not limits: evaluators of concurrent trials then share
the cores, which slows trials down but changes no evaluation count (the objectives count
evaluations or score programs; only ``budgets.wall_time_s`` is sensitive to the sharing).
"""

from __future__ import annotations

import io
import math
import os
import socket
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from evolve.config import config_from_dict
from evolve.engine.progress import Progress
from evolve.engine.runtime import drive
from evolve.store.run_store import RunStore
from evolve.store.run_view import read_run
from evolve.tuning.objective import objective_value
from tasks.registry import register_task_payloads

RAY_RESOURCE_STEP = 1e-4    # Ray rounds fractional resource requests to this granularity


@dataclass
class TrialOutcome:
    """What a finished trial task returns (a plain dict crosses the Ray boundary)."""

    number: int
    value: float              # the tuning objective of the trial's run
    run_dir: str
    stop_reason: str          # why the run stopped (budget, accepted, ...)
    started: float            # time.time() when the task started running, seconds since the epoch
    ended: float              # time.time() when it returned
    evaluator_cpus: float     # the CPUs each of its evaluators reserved
    worker: str               # host:pid of the process that ran it


def trial_dir_name(number: int) -> str:
    return f"trial-{number:04d}"


def evaluator_share(cluster_cpus: float, parallel: int, num_evaluators: int, evaluator_cpus: float) -> float:
    """CPUs one evaluator of a trial reserves: the configured value, lowered (to Ray's 1e-4 grain)
    so that ``parallel`` trials of ``num_evaluators`` evaluators all fit in ``cluster_cpus``."""
    if parallel < 1 or num_evaluators < 1 or cluster_cpus <= 0:
        raise ValueError("parallel, num_evaluators and cluster_cpus must be positive")
    fair = cluster_cpus / (parallel * num_evaluators)
    share = min(evaluator_cpus, math.floor(fair / RAY_RESOURCE_STEP) * RAY_RESOURCE_STEP)
    return max(share, RAY_RESOURCE_STEP)


def run_trial(number: int, raw_config: dict, objective: str, study_dir: str, task_files: list | tuple = ()) -> dict:
    """Run trial ``number``'s search to the end of its budgets; a :class:`TrialOutcome` dict.

    ``raw_config`` is the validated trial config (sampled values set, evaluator reservation
    already fitted); ``task_files`` the user task files as :meth:`tasks.registry.TaskFile.payload`
    dicts (their text, so the worker's node needs no copy). Raises whatever the run raises; the
    tuner records the trial as failed.
    """
    started = time.time()
    register_task_payloads(task_files)
    cfg = config_from_dict(raw_config)
    store = RunStore.create(Path(study_dir), cfg.to_dict(), cfg.task, run_id=trial_dir_name(number))
    try:
        # the run's own progress line is not shown: the tuner prints one line per finished trial
        reason = drive(cfg, store, progress=Progress(cfg.budgets, stream=io.StringIO()))
    finally:
        store.close()
    judged = [j.evaluation for j in read_run(store.path).judged]
    value = objective_value(judged, objective, cfg.budgets.evaluations)
    return asdict(TrialOutcome(number, value, str(store.path), reason, started, time.time(),
                               cfg.ray.evaluator_cpus, f"{socket.gethostname()}:{os.getpid()}"))
