"""`evolve verify`: judge one candidate file on one task and print its Verdict."""

from __future__ import annotations

from evaluators.bounds_check import describe
from evaluators.submission import SubmissionError, load_submission
from evolve.commands.common import UsageError, check_count, check_seconds, check_seed, print_json, task_arg


def register(sub) -> None:
    p = sub.add_parser(
        "verify",
        help="judge one candidate program on a task",
        description=(
            "Run a candidate in the sandbox at the task's probe sizes, compare with exact values "
            "(relative error 1e-6 in Z, judged in log domain) and print the Verdict. "
            "Exit status: 0 accept, 1 reject, 2 usage error."
        ),
    )
    p.add_argument("candidate", metavar="CANDIDATE",
                   help="a .json file in the paper's response schema (tractable_class, complexity_O, "
                        "confidence, justification, code) or a .py file (code only)")
    p.add_argument("--task", required=True, help="task id, e.g. P04 (see `evolve tasks`)")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object (the Verdict)")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                   help="wall-clock limit for the probe run (default 30, as in the paper)")
    p.add_argument("--seed", type=int, default=0, metavar="K", help="seed of the probe parameters (default 0)")
    p.add_argument("--samples", type=int, default=5, metavar="N", help="parameter samples per probe size (default 5)")
    p.add_argument("--ladder-max-n", type=int, default=None, metavar="N",
                   help="climb the promotion ladder no higher than N spins (a quick look; the verdict says where "
                        "it stopped); default: the task's whole ladder")
    p.set_defaults(run=run)


def run(args) -> int:
    from evaluators.ladder import LadderBudget  # lazy
    from evaluators.verify import VerifyOptions, verify  # lazy

    task = task_arg(args.task)
    check_seconds(args.timeout, "--timeout")
    check_count(args.samples, "--samples", 1, 50)
    check_seed(args.seed, "--seed")
    if args.ladder_max_n is not None:
        check_count(args.ladder_max_n, "--ladder-max-n", 1, 10 ** 9)
    try:
        sub = load_submission(args.candidate)
    except SubmissionError as exc:
        raise UsageError(str(exc)) from None

    options = VerifyOptions(seed=args.seed, samples=args.samples, timeout_s=args.timeout,
                            ladder_budget=LadderBudget(max_n=args.ladder_max_n))
    verdict = verify(task, sub, options)
    if args.json:
        print_json(verdict.to_dict())
    else:
        print(render(verdict))
    return 0 if verdict.accepted else 1


def render(v) -> str:
    """A few lines a person can read at a glance."""
    num = v.numerical
    err = "n/a" if num.max_rel_err is None else f"{num.max_rel_err:.2e}"
    lines = [
        f"{v.task}: {v.verdict.upper()}",
        f"  numerical : {'passed' if num.passed else 'FAILED'}  ({num.probes - num.failed}/{num.probes} probes, "
        f"max rel err {err}, largest n verified {num.largest_n_verified})",
        f"  class     : claimed {v.class_.claimed}  consistent {v.class_.consistent}",
        f"  complexity: claimed {v.complexity.claimed}  measured {v.complexity.measured}  honest {v.complexity.honest}",
    ]
    if v.answer is not None:
        lines.append(f"  answer    : {describe(v.answer)}")
    if v.physics.checks:
        bad = [c.name for c in v.physics.checks if not c.passed]
        lines.append(f"  physics   : {len(v.physics.checks) - len(bad)}/{len(v.physics.checks)} passed {bad or ''}")
    if v.sandbox.violations:
        lines.append(f"  sandbox   : violations {', '.join(v.sandbox.violations)}")
    lines.append("  feedback  :")
    lines += ["    " + line for line in v.feedback.splitlines()]
    return "\n".join(lines)
