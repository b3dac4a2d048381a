"""`evolve launch` and `evolve resume`: start a search from a config, or continue a killed one.

Both check everything they are given before anything is made: the config (or the run
directory's identity, for a resume), the flags, where runs go, and the Ray cluster (joined, or
started, before the run directory is created). A failure of the user's making is one line and exit
status 2, and leaves no run directory behind. Once the run is going, whatever ends it is on
record in status.json and run.log (``evolve.engine.runtime.drive``).

Exit status: 0 when the run ended by its budgets or strategy; 1 when it failed (a model failed its
preflight, or every proposal failed, or the run crashed: the reason is printed and recorded in the
run directory); 2 on bad input (including an ``api_key_env`` variable that is not set).
"""

from __future__ import annotations

import contextlib
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from evolve.commands.common import UsageError, check_seed, check_writable_dir, sigterm_raises
from evolve.engine.termination import Terminated

if TYPE_CHECKING:
    from evolve.engine import ray_session  # annotations only
    from evolve.store.run_store import RunStore  # annotations only


def register(sub) -> None:
    p = sub.add_parser(
        "launch", help="start a search from a YAML config",
        description="Start a search (a strategy - islands, tree or refine - on Ray) from a YAML config and write "
                    "everything it does to a new run directory under run.root (default runs/). "
                    "See configs/example.yaml for every key.")
    p.add_argument("config", help="YAML run config, e.g. configs/p04.yaml")
    p.add_argument("--address", help="join a Ray cluster ('auto': the one running on this machine, 'host:port' "
                                     "of the head's GCS, or 'ray://host:10001') instead of starting a local one of "
                                     "this run's own (overrides ray.address)")
    p.add_argument("--run-root", help="directory for run directories (overrides run.root)")
    p.add_argument("--seed", type=int, help="override the config's seed (0 <= seed < 2**63)")
    p.set_defaults(run=run_launch)

    r = sub.add_parser(
        "resume", help="continue a stopped or killed run",
        description="Continue a run from its last snapshot and journal: nothing judged is lost or judged "
                    "twice, and budgets continue where they stopped. The run directory is checked first: "
                    "its config.yaml must be the config the run was created with (budgets are raised with "
                    "the --extra-* flags, not by editing it), snapshots must belong to the run and agree "
                    "with its journal (others are refused, and an older one is used), and a journal that "
                    "lost more than its last, partially written record is refused unless --accept-loss.")
    r.add_argument("run_dir", help="the run directory, e.g. runs/20261130-061502-p04-3f9a")
    r.add_argument("--extra-proposals", type=int, default=0, metavar="N",
                   help="add N proposals (and N evaluations) to the budgets")
    r.add_argument("--extra-evaluations", type=int, default=0, metavar="N", help="add N evaluations to the budget")
    r.add_argument("--extra-wall-time", type=float, default=0.0, metavar="SECONDS",
                   help="add SECONDS to the wall-time budget")
    r.add_argument("--accept-loss", action="store_true",
                   help="continue a run whose journal lost records (it continues from what is left and redoes "
                        "the work after it; the loss is journaled)")
    r.add_argument("--address", help="join a Ray cluster ('auto', 'host:port', 'ray://host:10001') instead of "
                                     "starting a local one of this run's own (overrides ray.address)")
    r.set_defaults(run=run_resume)


# Ray and the search runtime are imported when a run starts, not when the parser is built. These two
# names stay attributes of this module, called through it, so that tests can stand in for Ray and the
# search (tests/test_hostile_inputs.py patches evolve.commands.launch.RaySession and .drive).
def RaySession(address: str | None) -> ray_session.RaySession:  # noqa: N802 - it stands for the class
    """An unopened :class:`evolve.engine.ray_session.RaySession` for ``address``."""
    from evolve.engine.ray_session import RaySession as session_class  # lazy

    return session_class(address)


def drive(cfg, store: RunStore, **kwargs):
    """:func:`evolve.engine.runtime.drive`: run the search to its end."""
    from evolve.engine.runtime import drive as drive_search  # lazy

    return drive_search(cfg, store, **kwargs)


