"""Find tasks: every module in ``tasks/catalog`` that defines ``TASK``, plus user task files.

Adding a task to the benchmark is adding one module to ``tasks/catalog``; nothing else changes.
A user's own task is one Python file defining ``TASK`` (an instance of a :class:`tasks.base.Task`
subclass) anywhere on disk: :func:`register_task_file` loads it, checks it, and from then on
:func:`get_task` and :func:`all_tasks` include it in this process. ``evolve --task-file PATH``
and the config key ``task_files`` call it; Ray workers receive the file's text
(:meth:`TaskFile.payload`) and register it with :func:`register_task_payloads`, so a remote node
never needs the file itself.

Registering is idempotent by content: the same text (same SHA-256) registered again, from the
same path or from a copy, returns the task already loaded and executes nothing.
"""

from __future__ import annotations

import hashlib
import importlib
import linecache
import pkgutil
import re
import sys
import traceback
import types
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import tasks.catalog
from tasks.base import CLASS_LABELS, STATMECHBENCH_CITATION, Gold, Task
from tasks.formula_extras import ConstrainedSum
from tasks.model import IsingModel

#: task ids are upper case (lookups upper-case the name) and become part of run directory names
TASK_ID = re.compile(r"^[A-Z][A-Z0-9_-]{0,31}$")
_REQUIRED = ("id", "title", "canonical", "paraphrased", "gold", "probe_sizes")


class TaskFileError(ValueError):
    """A user task file that cannot be used; the message is one line naming the file (and line)."""


@dataclass(frozen=True)
class TaskFile:
    """One registered user task file: where it came from, its exact text, and the task it defines."""

    path: str            # absolute path the text was read from (or the origin named in a payload)
    sha256: str          # of the UTF-8 text
    source: str
    task_id: str

    def payload(self) -> dict:
        """What a worker process needs to register the same task without the file."""
        return {"path": self.path, "sha256": self.sha256, "source": self.source}


# task id -> (record, task); in registration order
_user: dict[str, tuple[TaskFile, Task]] = {}


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


def _known() -> dict[str, Task]:
    return {**_catalog(), **{k: task for k, (_, task) in _user.items()}}


def all_tasks() -> list[Task]:
    """Every catalogued task and every registered user task, ordered by id."""
    return [t for _, t in sorted(_known().items())]


def task_ids() -> list[str]:
    return sorted(_known())


def get_task(task_id: str) -> Task:
    """The task with this id (case-insensitive), or KeyError naming the known ones."""
    known = _known()
    key = task_id.upper()
    if key not in known:
        raise KeyError(f"unknown task {task_id!r}; known tasks: {', '.join(sorted(known))} "
                       "(a task of your own: pass its file with --task-file PATH, or task_files in the config)")
    return known[key]


def user_task_file(task_id: str) -> TaskFile | None:
    """The file a registered user task came from, or None for a catalogued (or unknown) task."""
    entry = _user.get(str(task_id).upper())
    return entry[0] if entry else None


def registered_task_files() -> list[TaskFile]:
    """Every registered user task file, in registration order."""
    return [record for record, _ in _user.values()]


# -- loading --------------------------------------------------------------------------------------

