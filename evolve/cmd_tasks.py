"""`evolve tasks`: list the tasks, or show one task's description."""

from __future__ import annotations

from evolve.cli import UsageError, task_arg


def register(sub) -> None:
    p = sub.add_parser("tasks", help="list tasks or show one", description="List every task, or show one task's description.")
    p.add_argument("action", nargs="?", choices=["list", "show"], default="list")
    p.add_argument("task", nargs="?", help="task id for `show`")
    p.add_argument("--variant", default="canonical", choices=["canonical", "paraphrased"])
    p.set_defaults(run=run)


def run(args) -> int:
    from tasks.registry import all_tasks

    if args.action == "show":
        if not args.task:
            raise UsageError("`evolve tasks show` needs a task id")
        task = task_arg(args.task)
        print(f"{task.id}: {task.title}  (tier {task.tier}; probe sizes {list(task.probe_sizes)})\n")
        print(task.description(args.variant))
        return 0
    print(f"{'id':4}  {'tier':4}  {'gold class':22}  {'gold O':18}  {'probe n':12}  ladder n")
    for t in all_tasks():
        print(f"{t.id:4}  {t.tier:<4}  {t.gold.tractable_class:22}  {t.gold.complexity:18}  "
              f"{','.join(map(str, t.probe_sizes)):12}  {','.join(map(str, t.ladder_sizes))}")
    return 0
