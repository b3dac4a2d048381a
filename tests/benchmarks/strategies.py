"""Islands vs tree vs refine on a scripted model whose first answers are wrong.

Run it with ``make bench-strategies`` (or ``.venv/bin/python -m benchmarks.strategies --seeds
0,1,2,3,4,5,6,7 --budget 16`` from ``tests/``). Every run of every strategy talks to its own
:class:`doubles.scripted_server.ScriptedServer` playing :mod:`doubles.scripted_scenario` for the
run's seed (the same model sample for the three strategies), on P01, with the same LLM-call
budget and the same verifier settings, through the same engine (:func:`evolve.engine.runtime.drive`):

- ``islands`` and ``tree``: the LLM proposer only, ``budgets.proposals`` = the budget (duplicates
  of judged programs cost a call but no evaluation);
- ``refine``: the paper's loop, one slot, ``refine_rounds`` rounds per trial (the paper's k = 5),
  trials restarted from the initial prompt until the budget is spent or a program is accepted
  (the loop's own stopping rule).

Run directories are ``<out>/<strategy>/seed-<seed>``. The figures are read back from their
journals (:func:`metrics_from_run`): LLM calls and evaluations up to and including the first
accepted program (in program order: generation then slot), and the best
:func:`search.database.fitness` among the judged programs at the end of the budget.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from doubles.scripted_scenario import TASK, program_kind, rules
from doubles.scripted_server import ScriptedServer
from evolve.config import config_from_dict
from evolve.engine.progress import Progress
from evolve.engine.runtime import drive, start_ray
from evolve.store.events import EvaluationEvent, ProposalEvent, decode
from evolve.store.journal import read_journal
from evolve.store.run_store import RunStore
from search.database import fitness, score_of

STRATEGIES = ("islands", "tree", "refine")
KEY_ENV = "SCRIPTED_TEST_KEY"   # the scripted server ignores keys; litellm insists on one


@dataclass(frozen=True)
class BenchSetup:
    budget: int = 16              # LLM calls per run
    batch_size: int = 4           # proposals per generation (islands, tree)
    islands: int = 2
    refine_rounds: int = 5        # the paper's k
    samples: int = 2              # parameter samples per probe size
    evaluators: int = 2           # evaluator actors per run, 0.5 CPU each

    def __post_init__(self):
        if min(self.budget, self.batch_size, self.islands, self.refine_rounds, self.samples, self.evaluators) < 1:
            raise ValueError("budget, batch size, islands, refine rounds, samples and evaluators must be at least 1")


@dataclass
class RunMetrics:
    strategy: str
    seed: int
    calls: int                            # LLM calls made (proposals, parse failures and duplicates included)
    evaluations: int                      # programs judged
    accepted: int                         # accepted judgements
    calls_to_first_accept: int | None     # 1-based; None: nothing accepted within the budget
    evaluations_to_first_accept: int | None
    best_fitness: float                   # search.database.fitness of the best judged program (0 if none)
    best_program: str                     # its scripted_scenario.program_kind
    records: str                          # the run directory the figures come from


def run_config(strategy: str, seed: int, setup: BenchSetup, api_base: str, root: Path) -> dict:
    """The run config of one run."""
    refine = strategy == "refine"
    return {"task": TASK, "seed": seed, "strategy": strategy,
            "budgets": {"proposals": setup.budget, "evaluations": setup.budget, "wall_time_s": 3600,
                        "stop_when_accepted": refine},
            "proposers": {"structural": 0.0, "llm": 1.0},
            "evaluator": {"samples": setup.samples, "rung_timeout_s": 5, "ladder_total_s": 20},
            "strategies": {"islands": {"islands": setup.islands}, "refine": {"rounds": setup.refine_rounds}},
            # one proposer: requests reach the scripted model in slot order, so a seed replays exactly
            "ray": {"num_evaluators": setup.evaluators, "num_proposers": 1, "batch_size": 1 if refine else setup.batch_size,
                    "evaluator_cpus": 0.5},
            "llm": {"models": [{"name": "openai/scripted", "api_base": api_base, "api_key_env": KEY_ENV}],
                    "retries": 1, "request_timeout_s": 30},
            "run": {"root": str(root)}}


def run_search(strategy: str, seed: int, setup: BenchSetup, out: Path) -> Path:
    """One run against a fresh scripted model; its run directory."""
    with ScriptedServer(rules(seed)) as server:
        cfg = config_from_dict(run_config(strategy, seed, setup, server.base_url, out / strategy))
        store = RunStore.create(out / strategy, cfg.to_dict(), cfg.task, run_id=f"seed-{seed}")
        try:
            drive(cfg, store, progress=Progress(cfg.budgets, stream=io.StringIO()))
        finally:
            store.close()
    return store.path


def _first(flags: list[bool]) -> int | None:
    return next((i + 1 for i, f in enumerate(flags) if f), None)


def metrics_from_run(run_dir: str | Path, strategy: str, seed: int) -> RunMetrics:
    """The figures of a run, from its journal."""
    events = [decode(r) for r in read_journal(Path(run_dir) / "journal.msgpack").records]
    proposals = sorted((e.candidate for e in events if isinstance(e, ProposalEvent)), key=lambda c: c.id)
    evaluations = {e.evaluation.id: e.evaluation for e in events if isinstance(e, EvaluationEvent)}
    judged = [(evaluations[c.id], c.code) for c in proposals if c.id in evaluations]
    if judged:
        best, code = max(judged, key=lambda ec: ec[0].score)
        fit, kind = fitness(score_of(best.verdict, code)), program_kind(code)
    else:
        fit, kind = 0.0, "none"
    return RunMetrics(strategy, seed, len(proposals), len(judged), sum(e.accepted for e, _ in judged),
                      _first([c.id in evaluations and evaluations[c.id].accepted for c in proposals]),
                      _first([e.accepted for e, _ in judged]), fit, kind, str(run_dir))


def compare(seeds: list[int], setup: BenchSetup, out: str | Path, strategies=STRATEGIES, log=print) -> list[RunMetrics]:
    """Run every strategy on every seed (one Ray session) and return the figures read back from disk.

    The strategies of a seed run at the same time, each in a thread of this process with its own
    scripted server and actors (evaluators reserve 0.5 CPU each, so the runs fit a 2-CPU
    machine). Runs share no state, and no figure depends on timing (the wall-time budget is an hour).
    """
    unknown = set(strategies) - set(STRATEGIES)
    if unknown or not seeds or not strategies:
        raise ValueError(f"strategies must be among {STRATEGIES}, and seeds and strategies non-empty")
    out = Path(out)
    os.environ.setdefault(KEY_ENV, "sk-scripted")   # before Ray starts: its workers inherit the environment
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    started = start_ray(None)
    rows = []
    try:
        with ThreadPoolExecutor(max_workers=len(strategies)) as pool:
            for seed in seeds:
                runs = [pool.submit(run_search, strategy, seed, setup, out) for strategy in strategies]
                for strategy, run in zip(strategies, runs):
                    row = metrics_from_run(run.result(), strategy, seed)
                    rows.append(row)
                    log(f"seed {seed} {row.strategy:7s}: first accept after {_or_dash(row.calls_to_first_accept)} "
                        f"calls / {_or_dash(row.evaluations_to_first_accept)} evaluations; best {row.best_program} "
                        f"(fitness {row.best_fitness:.4f}) after {row.calls} calls")
    finally:
        started.close()
    (out / "metrics.json").write_text(json.dumps([asdict(r) for r in rows], indent=1), encoding="utf-8")
    return rows


def _or_dash(x) -> str:
    return "-" if x is None else str(x)


def format_table(rows: list[RunMetrics], budget: int) -> str:
    """Per-run rows, then one summary line per strategy (medians over seeds; a run that accepted
    nothing counts as ``budget + 1`` in the medians, and the runs that did accept are counted)."""
    lines = ["| strategy | seed | calls to first accept | evaluations to first accept | evaluations | accepted "
             "| best program | best fitness |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.strategy} | {r.seed} | {_or_dash(r.calls_to_first_accept)} | "
                     f"{_or_dash(r.evaluations_to_first_accept)} | {r.evaluations} | {r.accepted} | {r.best_program} | "
                     f"{r.best_fitness:.4f} |")
    lines += ["", "| strategy | runs accepting | median calls to first accept | median evaluations to first accept "
              "| median best fitness | runs ending with the log-space program |", "|---|---|---|---|---|---|"]
    for s in dict.fromkeys(r.strategy for r in rows):
        mine = [r for r in rows if r.strategy == s]
        miss = budget + 1
        lines.append(f"| {s} | {sum(r.calls_to_first_accept is not None for r in mine)}/{len(mine)} | "
                     f"{statistics.median(r.calls_to_first_accept or miss for r in mine):g} | "
                     f"{statistics.median(r.evaluations_to_first_accept or miss for r in mine):g} | "
                     f"{statistics.median(r.best_fitness for r in mine):.4f} | "
                     f"{sum(r.best_program == 'log space' for r in mine)}/{len(mine)} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="islands vs tree vs refine on a scripted model whose first "
                                                 "answers are wrong (calls and evaluations to the first accepted "
                                                 "program, best fitness at a fixed LLM-call budget)")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (samples of the scripted model)")
    parser.add_argument("--budget", type=int, default=16, help="LLM calls per run")
    parser.add_argument("--out", help="directory for the runs (default runs/strategies-<time>)")
    args = parser.parse_args(argv)
    try:
        seeds = [int(x) for x in args.seeds.split(",") if x.strip()]
        setup = BenchSetup(budget=args.budget)
    except ValueError as exc:
        print(f"error: --seeds is a comma-separated list of integers and --budget at least 1 ({exc})", file=sys.stderr)
        return 2
    out = Path(args.out or f"runs/strategies-{time.strftime('%Y%m%d-%H%M%S')}")
    if out.exists() and any(out.iterdir()):
        print(f"error: {out} is not empty: give a new --out", file=sys.stderr)
        return 2
    rows = compare(seeds, setup, out)
    print(format_table(rows, setup.budget))
    print(f"records: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
