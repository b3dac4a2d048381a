"""`evolve tasks`: list the tasks, or show one task's description (canonical, the card's paraphrase,
or a generated paraphrase for a seed)."""

from __future__ import annotations

from evolve.commands.common import UsageError, task_arg


def register(sub) -> None:
    p = sub.add_parser("tasks", help="list tasks or show one", description="List every task, or show one task's description.")
    p.add_argument("action", nargs="?", choices=["list", "show"], default="list")
    p.add_argument("task", nargs="?", help="task id for `show`")
    p.add_argument("--variant", default=None, choices=["canonical", "paraphrased"],
                   help="the task card's own description (default canonical)")
    p.add_argument("--paraphrase", type=int, default=None, metavar="K",
                   help="show the generated paraphrase with seed K instead (tasks/paraphrase.py)")
    p.set_defaults(run=run)


def run(args) -> int:
    if args.action == "show":
        if not args.task:
            raise UsageError("`evolve tasks show` needs a task id")
        task = task_arg(args.task)
        if args.paraphrase is not None:
            return _show_paraphrase(task, args)
        print(f"{task.id}: {task.title}  (tier {task.tier}; probe sizes {list(task.probe_sizes)})\n")
        print(task.description(args.variant or "canonical"))
        return 0
    if args.paraphrase is not None or args.variant is not None:
        raise UsageError("--variant and --paraphrase go with `evolve tasks show TASK`")
    from tasks.registry import all_tasks  # lazy

    tasks = all_tasks()
    w = max(4, *(len(t.id) for t in tasks))   # user task ids may be longer than P01
    print(f"{'id':{w}}  {'tier':4}  {'quantity':8}  {'gold class':22}  {'gold O':18}  {'probe n':12}  ladder n")
    for t in tasks:
        print(f"{t.id:{w}}  {t.tier:<4}  {t.quantity.name:8}  {t.gold.tractable_class:22}  {t.gold.complexity:18}  "
              f"{','.join(map(str, t.probe_sizes)):12}  {','.join(map(str, t.ladder_sizes))}")
    return 0


def _show_paraphrase(task, args) -> int:
    if args.variant is not None:
        raise UsageError("use either --variant or --paraphrase, not both")
    from tasks.paraphrase import paraphrase  # lazy

    try:
        generated = paraphrase(task, args.paraphrase)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    # the header leaves out the title: it names the model, which the paraphrase is written to hide
    print(f"{task.id}: generated paraphrase {generated.seed}  (rules: {', '.join(generated.rules)})\n")
    print(generated.text)
    return 0
