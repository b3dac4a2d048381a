"""`evolve launch` and `evolve resume`: start a search from a config, or continue a killed one.

Exit status: 0 when the run ended by its budgets or strategy; 1 when it failed (a model failed its
preflight, or every proposal failed: the reason is printed and recorded in the run directory);
2 on bad input (including an ``api_key_env`` variable that is not set).
"""

from __future__ import annotations

import sys
from pathlib import Path

from evolve.commands.common import UsageError
from evolve.config import ConfigError, config_from_dict, load_config
from evolve.engine.plan import Replay
from evolve.engine.preflight import RunFailed, environment_problems
from evolve.engine.runtime import drive
from evolve.report.run_report import write_run_report
from evolve.store.journal import read_journal
from evolve.store.run_store import RunStore, RunStoreError


def register(sub) -> None:
    p = sub.add_parser(
        "launch", help="start a search from a YAML config",
        description="Start a search (a strategy - islands, tree or refine - on Ray) from a YAML config and write "
                    "everything it does to a new run directory under run.root (default runs/). "
                    "See configs/example.yaml for every key.")
    p.add_argument("config", help="YAML run config, e.g. configs/p04.yaml")
    p.add_argument("--address", help="join a Ray cluster ('auto', 'host:port' or 'ray://host:10001') instead of "
                                     "starting one (overrides ray.address)")
    p.add_argument("--run-root", help="directory for run directories (overrides run.root)")
    p.add_argument("--seed", type=int, help="override the config's seed")
    p.set_defaults(run=run_launch)

    r = sub.add_parser(
        "resume", help="continue a stopped or killed run",
        description="Continue a run from its last snapshot and journal: nothing judged is lost or judged "
                    "twice, and budgets continue where they stopped.")
    r.add_argument("run_dir", help="the run directory, e.g. runs/20261130-061502-p04-3f9a")
    r.add_argument("--extra-proposals", type=int, default=0, metavar="N",
                   help="add N proposals (and N evaluations) to the budgets")
    r.add_argument("--address", help="join a Ray cluster instead of starting one")
    r.set_defaults(run=run_resume)


def run_launch(args) -> int:
    overrides = {} if args.seed is None else {"seed": args.seed}
    try:
        cfg = load_config(args.config, overrides)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    _check_environment(cfg)
    root = Path(args.run_root or cfg.run.root)
    store = RunStore.create(root, cfg.to_dict(), cfg.task)
    print(f"run directory: {store.path}", flush=True)
    return _drive(cfg, store, address=args.address)


def run_resume(args) -> int:
    if args.extra_proposals < 0:
        raise UsageError("--extra-proposals must be >= 0")
    try:
        store = RunStore.open(args.run_dir)
        cfg = config_from_dict(store.config, base_dir=store.path)  # task_files: the run's own copies
    except (RunStoreError, ConfigError) as exc:
        raise UsageError(str(exc)) from None
    _check_environment(cfg)
    cfg.budgets.proposals += args.extra_proposals
    cfg.budgets.evaluations += args.extra_proposals
    snap = store.latest_snapshot()
    state, covered = (snap if snap is not None else (None, 0))
    contents = read_journal(store.path / "journal.msgpack")
    replay = Replay.from_records(contents.records, covered)
    print(f"resuming {store.path} from generation {state['counters']['generation'] if state else 0} "
          f"({len(replay.proposals)} proposals and {len(replay.evaluations)} evaluations taken from the journal)",
          flush=True)
    return _drive(cfg, store, address=args.address, state=state, replay=replay)


def _check_environment(cfg) -> None:
    missing = environment_problems(cfg)
    if missing:
        raise UsageError("environment variable(s) named by api_key_env are not set: " + "; ".join(missing)
                         + " (export them before starting; keys never go into configs)")


def _drive(cfg, store, **kwargs) -> int:
    """Run the search; 1 with the reason printed when it failed, else 0."""
    try:
        drive(cfg, store, **kwargs)
    except RunFailed as exc:
        print(f"run failed: {exc}", file=sys.stderr, flush=True)
        _report(store)
        return 1
    _report(store)
    return 0


def _report(store) -> None:
    best = store.path / "best" / "program.py"
    if best.exists():
        print(f"best program: {best}")
        print(f"its lineage:  evolve lineage {store.path}")
    else:
        print("no program was evaluated")
    try:
        written = write_run_report(store.path)
    except Exception as exc:  # noqa: BLE001 - the run is complete and journaled; a report failure must not hide that
        print(f"report not written ({type(exc).__name__}: {exc}); `evolve report {store.path}` retries",
              file=sys.stderr)
        return
    print(f"report:       {written.path}")
