"""Find tasks: every module in ``tasks/catalog`` that defines ``TASK``, plus user task files.

Adding a task is adding one module to ``tasks/catalog``; nothing else changes.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from functools import lru_cache
from pathlib import Path

import tasks.catalog
from tasks.base import Task


@lru_cache(maxsize=1)
def _catalog() -> dict[str, Task]:
    found: dict[str, Task] = {}
    for info in sorted(pkgutil.iter_modules(tasks.catalog.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"tasks.catalog.{info.name}")
        task = getattr(module, "TASK", None)
        if isinstance(task, Task):
            if task.id in found:
                raise RuntimeError(f"two task modules define {task.id}")
            found[task.id] = task
    return found


def all_tasks() -> list[Task]:
    """Every catalogued task, ordered by id."""
    return [t for _, t in sorted(_catalog().items())]


def task_ids() -> list[str]:
    return sorted(_catalog())


def get_task(task_id: str) -> Task:
    """The task with this id (case-insensitive), or KeyError naming the known ones."""
    cat = _catalog()
    key = task_id.upper()
    if key not in cat:
        raise KeyError(f"unknown task {task_id!r}; known tasks: {', '.join(sorted(cat))}")
    return cat[key]


def load_task_file(path: str | Path) -> Task:
    """Load a user's task module from a file path; it must define ``TASK``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"task file not found: {path}")
    spec = importlib.util.spec_from_file_location(f"user_task_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    task = getattr(module, "TASK", None)
    if not isinstance(task, Task):
        raise ValueError(f"{path} does not define TASK = <a tasks.base.Task instance>")
    return task