def _check_address(address: str | None, flag: str) -> None:
    if address is not None:
        from evolve.engine.ray_session import ClusterError, check_address  # lazy

        try:
            check_address(address)
        except ClusterError as exc:
            raise UsageError(f"{flag}: {exc}") from None


def _check_run_root(root: Path, flag: str) -> None:
    """The nearest existing folder of ``root`` must be a directory we may write in."""
    check_writable_dir(root, flag)


def run_launch(args) -> int:
    with sigterm_raises(Terminated):       # from the start: SIGTERM while Ray starts leaves nothing behind either
        return _launch(args)


def _launch(args) -> int:
    from evolve.config import ConfigError, load_config  # lazy
    from evolve.store.run_store import RunStore, RunStoreError  # lazy

    if args.seed is not None:
        check_seed(args.seed, "--seed")     # the flag named, not the config key it overrides
    overrides = {} if args.seed is None else {"seed": args.seed}
    try:
        cfg = load_config(args.config, overrides)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    _check_environment(cfg)
    address = args.address or cfg.ray.address
    _check_address(address, "--address" if args.address else "config key `ray.address`")
    root = Path(args.run_root or cfg.run.root)
    _check_run_root(root, "--run-root" if args.run_root else "config key `run.root`")
    with _cluster(address, cfg) as session:
        try:
            store = RunStore.create(root, cfg.to_dict(), cfg.task)
        except RunStoreError as exc:
            raise UsageError(str(exc)) from None
        print(f"run directory: {store.path}", flush=True)
        return _drive(cfg, store, session)


def _cluster(address: str | None, cfg) -> ray_session.RaySession:
    """The Ray session of the run, said on stdout: a local cluster of its own unless an address is
    given; one that cannot place an evaluator is refused (one line, before any run directory)."""
    from evolve.engine.ray_session import ClusterError, check_capacity  # lazy

    session = RaySession(address)
    if getattr(session, "starts_ray", True):
        print("Ray: starting a local cluster of this run's own (`--address auto` joins one running on this machine)"
              if address is None else f"Ray: joining the cluster at {address}", flush=True)
    try:
        session.open()
        if getattr(session, "joined", False):   # it called ray.init (a Ray already up here is taken as it is)
            check_capacity(cfg.ray.evaluator_cpus, session.describe())
    except ClusterError as exc:
        session.close()
        raise UsageError(str(exc)) from None
    except BaseException:
        session.close()
        raise
    if getattr(session, "joined", False):
        print(f"Ray: {session.describe()}", flush=True)
    return session


def _resume_flags(args) -> dict:
    for flag, value in (("--extra-proposals", args.extra_proposals), ("--extra-evaluations", args.extra_evaluations)):
        if value < 0 or value >= 2 ** 62:
            raise UsageError(f"{flag} must be in [0, 2**62), got {value}")
    if not (math.isfinite(args.extra_wall_time) and args.extra_wall_time >= 0):
        raise UsageError(f"--extra-wall-time must be a finite number of seconds >= 0, got {args.extra_wall_time}")
    extra = {"proposals": args.extra_proposals, "evaluations": args.extra_proposals + args.extra_evaluations,
             "wall_time_s": args.extra_wall_time}
    return {k: v for k, v in extra.items() if v}


def _say(store: RunStore, message: str) -> None:
    """Loudly: run.log and stderr."""
    store.log(message)
    print(f"evolve resume: {message}", file=sys.stderr, flush=True)


def run_resume(args) -> int:
    with sigterm_raises(Terminated):
        return _resume(args)


