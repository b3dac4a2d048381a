"""Benchmark: CPU seconds of one ``log_Z`` call of every structural plan, at each size.

    python -m search.structural.plan_timing P01 100,1000,10000,100000 [--stop 5] [--with-enumeration]

For each template that applies to the task and each combination of its options, the program the
proposer would write is generated, executed in-process and called once per size on the task's
probe parameters (seed 5); a plan stops climbing after a call over ``--stop`` seconds. A call
that raises prints the exception's name instead of its time (``MemoryError`` after 0.2 s is not
a fast plan). Prints one line per plan: template, options, claimed complexity, timings. The
enumeration template (an honest O(2^n)) is left out unless asked for: it never returns at n = 100.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time

import numpy as np

from search.structural.proposer import StructuralProposer, applicable_templates, assemble, make_plan
from search.structural.templates import get_template
from tasks.registry import get_task


def time_plans(task_id: str, sizes: list[int], stop_s: float = 5.0, enumeration: bool = False,
               out=sys.stdout) -> None:
    task = get_task(task_id)
    view = StructuralProposer(0).view(task)
    for name in applicable_templates(view):
        if name == "enumeration" and not enumeration:
            continue
        space = get_template(name).OPTION_SPACE
        for combo in itertools.product(*space.values()):
            plan = make_plan(view, name, dict(zip(space, combo)))
            program: dict = {}
            exec(compile(assemble(task, plan), f"<{name}>", "exec"), program)  # noqa: S102 - our own template
            cells = []
            for n in sizes:
                params = task.probe_params(n, 5, 0)
                start = time.process_time()
                try:
                    value = float(program["log_Z"](params, n))
                    error = None if np.isfinite(value) else "non-finite"
                except Exception as exc:        # noqa: BLE001 - a benchmark reports every failure
                    error = type(exc).__name__
                spent = time.process_time() - start
                cells.append(f"n={n}: {spent:.3f} s" + (f" ({error})" if error else ""))
                if spent > stop_s or error:
                    break
            print(f"{name} {dict(zip(space, combo))} claims {plan.claims.complexity_O}: " + ", ".join(cells),
                  file=out, flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("sizes", help="comma-separated sizes, e.g. 100,1000,10000")
    parser.add_argument("--stop", type=float, default=5.0, help="stop a plan after a call over this many seconds")
    parser.add_argument("--with-enumeration", action="store_true", help="also time the brute-force template")
    args = parser.parse_args(argv)
    try:
        sizes = [int(x) for x in args.sizes.split(",")]
        get_task(args.task)
    except (ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    time_plans(args.task, sizes, args.stop, args.with_enumeration)
    return 0


if __name__ == "__main__":
    sys.exit(main())
