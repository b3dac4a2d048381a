"""`evolve oracle`: the exact log Z of one task instance (or the quantity a Tier-2 task declares),
with the method used and its time."""

from __future__ import annotations

import json
import time

from evaluators.oracles.base import NotApplicable, OracleResult
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
                   help="force an exact method: " + "; ".join(f"{k} ({m.summary})" for k, m in METHODS.items()))
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


def run(args) -> int:
    task = task_arg(args.task)
    if args.n < 1:
        raise UsageError(f"--n must be a positive number of spins, got {args.n}")
    try:
        task.check_size(args.n)
    except ValueError as exc:
        raise UsageError(f"--n: {exc}") from None
    if args.params:
        params = _read_params(args.params)
    else:
        check_seed(args.seed, "--seed")
        try:
            params = task.probe_params(args.n, args.seed, 0)
        except MemoryError:
            raise UsageError(f"--n {args.n}: not enough memory to draw {task.id}'s parameters at this size") from None
        except (ValueError, OverflowError) as exc:   # numpy refuses absurd sizes
            raise UsageError(f"--n {args.n}: cannot draw {task.id}'s parameters at this size ({exc})") from None
    started = time.perf_counter()
    try:
        own = task.own_reference(params, args.n, args.method)
        result = (OracleResult(checked_finite(own[0], own[1], f"at n={args.n}"), own[1],
                               time.perf_counter() - started) if own is not None
                  else exact_log_z(task.to_model(params, args.n), args.method))
    except NotApplicable as exc:  # includes TooLarge and OutOfRange (a result that is not finite)
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
