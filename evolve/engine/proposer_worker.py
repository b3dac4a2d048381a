"""The proposer side of a search as a plain class (the runtime wraps it in a Ray actor, or calls it
in-process): one instance of every proposer the run mixes, answering
:class:`~search.records.ProposalRequest` s with :class:`~search.candidate.Candidate` s. Only these
typed records cross process boundaries, never the population. A user task reaches the worker as
its file's text (``tasks.registry.TaskFile.payload``): a worker may be on another node. Kept apart
from the evaluator's module so that neither actor imports the other's half of the project (about a
CPU second each at every actor start).
"""

from __future__ import annotations

import os

from search.candidate import Candidate
from search.proposers import ProposerContext, proposer_class
from search.records import ProposalRequest
from tasks.registry import task_from_payloads


class ProposerWorker:
    """Builds candidates with the proposers whose weight is positive (``sections``: name -> options).

    A proposer never ends a run: one that raises (while it is built, or in ``propose``) yields a
    failed candidate (``error_kind`` "proposer") naming the exception, which the run journals and
    counts like any failed proposal, and the next slot is asked again."""

    def __init__(self, task_id: str, sections: dict, context: ProposerContext, task_files: list[dict] | None = None):
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm must never fetch its price table
        self.task = task_from_payloads(task_id, task_files)
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
