"""What the engine asks of the two things it is given: a :class:`Pool` that runs proposals and
evaluations, and a :class:`Store` that records the run.

Both are declared, not duck-typed: the engine calls only what is here.

- Pools: :class:`~evolve.engine.pools.RayPool` (Ray actors), :class:`~evolve.engine.pools.LocalPool`
  (this process) and :class:`~evolve.engine.pools.ExecutorPool` (``concurrent.futures``), all
  one dispatcher (:mod:`evolve.engine.dispatch`) over different workers.
- Stores: :class:`~evolve.store.run_store.RunStore` (the journal, snapshots and status.json of a
  run directory) and :class:`~evolve.bench.trial.MemoryStore` (a benchmark trial: events in a list).
"""

from __future__ import annotations

from typing import Callable, Iterator, Protocol, runtime_checkable

from evaluators.verdict import Verdict
from search.candidate import Candidate
from search.records import Evaluation, ProposalRequest

#: ``arrived(index into the batch, evaluation)``: called the moment an evaluation comes in
Arrived = Callable[[int, Evaluation], None]


@runtime_checkable
class Pool(Protocol):
    """Runs proposals and evaluations, yielding results as they complete (in any order).

    Evaluations are submitted in batches and collected per batch: a batch queues behind the
    earlier ones, which is how the engine overlaps one generation's evaluations with the next.
    Every result goes to its batch's ``arrived`` callback once, as it comes in, whichever batch is
    being collected, so the engine journals it at once. No wait goes past the deadline: the pool
    raises :class:`~evolve.engine.termination.WallTimeReached` there."""

    def set_deadline(self, deadline: float | None) -> None:
        """No wait goes past ``deadline`` (``time.monotonic()`` seconds; None: none)."""

    def propose(self, requests: list[ProposalRequest]) -> Iterator[tuple[int, Candidate]]:
        """(index into ``requests``, candidate) in order of completion; evaluations that finish
        meanwhile are handed over (and the next queued one started)."""

    def submit_evaluations(self, candidates: list[Candidate], arrived: Arrived | None = None) -> int:
        """Queue ``candidates`` behind the earlier batches; a ticket for :meth:`collect`."""

    def collect(self, ticket: int) -> Iterator[tuple[int, Evaluation]]:
        """(index into the batch, evaluation) in order of completion."""

    def evaluate(self, candidates: list[Candidate]) -> Iterator[tuple[int, Evaluation]]:
        """A batch submitted and collected in one call."""

    def idle_evaluators(self) -> int:
        """Evaluators that would have nothing to do once the queued evaluations are handed out."""

    def in_flight(self) -> int:
        """Requests sent or queued whose results have not arrived."""


@runtime_checkable
class Store(Protocol):
    """Where the engine records a run as it goes."""

    def record(self, event) -> int:
        """Keep one run event (:mod:`evolve.store.events`); its sequence number."""

    def save_snapshot(self, state: dict, journal_seq: int) -> object:
        """Keep the engine's ``state``, which covers the events up to ``journal_seq``."""

    def write_best(self, candidate: Candidate, verdict: Verdict) -> None:
        """Keep the best program so far."""

    def log(self, message: str) -> None:
        """One line of the run's log."""

    def set_status(self, state: str, **counts) -> None:
        """The run's state and counts, for whoever watches it."""
