"""`evolve perf search`: judged programs per minute of a fixed short search, and where an
evaluation's time goes.

The search is the one ``make run`` starts (structural proposer, islands strategy, the full
cascade: probes, ladder, judge), on P04 and one task of another shape (P01, a chain whose ladder
climbs to n = 100000), with ``workers`` evaluator processes, each next program to the free one, by the
dispatcher the Ray pool drives its actors with (:mod:`evolve.engine.dispatch`). The evaluators are started and warm (sandbox fork server up) before
the clock starts, as Ray actors are during a run; their start-up is reported on its own line.

``judged_per_minute`` is judged programs (the evaluator ran the cascade; duplicates and
unparsable proposals are not judged) per minute of search wall time, all tasks together;
``evaluator_utilisation`` the share of the evaluators' time spent judging (the rest is proposing
and waiting for a generation's slowest evaluation). The
stage breakdown sums :mod:`evaluators.profile` entries over every evaluation; stage entries do
not overlap, so their total is at most the evaluations' own wall time (the rest, ``other``, is
verify's bookkeeping between stages).
"""

from __future__ import annotations

import io
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from evolve.bench.trial import MemoryStore
from evolve.config import config_from_dict
from evolve.engine.engine import Engine
from evolve.engine.pools import ExecutorPool
from evolve.engine.progress import Progress
from evolve.engine.runtime import engine_settings, make_strategy, proposer_context
from evolve.engine.evaluator_worker import EvaluatorWorker
from evolve.engine.proposer_worker import ProposerWorker
from evolve.store.events import EvaluationEvent
from search.records import Evaluation

SEARCH_TASKS = ("P04", "P01")
PER_SIZE = ("ladder_call", "reference")   # stages summed per size


@dataclass(frozen=True)
class SearchPlan:
    """The fixed search: ``evaluations`` judged programs per task (at most), ``batch_size``
    proposals per generation, ``workers`` evaluator processes."""

    tasks: tuple[str, ...] = SEARCH_TASKS
    evaluations: int = 8
    proposals: int = 32
    batch_size: int = 4
    workers: int = 2
    seed: int = 0
    wall_time_s: float = 600.0
    overlap: bool = True       # run.overlap_generations (False: the lockstep baseline)


def measure_search(plan: SearchPlan = SearchPlan()) -> dict:
    """Run ``plan`` and return the figures (see the module doc); JSON-ready."""
    per_task, evaluations = [], []
    for task_id in plan.tasks:
        row, evs = _search_one(task_id, plan)
        per_task.append(row)
        evaluations += evs
    judged = sum(r["judged"] for r in per_task)
    wall = sum(r["search_wall_s"] for r in per_task)
    evaluation_s = sum(e.seconds for e in evaluations)
    stages = stage_summary(evaluations)
    staged = sum(s["seconds"] for s in stages.values())
    return {"plan": {"tasks": list(plan.tasks), "evaluations_per_task": plan.evaluations, "proposals_per_task":
                     plan.proposals, "batch_size": plan.batch_size, "workers": plan.workers, "seed": plan.seed,
                     "overlap": plan.overlap},
            "cpus": os.cpu_count(), "judged": judged, "search_wall_s": wall,
            "judged_per_minute": 60.0 * judged / wall if wall > 0 else 0.0,
            "tasks": per_task, "evaluation_seconds": evaluation_s,
            "mean_evaluation_s": evaluation_s / judged if judged else 0.0,
            # busy share of the evaluators: the rest is proposing and waiting at generation ends
            "evaluator_utilisation": evaluation_s / (wall * plan.workers) if wall > 0 else 0.0,
            "stages": stages, "other_s": max(0.0, evaluation_s - staged),
            "ladder_killed_at_budget_s": killed_at_budget_s(evaluations)}


def stage_summary(evaluations: list[Evaluation]) -> dict[str, dict]:
    """Stage name (with ``n=`` for per-size stages) -> {seconds, count, candidate_s}, summed over
    every evaluation's profile, largest first."""
    out: dict[str, dict] = {}
    for ev in evaluations:
        for s in getattr(ev, "profile", ()):   # (a baseline build's Evaluation has no profile)
            per_size = s.n is not None and s.stage in PER_SIZE
            key = s.stage + (f" n={s.n}" if per_size else "")
            row = out.setdefault(key, {"seconds": 0.0, "count": 0, "candidate_s": 0.0, **({"notes": {}} if per_size else {})})
            row["seconds"] += s.seconds
            row["count"] += 1
            row["candidate_s"] += s.candidate_s or 0.0
            if per_size and s.note:   # a ladder call's outcome ("time": killed at the rung budget), a reference's source
                row["notes"][s.note] = row["notes"].get(s.note, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["seconds"]))


def killed_at_budget_s(evaluations: list[Evaluation]) -> float:
    """Seconds of ladder calls that ran to the rung's time budget and were killed (the frontier)."""
    return sum(s.seconds for ev in evaluations for s in getattr(ev, "profile", ())
               if s.stage == "ladder_call" and s.note == "time")


