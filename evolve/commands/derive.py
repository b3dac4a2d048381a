"""`evolve derive`: derive a task from its formula alone and print the derivation: each step with its
check, the solver, the claims, the other chains found, and optionally the program and its verdict."""

from __future__ import annotations

import json

from evolve.commands.common import UsageError, check_seed, task_arg


def register(sub) -> None:
    p = sub.add_parser(
        "derive",
        help="derive a program from the task's formula and print the checked chain of steps",
        description="Compile the task's formula into a reader, search over chains of transformations (gauge, "
                    "summing out spins, changes of variables, Nishimori averaging, dual models, ...) each checked "
                    "exactly on small instances before the next, and print the best chain with its solver and "
                    "claims (search/derivation).",
    )
    p.add_argument("--task", required=True, help="task id, e.g. T12")
    p.add_argument("--paraphrase", type=int, default=None, metavar="K",
                   help="derive from the generated paraphrase with seed K instead of the task's formula")
    p.add_argument("--seed", type=int, default=0, help="seed of the instances the steps are checked on")
    p.add_argument("--program", action="store_true", help="print the generated program too")
    p.add_argument("--verify", action="store_true", help="run the full verification cascade on the program")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


def run(args) -> int:
    from evaluators.verify import verify  # lazy
    from search.derivation import derive  # lazy
    from search.derivation.feedback import with_chain  # lazy
    from search.derivation.proposer import to_candidate  # lazy
    from tasks.paraphrase import paraphrase  # lazy

    task = task_arg(args.task)
    check_seed(args.seed, "--seed")
    if args.paraphrase is not None:
        check_seed(args.paraphrase, "--paraphrase")
    formula, source = task.formula, "the task's formula"
    if args.paraphrase is not None:
        try:
            formula, source = paraphrase(task, args.paraphrase).formula, f"generated paraphrase {args.paraphrase}"
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if formula is None:
        raise UsageError(f"{task.id} has no formula to derive from (tasks/formula.py)")
    d = derive(task, formula, source, seed=args.seed)
    verdict = None
    if args.verify and d.program is not None:
        cand = to_candidate(d, "derive", task.id)
        verdict = verify(task, cand.to_submission())
    if args.json:
        out = {"task": task.id, "source": source, "chain": d.chain, "steps": d.record(), "failed": [s.to_dict() for s in d.failed],
               "findings": d.findings, "plans": [p.to_dict() for p in d.plans], "tractable_class": d.tractable_class,
               "complexity_O": d.complexity_O, "error": d.error, "diagnosis": d.diagnosis,
               "answers": [a.to_dict() for a in d.answers]}
        if args.program:
            out["program"] = d.program
        if verdict is not None:
            out["verdict"] = verdict.to_dict()
        print(json.dumps(out, indent=1))
        return 0 if d.program is not None else 1
    print(report(task.id, d))
    if args.program and d.program:
        print("\n# ---- program " + "-" * 60)
        print(d.program)
    if verdict is not None:
        print(f"\nverify: {verdict.verdict.upper()} (largest n verified {verdict.numerical.largest_n_verified})")
        print("  " + with_chain(verdict.feedback, d.record()).replace("\n", "\n  "))
    return 0 if d.program is not None else 1


def report(task_id: str, d) -> str:
    """The derivation as text: steps with checks, solver, claims, alternatives, failures, findings."""
    lines = [f"{task_id}: derivation from {d.source}"]
    for k, s in enumerate(d.steps):
        change = ("" if s.log_change is None else "  (Z unchanged)" if s.log_change == 0.0 else
                  f"  (log Z before = log Z after {s.log_change:+.6g}, on average)")
        lines.append(f"  step {k}: {s.action:15s} {s.summary}{change}")
        if s.result:
            lines.append(f"          leaves: {s.result}")
        lines.append(f"          check: {s.check.text()}")
    if d.plan is not None:
        lines.append(f"  solver:  {d.plan.solver:15s} options {d.plan.solver_options}")
        lines.append(f"  claims:  {d.tractable_class}, {d.complexity_O}")
        lines.append(f"  chain:   {d.chain}")
        if len(d.plans) > 1:
            lines.append("  other chains found: " + "; ".join(f"{p.key} ({p.complexity})" for p in d.plans[1:8]))
    for a in getattr(d, "answers", ()):
        lines.append(f"  answer:  {a.kind} by {a.key} ({a.complexity}); checked in the sandbox: {_answer_check(a)}")
    for s in d.failed:
        lines.append(f"  failed step: {s.action}: {s.check.text()}")
    for f in d.findings:
        lines.append(f"  finding: {f}")
    for note in d.notes:
        lines.append(f"  note: {note}")
    if d.diagnosis:
        lines.append("  why nothing polynomial was found:")
        lines += [f"    {line}" for line in d.diagnosis]
    if d.error:
        lines.append(f"  no program: {d.error}")
    return "\n".join(lines)


def _answer_check(a) -> str:
    """An answer's sandbox check (search/derivation/answers.py): its worst violation or error per spin."""
    c = a.check
    if c.passed is None:
        return f"not run ({c.detail})"
    if not c.passed:
        return f"FAILED {c.detail}"
    worst = "" if c.sandbox is None else f", worst violation or error per spin {c.sandbox:.2e}"
    return f"passed on {', '.join(c.instances)}{worst}"
