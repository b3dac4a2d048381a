"""Where proposals and evaluations run: Ray actors, or this process.

Both pools offer the same two calls, yielding results as they complete, so the engine does not
know which one it drives: :class:`RayPool` spreads requests round-robin over actor handles and
collects them with ``ray.wait``; :class:`LocalPool` calls plain workers one after another (the
benchmark protocol and small tools use it; it needs no Ray).
"""

from __future__ import annotations

from typing import Iterator

import ray

from search.candidate import Candidate
from search.records import Evaluation, ProposalRequest


class RayPool:
    def __init__(self, proposers: list, evaluators: list):
        self.proposers, self.evaluators = proposers, evaluators

    def propose(self, requests: list[ProposalRequest]) -> Iterator[tuple[int, Candidate]]:
        """(index into ``requests``, candidate) in order of completion."""
        pending = {self.proposers[i % len(self.proposers)].propose.remote(r): i for i, r in enumerate(requests)}
        yield from _drain(pending)

    def evaluate(self, candidates: list[Candidate]) -> Iterator[tuple[int, Evaluation]]:
        """(index into ``candidates``, evaluation) in order of completion."""
        pending = {self.evaluators[i % len(self.evaluators)].evaluate.remote(c): i for i, c in enumerate(candidates)}
        yield from _drain(pending)


def _drain(pending: dict) -> Iterator:
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        yield pending.pop(done[0]), ray.get(done[0])


class LocalPool:
    """In-process workers (``ProposerWorker`` / ``EvaluatorWorker`` instances)."""

    def __init__(self, proposer, evaluator):
        self.proposer, self.evaluator = proposer, evaluator

    def propose(self, requests: list[ProposalRequest]) -> Iterator[tuple[int, Candidate]]:
        for i, r in enumerate(requests):
            yield i, self.proposer.propose(r)

    def evaluate(self, candidates: list[Candidate]) -> Iterator[tuple[int, Evaluation]]:
        for i, c in enumerate(candidates):
            yield i, self.evaluator.evaluate(c)


class ActorProxy:
    """Calls a Ray actor's methods as if it were a local object (``proxy.f(x)`` is
    ``ray.get(actor.f.remote(x))``), so code that holds one, a strategy's database, say, does
    not know where the object lives."""

    def __init__(self, actor):
        self._actor = actor

    def __getattr__(self, name: str):
        method = getattr(self._actor, name)
        return lambda *args, **kwargs: ray.get(method.remote(*args, **kwargs))
