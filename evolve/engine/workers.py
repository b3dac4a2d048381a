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
    """Builds candidates with the proposers whose weight is positive (``sections``: name -> options).

    A proposer never ends a run: one that raises (while it is built, or in ``propose``) yields a
    failed candidate (``error_kind`` "proposer") naming the exception, which the run journals and
    counts like any failed proposal, and the next slot is asked again."""

    def __init__(self, task_id: str, sections: dict, context: ProposerContext, task_files: list[dict] | None = None):
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm must never fetch its price table
        self.task = _task(task_id, task_files)
        self.proposers: dict = {}
        self.broken: dict[str, str] = {}          # proposer name -> why it could not be built
        for name, options in sections.items():
            if options.weight > 0:
                try:
                    self.proposers[name] = proposer_class(name)(self.task, options, context)
                except Exception as exc:  # noqa: BLE001 - any fault of a plugin is reported, not raised
                    self.broken[name] = f"it could not be set up: {_exception_line(exc)}"

    def propose(self, request: ProposalRequest) -> Candidate:
        name = request.proposer
        if name in self.broken:
            return _proposer_failed(request, self.task.id, self.broken[name])
        try:
            return self.proposers[name].propose(request)
        except Exception as exc:  # noqa: BLE001 - see the class docstring
            return _proposer_failed(request, self.task.id, f"it raised {_exception_line(exc)}")


def _exception_line(exc: BaseException, limit: int = 300) -> str:
    """``Kind: message`` on one line, cut at a word boundary (an exception's text may be long)."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."


def _proposer_failed(request: ProposalRequest, task_id: str, why: str) -> Candidate:
    parent = [request.parent.id] if request.parent is not None else []
    return Candidate.failed(request.id, task_id, f"proposer {request.proposer}: {why}", kind="proposer",
                            proposer=request.proposer, parent_ids=parent)


class EvaluatorWorker:
    """Judges candidates with its own warm sandbox (or one it is given, which it then does not close)."""

    def __init__(self, task_id: str, options: VerifyOptions, task_files: list[dict] | None = None,
                 sandbox: Sandbox | None = None):
        self.task = _task(task_id, task_files)
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


def _task(task_id: str, task_files: list[dict] | None):
    """The task, after registering the user task files shipped with the request: a worker is its
    own process (maybe on another node), so it gets the files' text, not their paths."""
    register_task_payloads(task_files)
    return get_task(task_id)
