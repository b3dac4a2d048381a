"""Where proposals and evaluations run: Ray actors, or this process.

Both pools offer the same calls, yielding results as they complete, so the engine does not know
which one it drives: :class:`RayPool` gives each free actor handle the next request and collects
them with ``ray.wait``; :class:`LocalPool` calls plain workers one after another (the benchmark
protocol and small tools use it; it needs no Ray); :class:`ExecutorPool` runs evaluations on
``concurrent.futures`` executors (``evolve perf search``'s processes). Evaluations are submitted in batches
(``submit_evaluations`` returns a ticket) and collected per batch (``collect``): a batch queues
behind the earlier ones and each of its evaluations starts on the first actor that is free, which
is how the engine overlaps one generation's evaluations with the next. Each result goes to its
batch's ``arrived`` callback the moment it comes in, whichever batch is being collected, so the
engine journals it at once. ``evaluate`` is a batch submitted and collected in one call.

Actors die: a node is lost, the OOM killer picks one, someone calls ``ray.kill``. An
:class:`ActorSet` makes its actors from one factory and replaces a dead one with a new actor from
the same factory; :class:`RayPool` then sends the requests the dead actor held to its
replacement. A request's result is handed to the engine (and journaled) only once, when it
arrives, so nothing is lost or journaled twice. A request whose actor dies ``MAX_ATTEMPTS``
times running (a candidate that crashes every evaluator it meets) is a :class:`PoolError`.
An exception raised *inside* a worker is not a death: it propagates.

The wall clock. A request can wait forever on a Ray cluster: an actor that no node can place, a
cluster busy with someone else's work, a proposer whose provider never answers. So every wait of
:class:`RayPool` is bounded: past the deadline it was given (``set_deadline``, the run's wall-time
budget) it raises :class:`WallTimeReached`, and the engine ends the run there; whatever was still
in flight is abandoned (it was never journaled, so a resume redoes it).
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Callable, Iterator

import time

import ray
from ray.exceptions import RayActorError

from evolve.engine.termination import WallTimeReached
from evolve.store.failures import one_line
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
        why = one_line(str(error), 200)
        self.log(f"{self.kind} actor {index} died ({type(error).__name__}: {why}); replaced by a new one "
                 f"(incarnation {self.incarnations[index]}), its requests sent again")


class RayPool:
    """Requests to whichever actor of two :class:`ActorSet` s is free (plain lists of handles work
    too, without replacement)."""

    def __init__(self, proposers, evaluators):
        self.proposers = proposers if isinstance(proposers, ActorSet) else _FixedSet("proposer", proposers)
        self.evaluators = evaluators if isinstance(evaluators, ActorSet) else _FixedSet("evaluator", evaluators)
        self._proposals = _Dispatch(self.proposers, "propose")
        self._evaluations = _Dispatch(self.evaluators, "evaluate")

    def set_deadline(self, deadline: float | None) -> None:
        """No wait goes past ``deadline`` (``time.monotonic()`` seconds): :class:`WallTimeReached` instead."""
        self._proposals.deadline = self._evaluations.deadline = deadline

    def in_flight(self) -> int:
        """Requests sent or queued whose results have not arrived."""
        return sum(len(d.pending) + len(d.queue) for d in (self._proposals, self._evaluations))

    def propose(self, requests: list[ProposalRequest]) -> Iterator[tuple[int, Candidate]]:
        """(index into ``requests``, candidate) in order of completion. Evaluations that finish
        meanwhile are handed over (and the next queued one sent) without waiting for the proposals."""
        yield from self._proposals.collect(self._proposals.submit(requests), meanwhile=self._evaluations)

    def submit_evaluations(self, candidates: list[Candidate],
                           arrived: Callable[[int, Evaluation], None] | None = None) -> int:
        """Queue ``candidates`` behind earlier batches; a ticket for :meth:`collect`. ``arrived(index,
        evaluation)`` is called the moment each result comes in, whichever batch is being collected."""
        return self._evaluations.submit(candidates, arrived)

    def collect(self, ticket: int) -> Iterator[tuple[int, Evaluation]]:
        """(index into the batch, evaluation) in order of completion."""
        yield from self._evaluations.collect(ticket)

    def idle_evaluators(self) -> int:
        """Evaluator actors with nothing in flight or queued for them."""
        return self._evaluations.idle()

    def evaluate(self, candidates: list[Candidate]) -> Iterator[tuple[int, Evaluation]]:
        """(index into ``candidates``, evaluation) in order of completion."""
        yield from self.collect(self.submit_evaluations(candidates))

    def actors(self) -> list:
        return [*self.proposers.actors, *self.evaluators.actors]


class _FixedSet:
    def __init__(self, kind: str, actors: list):
        self.kind, self.actors = kind, list(actors)

    def log(self, message: str) -> None:
        pass

    def replace(self, index: int, dead, error: BaseException) -> None:
        raise error


class _Dispatch:
    """Batches of requests to one actor set: one request in flight per actor, the next queued one
    (oldest batch first) to whichever actor is free, so a slow evaluation holds up only its own
    actor; a request whose actor died goes again to its replacement."""

    POLL_S = 0.2   # how often a wait for one batch looks at another (``meanwhile``)

    def __init__(self, actors, method: str):
        self.actors, self.method = actors, method
        self.queue: deque = deque()          # (ticket, index, item) not sent yet
        self.pending: dict = {}              # object ref -> (ticket, index, item, slot, handle, attempt)
        self.busy: set[int] = set()          # actor slots with a request in flight
        self.ready: dict[int, deque] = {}    # ticket -> (index, result) arrived, not yet collected
        self.left: dict[int, int] = {}       # ticket -> results not yet collected
        self.arrived: dict[int, Callable | None] = {}
        self.tickets = 0
        self.deadline: float | None = None   # time.monotonic() past which no wait goes on

    def submit(self, items: list, arrived: Callable | None = None) -> int:
        ticket, self.tickets = self.tickets, self.tickets + 1
        self.ready[ticket], self.left[ticket], self.arrived[ticket] = deque(), len(items), arrived
        self.queue.extend((ticket, i, item) for i, item in enumerate(items))
        self._fill()
        return ticket

    def collect(self, ticket: int, meanwhile: "_Dispatch | None" = None) -> Iterator:
        try:
            while self.left[ticket]:
                if not self.ready[ticket]:
                    self._check_deadline(meanwhile)
                    if meanwhile is None:
                        self._wait_one(self._wait_s())
                    elif not self._wait_one(self.POLL_S):
                        meanwhile.poll()
                    continue
                self.left[ticket] -= 1
                yield self.ready[ticket].popleft()
        finally:
            if not self.left[ticket]:
                del self.ready[ticket], self.left[ticket], self.arrived[ticket]

    def _wait_s(self) -> float | None:
        """How long one wait may last: as long as it takes without a deadline, else until it (a few
        seconds at a time, so that a deadline is never overslept)."""
        if self.deadline is None:
            return None
        return min(5.0, max(0.05, self.deadline - time.monotonic()))

    def _check_deadline(self, other: "_Dispatch | None") -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            waiting = len(self.pending) + len(self.queue)
            if other is not None:
                waiting += len(other.pending) + len(other.queue)
            raise WallTimeReached(waiting)

    def idle(self) -> int:
        """Actors that would have nothing to do once the queue is handed out."""
        self.poll()
        return max(0, len(self.actors.actors) - len(self.busy) - len(self.queue))

    def poll(self) -> None:
        """Take every result that has arrived, without waiting."""
        while self.pending and self._wait_one(0):
            pass

    def _fill(self) -> None:
        for slot in range(len(self.actors.actors)):
            if slot not in self.busy and self.queue:
                self._send(*self.queue.popleft(), slot, 1)

    def _send(self, ticket: int, i: int, item, slot: int, attempt: int) -> None:
        handle = self.actors.actors[slot]
        self.pending[getattr(handle, self.method).remote(item)] = (ticket, i, item, slot, handle, attempt)
        self.busy.add(slot)

    def _wait_one(self, timeout: float | None) -> bool:
        """Handle one finished request (waiting at most ``timeout`` s; None: as long as it takes); whether one was."""
        done, _ = ray.wait(list(self.pending), num_returns=1, timeout=timeout)
        if not done:
            return False
        ticket, i, item, slot, handle, attempt = self.pending.pop(done[0])
        self.busy.discard(slot)
        try:
            result = ray.get(done[0])
        except RayActorError as exc:
            if attempt >= MAX_ATTEMPTS:
                raise PoolError(f"{self.actors.kind} actors died {attempt} times on the same request "
                                f"({type(exc).__name__}); giving up on it") from exc
            self.actors.replace(slot, handle, exc)
            self._send(ticket, i, item, slot, attempt + 1)
            self.actors.log(f"{self.method.replace('propose', 'proposal').replace('evaluate', 'evaluation')} of "
                            f"{getattr(item, 'id', i)} sent again (attempt {attempt + 1})")
            return True
        self._fill()
        if self.arrived[ticket] is not None:
            self.arrived[ticket](i, result)
        self.ready[ticket].append((i, result))
        return True


class LocalPool:
    """In-process workers (``ProposerWorker`` / ``EvaluatorWorker`` instances). Evaluations run
    when a batch is collected: first every batch submitted before it, then the batch itself."""

    def __init__(self, proposer, evaluator):
        self.proposer, self.evaluator = proposer, evaluator
        self._batches: list[tuple[list[Candidate], Callable | None]] = []
        self._done: dict[int, list[tuple[int, Evaluation]]] = {}   # ticket -> results not yet collected
        self._next = 0                                              # the first batch not yet run

    def propose(self, requests: list[ProposalRequest]) -> Iterator[tuple[int, Candidate]]:
        for i, r in enumerate(requests):
            yield i, self.proposer.propose(r)

    def submit_evaluations(self, candidates: list[Candidate],
                           arrived: Callable[[int, Evaluation], None] | None = None) -> int:
        self._batches.append((list(candidates), arrived))
        return len(self._batches) - 1

    def collect(self, ticket: int) -> Iterator[tuple[int, Evaluation]]:
        while self._next < ticket:
            self._done[self._next] = list(self._run(self._next))
            self._next += 1
        if ticket == self._next:
            self._next += 1
            yield from self._run(ticket)
        else:
            yield from self._done.pop(ticket, [])

    def _run(self, ticket: int) -> Iterator[tuple[int, Evaluation]]:
        candidates, arrived = self._batches[ticket]
        self._batches[ticket] = ([], None)
        for i, c in enumerate(candidates):
            evaluation = self.evaluator.evaluate(c)
            if arrived is not None:
                arrived(i, evaluation)
            yield i, evaluation

    def evaluate(self, candidates: list[Candidate]) -> Iterator[tuple[int, Evaluation]]:
        yield from self.collect(self.submit_evaluations(candidates))

    def idle_evaluators(self) -> int:
        """0: nothing runs before its batch is collected, so there is never a reason to hurry."""
        return 0


class ExecutorPool:
    """Evaluations on ``concurrent.futures`` executors, one in flight on each (each executor one
    evaluator: a process of ``evolve perf search``, a thread in the tests), dispatched as the Ray
    pool does: batches queue behind each other, the next queued evaluation to whichever executor is
    free; ``evaluate_fn(candidate)`` runs on the executor. Proposals run in a thread of this
    process, one at a time, while this thread goes on handing finished evaluations over and
    sending the next (as the Ray pool does while its proposer actor works): an evaluator that
    finishes during a long proposal does not wait for it."""

    def __init__(self, proposer, executors: list, evaluate_fn: Callable[[Candidate], Evaluation]):
        self.proposer, self.executors, self.evaluate_fn = proposer, list(executors), evaluate_fn
        self._free = list(self.executors)     # executors with nothing in flight
        self._queue: deque = deque()          # (ticket, index, candidate) not sent yet
        self._futures: dict = {}              # future -> (ticket, index, executor)
        self._left: list[int] = []            # per ticket: results not yet collected
        self._ready: list[deque] = []         # per ticket: (index, evaluation) arrived
        self._arrived: list = []              # per ticket: the engine's callback

    def propose(self, requests: list[ProposalRequest]) -> Iterator[tuple[int, Candidate]]:
        with ThreadPoolExecutor(1, thread_name_prefix="proposer") as proposing:
            for i, r in enumerate(requests):
                proposal = proposing.submit(self.proposer.propose, r)
                while not proposal.done():
                    wait([proposal, *self._futures], return_when=FIRST_COMPLETED)
                    self._take_done()
                yield i, proposal.result()

    def submit_evaluations(self, candidates: list[Candidate],
                           arrived: Callable[[int, Evaluation], None] | None = None) -> int:
        ticket = len(self._left)
        self._left.append(len(candidates))
        self._ready.append(deque())
        self._arrived.append(arrived)
        self._queue.extend((ticket, i, c) for i, c in enumerate(candidates))
        self._fill()
        return ticket

    def collect(self, ticket: int) -> Iterator[tuple[int, Evaluation]]:
        while self._left[ticket]:
            if not self._ready[ticket]:
                done, _ = wait(self._futures, return_when=FIRST_COMPLETED)
                for f in done:
                    self._hand_over(f)
                self._fill()
                continue
            self._left[ticket] -= 1
            yield self._ready[ticket].popleft()

    def evaluate(self, candidates: list[Candidate]) -> Iterator[tuple[int, Evaluation]]:
        yield from self.collect(self.submit_evaluations(candidates))

    def idle_evaluators(self) -> int:
        """Executors with nothing in flight or queued for them (results that came in are taken first)."""
        self._take_done()
        return max(0, len(self._free) - len(self._queue))

    def _take_done(self) -> None:
        for f in [f for f in self._futures if f.done()]:
            self._hand_over(f)
        self._fill()

    def _hand_over(self, f) -> None:
        t, i, executor = self._futures.pop(f)
        self._free.append(executor)
        result = f.result()
        if self._arrived[t] is not None:   # journaled at once, whichever batch is collected
            self._arrived[t](i, result)
        self._ready[t].append((i, result))

    def _fill(self) -> None:
        while self._free and self._queue:
            t, i, cand = self._queue.popleft()
            executor = self._free.pop(0)
            self._futures[executor.submit(self.evaluate_fn, cand)] = (t, i, executor)


class ActorProxy:
    """Calls a Ray actor's methods as if it were a local object (``proxy.f(x)`` is
    ``ray.get(actor.f.remote(x))``), so code that holds one, a strategy's database, say, does
    not know where the object lives."""

    def __init__(self, actor):
        self._actor = actor

    def __getattr__(self, name: str):
        method = getattr(self._actor, name)
        return lambda *args, **kwargs: ray.get(method.remote(*args, **kwargs))
