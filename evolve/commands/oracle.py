"""`evolve oracle`: the exact log Z of one task instance (or the quantity a Tier-2 task declares),
with the method used and its time."""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from contextlib import contextmanager

from evaluators.oracles.base import NotApplicable, OracleResult
from evaluators.oracles.budget import DEFAULT_BUDGET_S, current_stage, deadline
from evaluators.oracles.contraction.executor_rates import learned_rates, using
from evaluators.oracles.registry import METHODS, checked_finite, exact_log_z
from evolve.commands.common import UsageError, check_seed, print_json, task_arg


def register(sub) -> None:
    p = sub.add_parser(
        "oracle",
        help="exact log Z of one task instance",
        description="Compute the exact natural log Z of a task at size n, from a parameter file or a seeded "
                    "draw, with the cheapest applicable exact method (or the one named by --method).",
    )
    p.add_argument("--task", required=True, help="task id, e.g. P04")
    p.add_argument("--n", type=int, required=True, help="number of spins (n = L*L for lattice tasks)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--params", metavar="FILE.json", help="the task's parameter dictionary, as a candidate receives it")
    src.add_argument("--seed", type=int, metavar="K", help="draw the parameters with the task's seeded sampler")
    p.add_argument("--method", choices=list(METHODS), metavar="NAME",
                   help="force an exact method: " + "; ".join(f"{k} ({m.SUMMARY})" for k, m in METHODS.items()))
    p.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                   help=f"answer or refuse within this many seconds (default {DEFAULT_BUDGET_S:.0f}): a method whose "
                        "predicted time does not fit hands over to the next, and when none is left the refusal "
                        "names each method's limit")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


def _read_params(path: str) -> dict:
    """The parameter file: a JSON object of numbers (and lists of numbers), no booleans."""
    from tasks.base import refuse_booleans  # lazy

    try:
        with open(path, encoding="utf-8") as fh:
            params = json.load(fh)
    except OSError as exc:
        raise UsageError(f"--params: cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"--params: {path} is not a text file (a parameter file is JSON)") from None
    except ValueError as exc:        # json.JSONDecodeError, or a path with a NUL byte
        raise UsageError(f"--params: {path} is not valid JSON: {getattr(exc, 'msg', exc)}") from None
    if not isinstance(params, dict):
        raise UsageError(f"--params: {path} must hold a JSON object (the task's parameter dictionary)")
    try:
        refuse_booleans(params)
    except ValueError as exc:
        raise UsageError(f"--params {path}: {exc}") from None
    return params


#: progress on stderr: the first line after this many seconds of silence, then one every PROGRESS_EVERY_S
PROGRESS_AFTER_S = 3.0
PROGRESS_EVERY_S = 15.0


@contextmanager
def _progress(task_id: str, n: int, budget_s: float):
    """One line on stderr after PROGRESS_AFTER_S, then every PROGRESS_EVERY_S, while the call runs:
    what it is doing (current_stage) and for how long, against its budget (a first call in a
    fresh environment spends up to a minute compiling numba kernels: 29 s silent on P04 n = 4096).
    On a terminal, or with STATMECH_PROGRESS=1: a pipe or a file gets the one line of the answer."""
    done = threading.Event()
    started = time.monotonic()

    def report() -> None:
        wait, first = PROGRESS_AFTER_S, True
        while not done.wait(wait):
            what = current_stage() or "drawing the parameters and building the model"
            hint = ("; a method's first call in a fresh environment compiles its numba kernels, up to a minute, "
                    "cached in NUMBA_CACHE_DIR afterwards") if first else ""
            print(f"evolve oracle: {task_id} n={n}: {what}, {time.monotonic() - started:.0f} s of the "
                  f"{budget_s:.0f} s budget{hint}", file=sys.stderr, flush=True)
            wait, first = PROGRESS_EVERY_S, False

    if not (sys.stderr.isatty() or os.environ.get("STATMECH_PROGRESS") == "1"):
        yield                                    # a pipe or a file gets the answer alone
        return
    thread = threading.Thread(target=report, name="oracle-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def run(args) -> int:
    from tasks.memory import memory_refusal  # lazy

    task = task_arg(args.task)
    if args.n < 1:
        raise UsageError(f"--n must be a positive number of spins, got {args.n}")
    try:
        task.check_size(args.n)
    except ValueError as exc:
        raise UsageError(f"--n: {exc}") from None
    budget_s = DEFAULT_BUDGET_S if args.budget is None else args.budget
    if not (budget_s > 0 and math.isfinite(budget_s)):
        raise UsageError(f"--budget must be a positive number of seconds, got {args.budget}")
    if args.params:
        params = _read_params(args.params)
    else:
        check_seed(args.seed, "--seed")
    too_big = memory_refusal(task, args.n)       # before anything of that size is allocated
    if too_big is not None:
        raise UsageError(f"--n {args.n}: {too_big}")
    with _progress(task.id, args.n, budget_s):
        if not args.params:
            params = _drawn(task, args.n, args.seed)
        return _computed(task, params, args, budget_s)


def _drawn(task, n: int, seed: int) -> dict:
    try:
        return task.probe_params(n, seed, 0)
    except MemoryError:
        raise UsageError(f"--n {n}: not enough memory to draw {task.id}'s parameters at this size") from None
    except (ValueError, OverflowError) as exc:   # numpy refuses absurd sizes
        raise UsageError(f"--n {n}: cannot draw {task.id}'s parameters at this size ({exc})") from None


def _computed(task, params: dict, args, budget_s: float) -> int:
    started = time.perf_counter()
    try:
        with deadline(budget_s), using(learned_rates()):   # this machine's executor rates, read once
            own = task.own_reference(params, args.n, args.method)
            result = (OracleResult(checked_finite(own[0], own[1], f"at n={args.n}"), own[1],
                                   time.perf_counter() - started) if own is not None
                      else exact_log_z(task.to_model(params, args.n), args.method))
    except NotApplicable as exc:  # includes TooLarge, OverBudget and OutOfRange (a result that is not finite)
        raise UsageError(str(exc)) from None
    except MemoryError:
        raise UsageError(f"--n {args.n}: {task.id} at this size needs more memory than this process may use") from None
    except OverflowError as exc:
        raise UsageError(f"--n {args.n}: too large for {task.id} ({exc})") from None
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        if not args.params:   # parameters drawn by the task itself: what is wrong is the size (numpy's limits)
            raise UsageError(f"--n {args.n}: {task.id} cannot be built at this size ({exc})") from None
        raise UsageError(f"--params {args.params}: bad parameters for {task.id} at n={args.n}: {exc}") from None
    q = task.quantity
    # a declared quantity (Tier 2) is printed under its own name; a signed one is not a log
    label = "log Z" if q.is_partition_function else f"log {q.name}" if q.positive else q.name
    if args.json:
        key = "log_z" if q.is_partition_function else "log_value" if q.positive else "value"
        print_json({"task": task.id, "n": args.n, "quantity": q.name, key: result.log_z,
                    "method": result.method, "seconds": result.seconds})
    else:
        print(f"{task.id} n={args.n}: {label} = {result.log_z:.15g}  (method {result.method}, {result.seconds:.3f} s)")
    return 0
