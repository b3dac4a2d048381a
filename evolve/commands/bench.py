"""`evolve bench`: the StatMechBench-v0 evaluation protocol (paper Section 3.3, Table 3).

Exit status: 0 when every trial of the grid is finished, 1 when some could not finish (a
provider failure, retried by the next run with the same --out), 2 on bad input.
"""

from __future__ import annotations

import sys
from pathlib import Path

from evolve.commands.common import UsageError, check_count, check_seconds, check_seed, path_text


def register(sub) -> None:
    p = sub.add_parser(
        "bench",
        help="run the StatMechBench-v0 protocol over models x tasks x variants and report Table 3",
        description=(
            "For every model x task x variant, run the paper's propose-verify-revise loop with its prompts "
            "and feedback, record every round (trials/<model>__<task>__<variant>.json) and report the "
            "paper's metrics (TC0, NM0, O, k*, time, cost) with ours (table.md, results.csv). "
            "Rerunning with the same --out skips finished trials. Exit status: 0 all trials finished, "
            "1 some could not finish (retried next run), 2 usage error."
        ),
    )
    p.add_argument("--models", required=True, metavar="M1,M2",
                   help="litellm model strings (e.g. openai/gpt-5.4-mini), or 'structural' for the offline "
                        "structural proposer (later rounds mutate the previous candidate)")
    p.add_argument("--tasks", default=None, metavar="P01,...", help="task ids (default: the six StatMechBench-v0 tasks)")
    p.add_argument("--variants", default="canonical,paraphrased", metavar="V1,V2",
                   help="task description variants (default: canonical,paraphrased)")
    p.add_argument("--rounds", type=int, default=5, metavar="K", help="rounds per trial, the paper's k (default 5)")
    p.add_argument("--samples", type=int, default=5, metavar="N", help="parameter samples per probed n (default 5)")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                   help="wall-clock limit of each probe run (default 30, as in the paper)")
    p.add_argument("--out", default="bench", metavar="DIR", type=path_text, help="output directory (default ./bench)")
    p.add_argument("--llm-config", default=None, metavar="FILE.yaml",
                   help="per-model settings in the LLMConfig format (models: api_base, api_key_env, prices; "
                        "retries, timeouts); models not listed use defaults")
    p.add_argument("--seed", type=int, default=0, metavar="K", help="seed of probe parameters and the structural proposer")
    p.add_argument("--no-ladder", action="store_true", help="skip the promotion ladder (faster)")
    p.add_argument("--prompts", choices=("paper", "evolve"), default="paper",
                   help="paper: StatMechBench-v0's prompts, unchanged (default); evolve: this project's (the "
                        "interface generated from the task, the previous round with its Verdict and failed checks)")
    p.add_argument("--no-judge", action="store_true",
                   help="numbers only: the paper's stopping rule exactly; O, Cls and Phys are then n/a")
    p.set_defaults(run=run)


def _names(text: str | None, what: str) -> list[str]:
    names = [x.strip() for x in (text or "").split(",")]
    if not text or not all(names):
        raise UsageError(f"--{what} needs a comma-separated list of names without empty entries, got {text!r}")
    if len(set(names)) != len(names):
        raise UsageError(f"--{what} names something twice: {text!r}")
    return names


def _llm_settings(path: str | None):
    import yaml  # lazy

    from evolve.bench.protocol import BenchError, LLMSettings  # lazy

    if path is None:
        return LLMSettings()
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read --llm-config {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, ValueError):      # a binary file, a path holding a NUL byte
        raise UsageError(f"--llm-config {path} is not a readable text file (YAML)") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"--llm-config {path} is not valid YAML: {' '.join(str(exc).split())}") from None
    if raw is not None and not isinstance(raw, dict):
        raise UsageError(f"--llm-config {path} must hold a mapping (models: [...], retries: ...)")
    try:
        return LLMSettings(raw)
    except BenchError as exc:
        raise UsageError(f"--llm-config {path}: {exc}") from None


def run(args) -> int:
    from evolve.bench.metrics import bench_table  # lazy
    from evolve.bench.protocol import (VARIANTS, BenchError, BenchSettings, check_model,  # lazy
                                       default_task_ids, run_bench)
    from evolve.bench.report import render_table, write_reports  # lazy
    from tasks.registry import get_task  # lazy

    models = _names(args.models, "models")
    variants = _names(args.variants, "variants")
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        raise UsageError(f"unknown variant(s) {', '.join(bad)}; known: {', '.join(VARIANTS)}")
    try:
        tasks = [get_task(t) for t in (_names(args.tasks, "tasks") if args.tasks is not None else default_task_ids())]
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    check_count(args.rounds, "--rounds", 1, 1000)
    check_count(args.samples, "--samples", 1, 50)
    check_seconds(args.timeout, "--timeout")
    check_seed(args.seed, "--seed")
    try:
        settings = BenchSettings(rounds=args.rounds, samples=args.samples, seed=args.seed, ladder=not args.no_ladder,
                                 judge=not args.no_judge, timeout_s=args.timeout, prompts=args.prompts)
    except BenchError as exc:
        raise UsageError(f"{exc} (--rounds, --samples, --timeout)") from None
    llm = _llm_settings(args.llm_config)
    for m in models:
        reason = check_model(m)
        if reason:
            raise UsageError(reason)

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        result = run_bench(models, tasks, variants, settings, args.out, llm, log=progress)
    except BenchError as exc:
        raise UsageError(str(exc)) from None
    task_ids = [t.id for t in tasks]
    rows = bench_table(result.records, models, variants, task_ids)
    table, csv_path = write_reports(args.out, rows, settings.to_dict(), task_ids)
    print(render_table(rows))
    print(f"\n{result.ran} trial(s) run, {result.skipped} finished earlier; wrote {table}, {csv_path} and "
          f"{Path(args.out) / 'trials'}/")
    if result.unfinished:
        print(f"{len(result.unfinished)} trial(s) not finished (rerun with the same --out to retry): "
              + "; ".join(f"{n}: {why}" for n, why in result.unfinished), file=sys.stderr)
        return 1
    return 0
