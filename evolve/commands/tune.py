"""`evolve tune`: tune a search strategy's hyperparameters with Optuna (see evolve.tuning.tune)."""

from __future__ import annotations

from evolve.commands.common import UsageError, check_count


def register(sub) -> None:
    p = sub.add_parser(
        "tune", help="tune a strategy's hyperparameters with Optuna",
        description="Run N trials, each a small search (the config's budgets) with hyperparameters sampled "
                    "from the config's tune.params, scored by tune.objective. Trials run in parallel as Ray "
                    "tasks (tune.parallel_trials at a time); one line is printed per finished trial. The study "
                    "persists in its storage, so a rerun adds trials to it and re-runs trials an interrupted "
                    "tuner left unfinished. Trial runs, trials.jsonl and the best parameters as a ready config "
                    "(best.yaml) go to <directory of the sqlite file>/<study>/.")
    p.add_argument("config", help="YAML run config with a tune section, e.g. configs/p04.yaml")
    p.add_argument("--trials", type=int, required=True, metavar="N", help="trials to add to the study")
    p.add_argument("--storage", help="Optuna storage URL (default sqlite:///<run.root>/tune.db)")
    p.add_argument("--study", help="study name (default <config stem>-<strategy>)")
    p.add_argument("--parallel", type=int, metavar="K", help="trials at once (default: tune.parallel_trials)")
    p.add_argument("--address", help="join a Ray cluster ('auto' or 'ray://host:10001') instead of starting one")
    p.set_defaults(run=run_tune)


def run_tune(args) -> int:
    from evolve.config import ConfigError  # lazy
    from evolve.engine.ray_session import ClusterError, check_address  # lazy
    from evolve.tuning.tune import tune  # lazy

    check_count(args.trials, "--trials", 1, 100000)
    if args.parallel is not None:
        check_count(args.parallel, "--parallel", 1, 1000)
    if args.address is not None:
        try:
            check_address(args.address)
        except ClusterError as exc:
            raise UsageError(f"--address: {exc}") from None
    try:
        result = tune(args.config, args.trials, storage=args.storage, study_name=args.study, address=args.address,
                      parallel=args.parallel)
    except (ConfigError, ClusterError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    print(f"study {result.study} in {result.storage}: {result.trials} trials, {result.completed} completed")
    if result.best_config is None:
        print("no trial completed; no best config written")
        return 1
    print(f"best value {result.best_value:g} with {result.best_params}")
    print(f"best config: {result.best_config}")
    print(f"trial runs and trials.jsonl: {result.study_dir}")
    return 0
