"""Islands vs tree vs refine on a scripted model whose first answers are wrong (`evolve perf strategies`).

Every run of every strategy talks to its own :class:`search.scripted_server.ScriptedServer`
playing :mod:`search.scripted_scenario` for the run's seed (the same model sample for the three
strategies), on P01, with the same LLM-call budget and the same verifier settings:

- ``islands`` and ``tree``: :func:`evolve.runtime.drive` with the LLM proposer only,
  ``budgets.proposals`` = the budget (duplicates of judged programs cost a call but no
  evaluation), run directories ``<out>/<strategy>/seed-<seed>``;
- ``refine``: the paper's loop (:func:`search.refine.refine`), ``refine_rounds`` rounds per trial
  (the paper's k = 5), trials restarted from the initial prompt until the budget is spent or a
  trial is accepted (the loop's own stopping rule); the traces go to
  ``<out>/refine/seed-<seed>.json``.

The figures are then read back from those records (:func:`metrics_from_run`,
:func:`metrics_from_refine`): LLM calls and evaluations up to and including the first accepted
program (in program order: generation then slot, or trial then round), and the best
:func:`search.database.fitness` among the judged programs at the end of the budget.
"""

from __future__ import annotations

import io
import json
import os
import statistics
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

STRATEGIES = ("islands", "tree", "refine")
KEY_ENV = "SCRIPTED_TEST_KEY"   # the scripted server ignores keys; litellm insists on one


@dataclass(frozen=True)
class BenchSetup:
    budget: int = 16              # LLM calls per run
    batch_size: int = 4           # proposals per generation (islands, tree)
    islands: int = 2
    refine_rounds: int = 5        # the paper's k
    samples: int = 2              # parameter samples per probe size
    evaluators: int = 2           # evaluator actors per islands/tree run, 0.5 CPU each

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
    records: str                          # the run directory or trace file the figures come from


def run_config(strategy: str, seed: int, setup: BenchSetup, api_base: str, root: Path) -> dict:
    """The run config of one islands/tree run (refine takes its verifier settings and llm section too)."""
    from search.scripted_scenario import TASK

    # refine reads only the evaluator and llm sections; "islands" stands in to make the config valid
    return {"task": TASK, "seed": seed, "strategy": strategy if strategy != "refine" else "islands",
            "budgets": {"proposals": setup.budget, "evaluations": setup.budget, "wall_time_s": 3600},
            "proposers": {"structural": 0.0, "llm": 1.0},
            "evaluator": {"samples": setup.samples, "rung_timeout_s": 5, "ladder_total_s": 20},
            "database": {"islands": setup.islands},
            # one proposer: requests reach the scripted model in slot order, so a seed replays exactly
            "ray": {"num_evaluators": setup.evaluators, "num_proposers": 1, "batch_size": setup.batch_size,
                    "evaluator_cpus": 0.5},
            "llm": {"models": [{"name": "openai/scripted", "api_base": api_base, "api_key_env": KEY_ENV}],
                    "retries": 1, "request_timeout_s": 30},
            "run": {"root": str(root)}}


# -- running ----------------------------------------------------------------------------------------
def run_search(strategy: str, seed: int, setup: BenchSetup, out: Path) -> Path:
    """One islands or tree run against a fresh scripted model; its run directory."""
    from evolve.config import config_from_dict
    from evolve.progress import Progress
    from evolve.run_store import RunStore
    from evolve.runtime import drive
    from search.scripted_scenario import rules
    from search.scripted_server import ScriptedServer

    with ScriptedServer(rules(seed)) as server:
        cfg = config_from_dict(run_config(strategy, seed, setup, server.base_url, out / strategy))
        store = RunStore.create(out / strategy, cfg.to_dict(), cfg.task, run_id=f"seed-{seed}")
        try:
            drive(cfg, store, progress=Progress(cfg.budgets, stream=io.StringIO()))
        finally:
            store.close()
    return store.path


def run_refine(seed: int, setup: BenchSetup, out: Path, sandbox=None) -> Path:
    """Refine trials (k rounds each, restarted) until the budget is spent or one is accepted."""
    from evaluators.verify import VerifyOptions
    from evolve.config import config_from_dict
    from evolve.runtime import verify_options
    from search.llm_config import LLMConfig
    from search.llm_proposer import LLMProposer
    from search.refine import refine
    from search.scripted_scenario import rules
    from search.scripted_server import ScriptedServer
    from tasks.registry import get_task

    from evaluators.sandbox import Sandbox

    traces = []
    own = sandbox is None
    sandbox = sandbox or Sandbox()
    try:
        with ScriptedServer(rules(seed)) as server:
            cfg = config_from_dict(run_config("refine", seed, setup, server.base_url, out))
            proposer = LLMProposer(LLMConfig.from_dict(cfg.llm), seed=seed)
            options = VerifyOptions(**verify_options(cfg))
            calls = 0
            while calls < setup.budget:
                trace = refine(get_task(cfg.task), proposer, rounds=min(setup.refine_rounds, setup.budget - calls),
                               verify_options=options, sandbox=sandbox)
                traces.append(trace.to_dict())
                calls += len(trace.rounds)
                if trace.stopped != "rounds exhausted":  # accepted, or a provider failure
                    break
    finally:
        if own:
            sandbox.close()
    path = out / "refine" / f"seed-{seed}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"seed": seed, "setup": asdict(setup), "trials": traces}, indent=1), encoding="utf-8")
    return path


