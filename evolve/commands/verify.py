"""`evolve verify`: judge one candidate file on one task and print its Verdict.

A verification takes seconds to minutes (probes, the ladder, timings, physical assertions). On a
terminal, stderr shows the stage running and the time so far on one line redrawn in place
(:class:`StageProgress`), wiped before the Verdict is printed; elsewhere (a pipe, a log) nothing
is added.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager

from evaluators.profile import Profile
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
                        "confidence, justification, code) or a .py file whose claims are comment lines at its "
                        "top, '# tractable_class: NAME' and '# complexity_O: O(...)', as a run's best/program.py "
                        "has them (a .py without a complexity claim cannot be accepted)")
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
    from evaluators.oracles.contraction.executor_rates import learned_rates  # lazy, as the verifier
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
                            ladder_budget=LadderBudget(max_n=args.ladder_max_n), executor_rates=learned_rates())
    progress = StageProgress(sys.stderr) if sys.stderr.isatty() else None
    try:
        verdict = verify(task, sub, options, profile=progress)
    finally:
        if progress is not None:
            progress.clear()
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
    if v.complexity.evidence:
        lines.append(f"              on the evidence: {v.complexity.evidence}")
    if v.answer is not None:
        from evaluators.bounds_check import describe  # lazy: it loads the oracles; the parser imports this module

        lines.append(f"  answer    : {describe(v.answer)}")
    if v.physics.checks:
        bad = [c.name for c in v.physics.checks if not c.passed]
        failed = f"; failed: {', '.join(bad)}" if bad else ""
        lines.append(f"  physics   : {len(v.physics.checks) - len(bad)}/{len(v.physics.checks)} passed{failed}")
    if v.sandbox.violations:
        lines.append(f"  sandbox   : violations {', '.join(v.sandbox.violations)}")
    lines.append("  feedback  :")
    lines += ["    " + line for line in v.feedback.splitlines()]
    return "\n".join(lines)


STAGES = {"static_check": "checking the code", "sandbox_start": "starting the sandbox",
          "probe_references": "exact values at the probe sizes", "probes": "running the probes",
          "timing_fit": "fitting the timings", "timing_runs": "timing more sizes",
          "complexity_audit": "auditing the complexity claim", "class_analysis": "checking the class",
          "physics_run": "physical assertions"}


class StageProgress(Profile):
    """A Profile that also says which stage of the verification is running (see the module docstring)."""

    def __init__(self, stream):
        super().__init__()
        self.stream, self.started = stream, time.monotonic()

    @contextmanager
    def time(self, stage: str, **fields):
        self._say(stage, fields)
        with super().time(stage, **fields) as extra:
            yield extra

    def _say(self, stage: str, fields: dict) -> None:
        n, draw = fields.get("n"), fields.get("draw")
        if stage == "ladder_call":
            what = f"ladder: the candidate at n={n} ({draw} draw)"
        elif stage == "reference":
            what = f"ladder: the exact value at n={n} ({draw} draw)"
        elif stage.startswith("physics:"):
            what = f"physical assertion {stage.removeprefix('physics:')}"
        else:
            what = STAGES.get(stage, stage)
        self.stream.write(f"\r\x1b[2Kverifying: {what} ({time.monotonic() - self.started:.0f} s)")
        self.stream.flush()

    def clear(self) -> None:
        self.stream.write("\r\x1b[2K")
        self.stream.flush()