def _search_one(task_id: str, plan: SearchPlan) -> tuple[dict, list[Evaluation]]:
    cfg = config_from_dict({"task": task_id, "seed": plan.seed, "strategy": "islands",
                            "budgets": {"proposals": plan.proposals, "evaluations": plan.evaluations,
                                        "wall_time_s": plan.wall_time_s},
                            "strategies": {"islands": {"islands": 2}},
                            "ray": {"num_evaluators": plan.workers, "batch_size": plan.batch_size},
                            "run": {"overlap_generations": plan.overlap}})
    sections = {name: options for name, options in cfg.proposers.items() if options.weight > 0}
    proposer = ProposerWorker(task_id, sections, proposer_context(cfg))
    started = time.perf_counter()
    with EvaluatorProcesses(task_id, cfg.evaluator.verify_options(cfg.seed), plan.workers, proposer) as pool:
        ready_s, sandbox_start_s = time.perf_counter() - started, pool.sandbox_start_s
        strategy, _ = make_strategy(cfg, remote=False)
        store = MemoryStore()
        engine = Engine(engine_settings(cfg), strategy, pool, store, Progress(cfg.budgets, stream=io.StringIO()))
        started = time.perf_counter()
        stopped = engine.run()
        wall = time.perf_counter() - started
    evs = [e.evaluation for e in store.events if isinstance(e, EvaluationEvent)]
    return ({"task": task_id, "judged": len(evs), "proposals": engine.counters.proposals,
             "accepted": sum(e.accepted for e in evs), "search_wall_s": wall,
             "judged_per_minute": 60.0 * len(evs) / wall if wall > 0 else 0.0, "stopped": stopped,
             "evaluators_ready_s": ready_s, "sandbox_start_s": sandbox_start_s}, evs)


# -- evaluator processes ----------------------------------------------------------------------

_worker: EvaluatorWorker | None = None   # the one evaluator of a worker process


def _start_worker(task_id: str, options) -> None:
    global _worker
    _worker = EvaluatorWorker(task_id, options)


def _sandbox_start_s() -> float:
    return _worker.sandbox.stats.start_s


def _evaluate(candidate) -> Evaluation:
    return _worker.evaluate(candidate)


class EvaluatorProcesses(ExecutorPool):
    """``workers`` processes, each one warm :class:`EvaluatorWorker`, as an :class:`ExecutorPool`
    (``propose`` in this process, evaluations to whichever process is free, batches queued behind
    each other). A context manager: leaving it shuts the processes (and their sandboxes) down."""

    def __init__(self, task_id: str, options, workers: int, proposer):
        context = multiprocessing.get_context("spawn")   # a fresh interpreter: no threads or locks inherited
        procs = [ProcessPoolExecutor(1, mp_context=context, initializer=_start_worker,
                                     initargs=(task_id, options)) for _ in range(max(1, workers))]
        super().__init__(proposer, procs, _evaluate)
        # the first call runs the initializer: every evaluator is warm when this returns
        self.sandbox_start_s = sum(f.result() for f in [p.submit(_sandbox_start_s) for p in procs])

    def __enter__(self) -> "EvaluatorProcesses":
        return self

    def __exit__(self, *exc) -> None:
        for p in [self.proposing, *self.executors]:
            p.shutdown(wait=True, cancel_futures=True)


def format_search(r: dict) -> str:
    """The human-readable report of :func:`measure_search`."""
    lines = []
    if "lockstep" in r:
        base = r["lockstep"]
        lines += ["baseline, generations in lockstep (run.overlap_generations: false):",
                  *("  " + line for line in format_search(base).splitlines()[:len(base["tasks"]) + 3]),
                  f"overlapping generations against lockstep: {r['judged_per_minute']:.1f} / "
                  f"{base['judged_per_minute']:.1f} judged per minute = "
                  f"{r['judged_per_minute'] / max(base['judged_per_minute'], 1e-9):.2f}x", ""]
    mode = "overlapping generations" if r["plan"].get("overlap", True) else "generations in lockstep"
    lines += [f"fixed search: structural proposer, islands ({mode}), tasks {', '.join(r['plan']['tasks'])}, "
              f"{r['plan']['workers']} evaluator processes, {r['cpus']} CPUs on this host",
             f"{'task':<6}{'judged':>8}{'accepted':>10}{'proposals':>11}{'wall s':>9}{'judged/min':>12}"
             f"{'warm-up s':>11}"]
    for t in r["tasks"]:
        lines.append(f"{t['task']:<6}{t['judged']:>8}{t['accepted']:>10}{t['proposals']:>11}{t['search_wall_s']:>9.1f}"
                     f"{t['judged_per_minute']:>12.1f}{t['evaluators_ready_s']:>11.1f}")
    lines.append(f"judged per minute: {r['judged_per_minute']:.1f} ({r['judged']} programs in {r['search_wall_s']:.1f} s); "
                 f"mean evaluation {r['mean_evaluation_s']:.2f} s; evaluators busy "
                 f"{100 * r.get('evaluator_utilisation', 0.0):.0f}% of the time")
    lines.append(f"\nwhere the evaluations' {r['evaluation_seconds']:.1f} s went (summed over evaluations):")
    lines.append(f"{'stage':<34}{'seconds':>9}{'share':>8}{'count':>7}{'in candidate':>14}")
    total = r["evaluation_seconds"] or 1.0
    for name, s in r["stages"].items():
        notes = ", ".join(f"{k} {v}" for k, v in s.get("notes", {}).items())
        lines.append(f"{name:<34}{s['seconds']:>9.2f}{100 * s['seconds'] / total:>7.1f}%{s['count']:>7}"
                     f"{s['candidate_s']:>14.2f}" + (f"  ({notes})" if notes else ""))
    lines.append(f"{'other (bookkeeping)':<34}{r['other_s']:>9.2f}{100 * r['other_s'] / total:>7.1f}%")
    killed = r.get("ladder_killed_at_budget_s", 0.0)
    lines.append(f"\nladder calls killed at the rung's time budget (the frontier): {killed:.1f} s, "
                 f"{100 * killed / total:.1f}% of evaluation time")
    return "\n".join(lines)