# -- figures from the records ---------------------------------------------------------------------
def _first(flags: list[bool]) -> int | None:
    return next((i + 1 for i, f in enumerate(flags) if f), None)


def _best(judged: list[tuple[dict, str]]) -> tuple[float, str]:
    """(fitness, program kind) of the best of (verdict, code) pairs."""
    from search.database import fitness, score_of
    from search.scripted_scenario import program_kind

    if not judged:
        return 0.0, "none"
    verdict, code = max(judged, key=lambda vc: score_of(vc[0], vc[1]))
    return fitness(score_of(verdict, code)), program_kind(code)


def metrics_from_run(run_dir: str | Path, strategy: str, seed: int) -> RunMetrics:
    """The figures of an islands/tree run, from its journal."""
    from evolve.journal import read_journal

    records = read_journal(Path(run_dir) / "journal.msgpack").records
    proposals = sorted((r["candidate"] for r in records if r["kind"] == "proposal"), key=lambda c: c["id"])
    evaluations = {r["id"]: r for r in records if r["kind"] == "evaluation"}
    judged = [evaluations[c["id"]] for c in proposals if c["id"] in evaluations]
    accepted = [e["verdict"]["verdict"] == "accept" for e in judged]
    code = {c["id"]: c.get("code") for c in proposals}
    fit, kind = _best([(e["verdict"], code[e["id"]]) for e in judged])
    return RunMetrics(strategy, seed, len(proposals), len(judged), sum(accepted),
                      _first([evaluations.get(c["id"], {}).get("verdict", {}).get("verdict") == "accept"
                              for c in proposals]),
                      _first(accepted), fit, kind, str(run_dir))


def metrics_from_refine(path: str | Path) -> RunMetrics:
    """The figures of a refine run, from its trace file."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    rounds = [r for trace in data["trials"] for r in trace["rounds"]]
    judged = [r for r in rounds if r["verdict"] is not None]
    accepted = [r["verdict"]["verdict"] == "accept" for r in judged]
    fit, kind = _best([(r["verdict"], r["candidate"].get("code")) for r in judged])
    return RunMetrics("refine", data["seed"], len(rounds), len(judged), sum(accepted),
                      _first([bool(r["accepted"]) for r in rounds]), _first(accepted), fit, kind, str(path))


# -- the comparison -------------------------------------------------------------------------------
def run_one(strategy: str, seed: int, setup: BenchSetup, out: Path) -> RunMetrics:
    """One strategy on one seed; the figures read back from the records it wrote."""
    if strategy == "refine":
        return metrics_from_refine(run_refine(seed, setup, out))
    return metrics_from_run(run_search(strategy, seed, setup, out), strategy, seed)


def compare(seeds: list[int], setup: BenchSetup, out: str | Path, strategies=STRATEGIES, log=print) -> list[RunMetrics]:
    """Run every strategy on every seed (one Ray session) and return the figures read back from disk.

    The strategies of a seed run at the same time, each in a thread of this process with its own
    scripted server and (islands, tree) its own actors: a run's evaluators reserve 0.5 CPU each
    (1 CPU for the default two), so two Ray runs fit a 2-CPU machine while refine verifies in this
    process. Runs share no
    state, and no figure depends on timing (the wall-time budget is an hour).
    """
    import ray

    from evolve.runtime import start_ray

    unknown = set(strategies) - set(STRATEGIES)
    if unknown or not seeds or not strategies:
        raise ValueError(f"strategies must be among {STRATEGIES}, and seeds and strategies non-empty")
    out = Path(out)
    os.environ.setdefault(KEY_ENV, "sk-scripted")   # before Ray starts: its workers inherit the environment
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    started = start_ray(None) if any(s != "refine" for s in strategies) else False
    rows = []
    try:
        with ThreadPoolExecutor(max_workers=len(strategies)) as pool:
            for seed in seeds:
                futures = [pool.submit(run_one, strategy, seed, setup, out) for strategy in strategies]
                for row in (f.result() for f in futures):
                    rows.append(row)
                    log(f"seed {seed} {row.strategy:7s}: first accept after {_or_dash(row.calls_to_first_accept)} "
                        f"calls / {_or_dash(row.evaluations_to_first_accept)} evaluations; best {row.best_program} "
                        f"(fitness {row.best_fitness:.4f}) after {row.calls} calls")
    finally:
        if started:
            ray.shutdown()
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