def register_task_file(path: str | Path) -> Task:
    """Load, check and register the task file at ``path``; its task is returned.

    TaskFileError for a missing or unreadable file, a syntax error or an exception while it runs
    (with the line in the file), no ``TASK``, a ``TASK`` that is not a Task, a task that does not
    build its own model at its smallest probe size, or an id that a catalogued task or another
    user file already has.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise TaskFileError(f"task file not found: {path}")
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskFileError(f"cannot read task file {path}: {exc}") from None
    return register_task_source(source, str(path.resolve()))


def register_task_payloads(payloads) -> list[Task]:
    """Register task files shipped as :meth:`TaskFile.payload` dicts (in a worker process)."""
    out = []
    for p in payloads or ():
        if hashlib.sha256(p["source"].encode()).hexdigest() != p["sha256"]:
            raise TaskFileError(f"task file {p['path']}: the shipped text does not match its SHA-256")
        out.append(register_task_source(p["source"], p["path"]))
    return out


def task_from_payloads(task_id: str, payloads) -> Task:
    """The task ``task_id`` after registering the user task files shipped as ``payloads`` (a worker
    is its own process, maybe on another node, so it gets the files' text, not their paths)."""
    register_task_payloads(payloads)
    return get_task(task_id)


def register_task_source(source: str, origin: str) -> Task:
    """Register a task file's text; ``origin`` names it in messages and tracebacks."""
    digest = hashlib.sha256(source.encode()).hexdigest()
    for record, task in _user.values():
        if record.sha256 == digest:
            return task
    task, module_name = _execute(source, origin, digest)
    try:
        _check(task, origin)
        _check_unique(task, origin)
    except TaskFileError:
        sys.modules.pop(module_name, None)
        raise
    if task.citation == STATMECHBENCH_CITATION:
        # a user's task is not the paper's task card (and `evolve bench` defaults to the paper's)
        task.citation = f"user task file {origin}"
    _user[task.id] = (TaskFile(origin, digest, source, task.id), task)
    return task


def _check_unique(task: Task, origin: str) -> None:
    if task.id in _catalog():
        module = sys.modules[type(_catalog()[task.id]).__module__].__file__
        raise TaskFileError(f"task file {origin}: id {task.id} is already the catalogued task "
                            f"{_catalog()[task.id].title!r} ({module}); choose another id")
    if task.id in _user:
        other = _user[task.id][0].path
        why = ("an earlier version of this file was loaded in this process; start a new one to use the edit"
               if other == origin else f"task file {other} defines it too; choose another id")
        raise TaskFileError(f"task file {origin}: id {task.id} is already registered ({why})")


def _execute(source: str, origin: str, digest: str) -> tuple[Task, str]:
    """Run the file as a module (in sys.modules under a name from its hash, so its classes pickle
    in any process that registered the same text) and return (TASK, module name)."""
    try:
        code = compile(source, origin, "exec")
    except SyntaxError as exc:
        text = (exc.text or "").strip()
        raise TaskFileError(f"task file {origin}, line {exc.lineno}: syntax error: {exc.msg}"
                            + (f": {text}" if text else "")) from None
    name = f"user_task_{re.sub(r'[^0-9A-Za-z_]', '_', Path(origin).stem)}_{digest[:12]}"
    module = types.ModuleType(name)
    module.__file__ = origin
    # tracebacks and inspect show the text that ran, also where the file is absent (a Ray worker)
    linecache.cache[origin] = (len(source), None, source.splitlines(True), origin)
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)  # noqa: S102 - the user's own task file, run as they asked
    except Exception as exc:  # noqa: BLE001 - any error in the user's file becomes one clear line
        del sys.modules[name]
        lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == origin]
        where = f", line {lines[-1]}" if lines else ""
        raise TaskFileError(f"task file {origin}{where}: {type(exc).__name__}: {exc}") from None
    if "TASK" not in module.__dict__:
        del sys.modules[name]
        raise TaskFileError(f"task file {origin} defines no TASK; end it with TASK = YourTask() "
                            "where YourTask subclasses tasks.base.Task")
    task = module.TASK
    if not isinstance(task, Task):
        del sys.modules[name]
        what = f"the class {task.__name__}" if isinstance(task, type) else f"a {type(task).__name__}"
        raise TaskFileError(f"task file {origin}: TASK is {what}, not an instance of a tasks.base.Task "
                            "subclass (write TASK = YourTask())")
    return task, name


def _check(task: Task, origin: str) -> None:
    """Catch the mistakes that would otherwise surface deep inside a search."""
    where = f"task file {origin}"
    missing = [a for a in _REQUIRED if not hasattr(task, a)]
    if missing:
        raise TaskFileError(f"{where}: TASK has no {', '.join(missing)} (a task sets {', '.join(_REQUIRED)})")
    if not isinstance(task.id, str) or not TASK_ID.match(task.id):
        raise TaskFileError(f"{where}: task id {task.id!r} must be 1-32 upper-case letters, digits, '_' or '-', "
                            "starting with a letter")
    if not isinstance(task.gold, Gold) or task.gold.tractable_class not in CLASS_LABELS:
        raise TaskFileError(f"{where}: gold must be Gold(<class>, <complexity>) with a class among "
                            f"{', '.join(CLASS_LABELS)}")
    sizes = (*task.probe_sizes, *task.ladder_sizes)
    if not task.probe_sizes or not all(isinstance(n, int) and n >= 1 for n in sizes):
        raise TaskFileError(f"{where}: probe_sizes (and ladder_sizes) must be non-empty tuples of spin counts")
    for size in sizes:
        try:
            task.check_size(size)
        except ValueError as exc:
            raise TaskFileError(f"{where}: size n={size} of probe_sizes/ladder_sizes is refused by check_size: {exc}") \
                from None
    n = min(task.probe_sizes)
    try:
        model = task.to_model(task.probe_params(n, 0, 0), n)
    except Exception as exc:  # noqa: BLE001 - reported with the line in the user's file
        lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == origin]
        at = f" (line {lines[-1]})" if lines else ""
        raise TaskFileError(f"{where}: building the model at n={n} from sample_params failed{at}: "
                            f"{type(exc).__name__}: {exc}") from None
    # a constrained sum's model lives on its dual graph, whose spins need not number n (tasks/parity_dual.py)
    spins_match = model.n == n if isinstance(model, IsingModel) else False
    if not isinstance(model, IsingModel) or not (spins_match or isinstance(task.formula, ConstrainedSum)):
        raise TaskFileError(f"{where}: to_model(params, {n}) must return a tasks.model.IsingModel with n={n} "
                            f"spins, got {model!r:.80}")
