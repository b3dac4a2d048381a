"""Where proposals and evaluations run: Ray actors, or this process.

Both pools offer the same two calls, yielding results as they complete, so the engine does not
know which one it drives: :class:`RayPool` gives each free actor handle the next request and
collects them with ``ray.wait``; :class:`LocalPool` calls plain workers one after another (the
benchmark protocol and small tools use it; it needs no Ray).

Actors die: a node is lost, the OOM killer picks one, someone calls ``ray.kill``. An
:class:`ActorSet` makes its actors from one factory and replaces a dead one with a new actor from
the same factory; :class:`RayPool` then sends the requests the dead actor held to its
replacement. A request's result is handed to the engine (and journaled) only once, when it
arrives, so nothing is lost or journaled twice. A request whose actor dies ``MAX_ATTEMPTS``
times running (a candidate that crashes every evaluator it meets) is a :class:`PoolError`.
An exception raised *inside* a worker is not a death: it propagates.
"""

from __future__ import annotations

from typing import Callable, Iterator

import ray
from ray.exceptions import RayActorError

from search.candidate import Candidate
from search.records import Evaluation, ProposalRequest

MAX_ATTEMPTS = 3


class PoolError(Exception):
    """Work that could not be done because its actors kept dying."""


class ActorSet:
    """``size`` actors made by ``make(index, incarnation)``; ``replace`` swaps a dead one for a new one."""

    def __init__(self, kind: str, make: Callable[[int, int], object], size: int, log: Callable[[str], None] = print):
        self.kind, self.make, self.log = kind, make, log
        self.incarnations = [0] * size
        self.actors = [make(i, 0) for i in range(size)]
        self.replaced = 0

    def __len__(self) -> int:
        return len(self.actors)

    def replace(self, index: int, dead, error: BaseException) -> None:
        """Put a new actor at ``index`` if ``dead`` is still there (several requests may report one death)."""
        if self.actors[index] is not dead:
            return
        try:
            ray.kill(dead)
        except Exception:  # noqa: BLE001 - it is dead already, or its node is gone
            pass
        self.incarnations[index] += 1
        self.actors[index] = self.make(index, self.incarnations[index])
        self.replaced += 1
        why = " ".join(str(error).split())[:200]
        self.log(f"{self.kind} actor {index} died ({type(error).__name__}: {why}); replaced by a new one "
                 f"(incarnation {self.incarnations[index]}), its requests sent again")


class RayPool:
    """Requests to whichever actor of two :class:`ActorSet` s is free (plain lists of handles work
    too, without replacement)."""

    def __init__(self, proposers, evaluators):
        self.proposers = proposers if isinstance(proposers, ActorSet) else _FixedSet("proposer", proposers)
        self.evaluators = evaluators if isinstance(evaluators, ActorSet) else _FixedSet("evaluator", evaluators)

    def propose(self, requests: list[ProposalRequest]) -> Iterator[tuple[int, Candidate]]:
        """(index into ``requests``, candidate) in order of completion."""
        yield from _run(self.proposers, "propose", requests)

    def evaluate(self, candidates: list[Candidate]) -> Iterator[tuple[int, Evaluation]]:
        """(index into ``candidates``, evaluation) in order of completion."""
        yield from _run(self.evaluators, "evaluate", candidates)

    def actors(self) -> list:
        return [*self.proposers.actors, *self.evaluators.actors]


class _FixedSet:
    def __init__(self, kind: str, actors: list):
        self.kind, self.actors = kind, list(actors)

    def log(self, message: str) -> None:
        pass

    def replace(self, index: int, dead, error: BaseException) -> None:
        raise error


def _run(actors, method: str, items: list) -> Iterator:
    """Send ``items`` to the actors one at a time each, the next item to whichever actor is free (a slow
    evaluation holds up only its own actor, not the items queued behind it round-robin); yield
    (index, result) as they complete, resending the items of an actor that died to its replacement."""
    pending: dict = {}
    queue = list(range(len(items)))[::-1]          # popped from the end: items go out in order

    def send(i: int, slot: int, attempt: int) -> None:
        handle = actors.actors[slot]
        pending[getattr(handle, method).remote(items[i])] = (i, slot, handle, attempt)

    for slot in range(min(len(actors.actors), len(items))):
        send(queue.pop(), slot, 1)
    while pending:
        (ref,), _ = ray.wait(list(pending), num_returns=1)
        i, slot, handle, attempt = pending.pop(ref)
        try:
            result = ray.get(ref)
        except RayActorError as exc:
            if attempt >= MAX_ATTEMPTS:
                raise PoolError(f"{actors.kind} actors died {attempt} times on the same request "
                                f"({type(exc).__name__}); giving up on it") from exc
            actors.replace(slot, handle, exc)
            send(i, slot, attempt + 1)
            actors.log(f"{method.replace('propose', 'proposal').replace('evaluate', 'evaluation')} of "
                       f"{getattr(items[i], 'id', i)} sent again (attempt {attempt + 1})")
            continue
        if queue:
            send(queue.pop(), slot, 1)
        yield i, result


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
