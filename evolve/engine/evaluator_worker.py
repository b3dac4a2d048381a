"""The evaluator side of a search as a plain class (the runtime wraps it in a Ray actor, or calls it
in-process): it judges one :class:`~search.candidate.Candidate` in its own warm sandbox and returns an
:class:`~search.records.Evaluation`. Only these typed records cross process boundaries. A user task
reaches the worker as its file's text (``tasks.registry.TaskFile.payload``): a worker may be on
another node.
"""

from __future__ import annotations

import os
import socket
import time

import ray

from evaluators.profile import Profile
from evaluators.sandbox import Sandbox
from evaluators.verify import VerifyOptions, verify
from search.candidate import Candidate
from search.database import score_of
from search.derivation.feedback import with_chain
from search.records import Evaluation
from tasks.family import family_structure
from tasks.registry import task_from_payloads


class EvaluatorWorker:
    """Judges candidates with its own warm sandbox (or one it is given, which it then does not close)."""

    def __init__(self, task_id: str, options: VerifyOptions, task_files: list[dict] | None = None,
                 sandbox: Sandbox | None = None):
        self.task = task_from_payloads(task_id, task_files)
        self.options = options
        self._own = sandbox is None
        self.sandbox = sandbox or Sandbox()
        _warm_up(self.sandbox, self.task, structure=options.judge)
        self.where = f"{socket.gethostname()}:{os.getpid()}"
        self.node = ray.get_runtime_context().get_node_id() if ray.is_initialized() else ""

    def evaluate(self, candidate: Candidate) -> Evaluation:
        start, profile = time.perf_counter(), Profile()
        verdict = verify(self.task, candidate.to_submission(), self.options, self.sandbox, profile)
        verdict.feedback = with_chain(verdict.feedback, candidate.derivation)   # the next prompt sees the chain
        return Evaluation(candidate.id, verdict, score_of(verdict, candidate.code), time.perf_counter() - start,
                          self.where, self.node, tuple(profile.stages))

    def close(self) -> None:
        if self._own:
            self.sandbox.close()


def _warm_up(sandbox: Sandbox, task, structure: bool = True) -> None:
    """Start the sandbox's fork server and, with ``structure``, analyse the task's structure (the
    judge's class check reads it; it is cached per process) while the first proposals are written,
    not in the first evaluation. Without the judge nothing reads it: the analysis (about a CPU
    second for P01, while the run's other actors start) is skipped. Whatever fails here fails
    again where it is needed and is reported there."""
    try:
        sandbox.start()
    except (RuntimeError, OSError):
        pass
    if not structure:
        return
    try:
        family_structure(task)
    except Exception:  # noqa: BLE001 - the judge meets the same error and reports it in the verdict
        pass
