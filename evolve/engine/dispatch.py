"""The one dispatcher behind every pool: batches of requests to workers that each run one request at
a time, results handed over as they arrive.

What differs between Ray actors, ``concurrent.futures`` executors and plain objects in this
process is small, so it is all a pool is made of (:mod:`evolve.engine.pools`,
:mod:`evolve.engine.ray_pool`), as cotengra's ``parallel.py`` puts an executor-like face on each
backend: a set of :class:`Workers` (``submit(slot, item)`` returns a future, ``result()`` gives
what the worker returned) and a :data:`Wait` that tells which futures are done. Everything else
is here, once:

- Batches and tickets. Requests are submitted in batches (a ticket each) and collected per batch.
  A batch queues behind the earlier ones; each of its requests goes to the first worker that is
  free, so a slow evaluation holds up only its own worker. This is how the engine overlaps one
  generation's evaluations with the next.
- Arrival. Every result goes to its batch's ``arrived`` callback once, the moment it comes in,
  whichever batch is being collected (the engine journals it at once), and the next queued request
  goes to the worker that became free. One wait covers proposals and evaluations together, so an
  evaluator that finishes during a long proposal is handed its next request without waiting for
  the proposal.
- Deaths. A worker may die (a Ray actor: a lost node, the OOM killer, ``ray.kill``): its workers
  say which exceptions mean that (``deaths``). The dead worker is replaced (``replace``) and its
  request sent again to the replacement; a request whose worker dies ``MAX_ATTEMPTS`` times running
  (a candidate that crashes every evaluator it meets) is a :class:`PoolError`. An exception
  raised *inside* a worker is not a death: it propagates.
- The wall clock. A request can wait forever (an actor that no node can place, a provider that
  never answers), so no wait goes past the deadline (``set_deadline``, the run's wall-time budget):
  past it :class:`~evolve.engine.termination.WallTimeReached` is raised and the engine ends the run
  there; whatever was still in flight is abandoned (never journaled, so a resume redoes it).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol, runtime_checkable

from evolve.engine.protocols import Arrived
from evolve.engine.termination import WallTimeReached
from search.candidate import Candidate
from search.records import Evaluation, ProposalRequest

MAX_ATTEMPTS = 3
LONGEST_WAIT_S = 5.0   # with a deadline, waits last at most this long, so that it is never overslept


class PoolError(Exception):
    """Work that could not be done because its workers kept dying."""


class Future(Protocol):
    def result(self) -> Any:
        """What the worker returned (its exception raised, or one of its set's ``deaths``)."""


#: ``wait(futures, timeout)``: those of ``futures`` that are done, at least one unless ``timeout``
#: seconds passed first (None: no limit; 0: do not wait). A worker that runs only when waited for
#: (:attr:`Workers.background` false) runs the first of ``futures`` on any wait but ``timeout`` 0.
Wait = Callable[[list, float | None], list]


@runtime_checkable
class Workers(Protocol):
    """``len(workers)`` workers (slots), each running one request at a time: what the dispatcher drives."""

    kind: str                                   # what they are, in messages: "evaluator"
    deaths: tuple[type[BaseException], ...]     # what ``result()`` raises when the worker died, not the work
    background: bool                            # a request runs once sent (else only when waited for)

    def __len__(self) -> int:
        """How many workers (slots 0 .. len - 1)."""

    def submit(self, slot: int, item) -> Future:
        """Send ``item`` to the worker at ``slot``."""

    def replace(self, slot: int, future: Future, error: BaseException) -> None:
        """The worker ``future`` was sent to, at ``slot``, died of ``error``: put a new one there unless
        that was done already (raise ``error`` when workers of this kind cannot be replaced)."""

    def log(self, message: str) -> None:
        """Say what happened to a worker (run.log)."""


@dataclass
class _Lane:
    """One set of workers and the requests queued for it."""
    noun: str                                             # what a request is, in messages: "evaluation"
    workers: Workers
    queue: deque = field(default_factory=deque)           # (ticket, index, item) not sent yet
    busy: set[int] = field(default_factory=set)           # slots with a request in flight
    #: the slot after the last one sent to: free slots are taken in turn from here, so requests that come
    #: one at a time (each evaluation as its proposal arrives) spread over every worker, on every node,
    #: instead of all going to the first one whenever it is free again
    cursor: int = 0


@dataclass
class _Batch:
    lane: _Lane
    left: int                                             # results not yet collected
    arrived: Arrived | None
    ready: deque = field(default_factory=deque)           # (index, result) arrived, not yet collected


@dataclass
class _Sent:
    lane: _Lane
    ticket: int
    index: int
    item: Any
    slot: int
    attempt: int


class Dispatcher:
    """A :class:`~evolve.engine.protocols.Pool` over two sets of :class:`Workers`, proposers and
    evaluators, whose futures one ``wait`` understands."""

    def __init__(self, proposers: Workers, evaluators: Workers, wait: Wait):
        self.proposers, self.evaluators, self._wait = proposers, evaluators, wait
        self._proposals, self._evaluations = _Lane("proposal", proposers), _Lane("evaluation", evaluators)
        self._pending: dict[Any, _Sent] = {}       # future -> what was sent
        self._batches: dict[int, _Batch] = {}      # ticket -> batch not yet collected
        self._tickets = 0
        self.deadline: float | None = None         # time.monotonic() past which no wait goes on

    # -- the pool -------------------------------------------------------------------------------
    def set_deadline(self, deadline: float | None) -> None:
        """No wait goes past ``deadline`` (``time.monotonic()`` seconds): :class:`WallTimeReached` instead."""
        self.deadline = deadline

    def in_flight(self) -> int:
        """Requests sent or queued whose results have not arrived."""
        return len(self._pending) + len(self._proposals.queue) + len(self._evaluations.queue)

    def propose(self, requests: list[ProposalRequest]) -> Iterator[tuple[int, Candidate]]:
        """(index into ``requests``, candidate) in order of completion. Evaluations that finish
        meanwhile are handed over (and the next queued one sent) without waiting for the proposals."""
        yield from self._collect(self._submit(self._proposals, requests, None))

    def submit_evaluations(self, candidates: list[Candidate], arrived: Arrived | None = None) -> int:
        """Queue ``candidates`` behind earlier batches; a ticket for :meth:`collect`. ``arrived(index,
        evaluation)`` is called the moment each result comes in, whichever batch is being collected."""
        return self._submit(self._evaluations, candidates, arrived)

    def collect(self, ticket: int) -> Iterator[tuple[int, Evaluation]]:
        """(index into the batch, evaluation) in order of completion."""
        yield from self._collect(ticket)

    def evaluate(self, candidates: list[Candidate]) -> Iterator[tuple[int, Evaluation]]:
        """(index into ``candidates``, evaluation) in order of completion."""
        yield from self.collect(self.submit_evaluations(candidates))

    def idle_evaluators(self) -> int:
        """Evaluators with nothing in flight or queued for them (results that came in are taken
        first). Workers that run only when waited for are never idle: nothing gains by hurrying."""
        lane = self._evaluations
        if not lane.workers.background:
            return 0
        self._poll()
        return max(0, len(lane.workers) - len(lane.busy) - len(lane.queue))

    # -- batches --------------------------------------------------------------------------------
    def _submit(self, lane: _Lane, items: list, arrived: Arrived | None) -> int:
        ticket, self._tickets = self._tickets, self._tickets + 1
        self._batches[ticket] = _Batch(lane, len(items), arrived)
        lane.queue.extend((ticket, i, item) for i, item in enumerate(items))
        self._fill(lane)
        return ticket

    def _collect(self, ticket: int) -> Iterator:
        batch = self._batches[ticket]
        try:
            while batch.left:
                if not batch.ready:
                    self._check_deadline()
                    self._wait_one(batch.lane, self._wait_s())
                    continue
                batch.left -= 1
                yield batch.ready.popleft()
        finally:
            if not batch.left:
                self._batches.pop(ticket, None)

    def _wait_s(self) -> float | None:
        """How long one wait may last: as long as it takes without a deadline, else until it (a few
        seconds at a time, so that a deadline is never overslept)."""
        if self.deadline is None:
            return None
        return min(LONGEST_WAIT_S, max(0.05, self.deadline - time.monotonic()))

    def _check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise WallTimeReached(self.in_flight())

    def _poll(self) -> None:
        """Take every result that has arrived, without waiting."""
        while self._pending and self._wait_one(self._evaluations, 0):
            pass

    # -- requests -------------------------------------------------------------------------------
    def _fill(self, lane: _Lane) -> None:
        size = len(lane.workers)
        for k in range(size):
            slot = (lane.cursor + k) % size
            if slot not in lane.busy and lane.queue:
                self._send(lane, *lane.queue.popleft(), slot, 1)
                lane.cursor = (slot + 1) % size

    def _send(self, lane: _Lane, ticket: int, index: int, item, slot: int, attempt: int) -> None:
        self._pending[lane.workers.submit(slot, item)] = _Sent(lane, ticket, index, item, slot, attempt)
        lane.busy.add(slot)

    def _wait_one(self, prefer: _Lane, timeout: float | None) -> bool:
        """Handle one finished request, waiting at most ``timeout`` s (None: as long as it takes); whether
        one was. ``prefer``'s requests come first in the wait (the one an in-process worker runs)."""
        if not self._pending:
            raise RuntimeError("results are owed but no request is in flight")
        futures = sorted(self._pending, key=lambda f: self._pending[f].lane is not prefer)
        done = self._wait(futures, timeout)
        if not done:
            return False
        future = done[0]
        sent = self._pending.pop(future)
        lane = sent.lane
        lane.busy.discard(sent.slot)
        try:
            result = future.result()
        except lane.workers.deaths as exc:
            if sent.attempt >= MAX_ATTEMPTS:
                raise PoolError(f"{lane.workers.kind}s died {sent.attempt} times on the same request "
                                f"({type(exc).__name__}); giving up on it") from exc
            lane.workers.replace(sent.slot, future, exc)
            self._send(lane, sent.ticket, sent.index, sent.item, sent.slot, sent.attempt + 1)
            lane.workers.log(f"{lane.noun} of {getattr(sent.item, 'id', sent.index)} sent again "
                             f"(attempt {sent.attempt + 1})")
            return True
        self._fill(lane)
        batch = self._batches[sent.ticket]
        if batch.arrived is not None:
            batch.arrived(sent.index, result)
        batch.ready.append((sent.index, result))
        return True
