"""The two worker kinds of a search, as plain classes (the runtime wraps them in Ray actors, or
calls them in-process).

A proposer worker holds one instance of every proposer the run mixes and answers
:class:`~search.records.ProposalRequest` s; an evaluator worker judges one
:class:`~search.candidate.Candidate` in its own warm sandbox and returns an
:class:`~search.records.Evaluation`. Only these typed records cross process boundaries, never
the population. A user task reaches a worker as its file's text
(``tasks.registry.TaskFile.payload``), registered at start-up: a worker may be on another node.
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
from search.proposers import ProposerContext, proposer_class
from search.records import Evaluation, ProposalRequest
from tasks.family import family_structure
from tasks.registry import get_task, register_task_payloads


class ProposerWorker:
    """Builds candidates with the proposers whose weight is positive (``sections``: name -> options)."""

    def __init__(self, task_id: str, sections: dict, context: ProposerContext, task_files: list[dict] | None = None):
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm must never fetch its price table
        self.task = _task(task_id, task_files)
        self.proposers = {name: proposer_class(name)(self.task, options, context)
                          for name, options in sections.items() if options.weight > 0}

    def propose(self, request: ProposalRequest) -> Candidate:
        return self.proposers[request.proposer].propose(request)


class EvaluatorWorker:
    """Judges candidates with its own warm sandbox (or one it is given, which it then does not close)."""

    def __init__(self, task_id: str, options: VerifyOptions, task_files: list[dict] | None = None,
                 sandbox: Sandbox | None = None):
        self.task = _task(task_id, task_files)
        self.options = options
        self._own = sandbox is None
        self.sandbox = sandbox or Sandbox()
        _warm_up(self.sandbox, self.task)
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


def _warm_up(sandbox: Sandbox, task) -> None:
    """Start the sandbox's fork server and analyse the task's structure (the judge's class check
    reads it; it is cached per process) while the first proposals are written, not in the first
    evaluation. Whatever fails here fails again where it is needed and is reported there."""
    try:
        sandbox.start()
    except (RuntimeError, OSError):
        pass
    try:
        family_structure(task)
    except Exception:  # noqa: BLE001 - the judge meets the same error and reports it in the verdict
        pass


def _task(task_id: str, task_files: list[dict] | None):
    """The task, after registering the user task files shipped with the request: a worker is its
    own process (maybe on another node), so it gets the files' text, not their paths."""
    register_task_payloads(task_files)
    return get_task(task_id)