def _resume(args) -> int:
    from evolve.config import ConfigError, config_from_dict  # lazy
    from evolve.engine.plan import Replay  # lazy
    from evolve.store.events import EXTRA_BUDGETS, ResumeEvent, extra_budgets  # lazy
    from evolve.store.integrity import config_sha256  # lazy
    from evolve.store.run_store import RunStore, RunStoreError  # lazy

    extra = _resume_flags(args)
    _check_address(args.address, "--address")
    try:
        store = RunStore.open(args.run_dir, accept_loss=args.accept_loss)
    except RunStoreError as exc:
        raise UsageError(str(exc)) from None
    try:
        try:
            cfg = config_from_dict(store.config, base_dir=store.path)  # task_files: the run's own copies
        except ConfigError as exc:
            raise UsageError(f"{store.path}/config.yaml: {exc}") from None
        _check_environment(cfg)
        address = args.address or cfg.ray.address
        _check_address(address, "--address" if args.address else "config key `ray.address`")
        session = _cluster(address, cfg)
    except BaseException:
        store.close()
        raise
    with session, contextlib.closing(store):
        if store.identity_note:
            _say(store, store.identity_note)
        if store.loss is not None:
            _say(store, f"{store.loss.message(store.path / 'journal.msgpack')}; continuing from record "
                        f"{store.loss.last_seq} (--accept-loss)")
        point = store.resume_point()
        for note in point.refused:
            print(f"evolve resume: {note}", file=sys.stderr, flush=True)
        before = extra_budgets(store.journal_records())
        store.record(ResumeEvent(point.snapshot, point.covered, extra, tuple(point.refused),
                                 store.loss.lost_records if store.loss else 0,
                                 config_sha256(store.config) if store.identity_note else None,
                                 store.config if store.identity_note else None))
        for name in EXTRA_BUDGETS:
            added = before[name] + extra.get(name, 0)
            setattr(cfg.budgets, name, getattr(cfg.budgets, name) + added)
        replay = Replay.from_records(store.journal_records(), point.covered)
        state = point.state
        print(f"resuming {store.path} from generation {state['counters']['generation'] if state else 0} "
              f"({len(replay.proposals)} proposals and {len(replay.evaluations)} evaluations taken from the journal)",
              flush=True)
        return _drive(cfg, store, session, state=state, replay=replay)


def _check_environment(cfg) -> None:
    from evolve.engine.preflight import environment_problems  # lazy

    missing = environment_problems(cfg)
    if missing:
        raise UsageError("environment variable(s) named by api_key_env are not set: " + "; ".join(missing)
                         + " (export them before starting; keys never go into configs)")


def _drive(cfg, store: RunStore, session: ray_session.RaySession, **kwargs) -> int:
    """Run the search to its end; a run that fails is one line (status.json and run.log have the reason)."""
    from evolve.engine.preflight import RunFailed  # lazy

    if session.sentinel is not None:
        session.watch(store.path)
    try:
        # again, now that Ray is up: ray.init installs its core's own SIGTERM handler, which aborts the process
        with sigterm_raises(Terminated):
            drive(cfg, store, address=session.address, cluster=getattr(session, "describe", lambda: None)(), **kwargs)
    except KeyboardInterrupt:        # Ctrl-C or SIGTERM: drive recorded it (interrupted); the command line says so
        raise
    except RunFailed as exc:
        print(f"run failed: {exc}", file=sys.stderr, flush=True)
        _report(store)
        return 1
    except OSError as exc:
        if not str(exc.filename or "").startswith(str(store.path)):
            return _failed(store, exc, kwargs)
        # the run directory (or its disk) refused a write: the user's to fix
        raise UsageError(f"cannot write to the run directory {store.path}: {exc.strerror or exc} "
                         f"({exc.filename or 'a file in it'}); the run is marked failed where it could be") from None
    except Exception as exc:  # noqa: BLE001 - drive recorded it; the user gets one line, not a traceback
        return _failed(store, exc, kwargs)
    finally:
        store.close()
    _report(store)
    return 0


def _failed(store: RunStore, exc: BaseException, kwargs: dict) -> int:
    print(f"evolve {'resume' if kwargs else 'launch'}: the run failed: {type(exc).__name__}: "
          f"{' '.join(str(exc).split())[:300]} (recorded in {store.path}/status.json and run.log)", file=sys.stderr)
    return 1


def _report(store) -> None:
    from evolve.report.run_report import write_run_report  # lazy

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
