"""Pools without Ray: workers in this process (:class:`LocalPool`) or on ``concurrent.futures``
executors (:class:`ExecutorPool`).

Both are the one dispatcher (:mod:`evolve.engine.dispatch`: batches, tickets, ``arrived``
callbacks, the deadline) over other workers, so the engine drives them as it drives the Ray pool
(:mod:`evolve.engine.ray_pool`). None of them dies as an actor does: an exception raised by a
worker propagates.

- :class:`InProcess`: one plain object, called in this thread when its result is waited for. The
  benchmark protocol and small tools use it. Evaluations run when a batch is collected, first every
  batch submitted before it, then the batch itself; nothing runs meanwhile, so no evaluator is
  ever idle and the engine queues each generation's evaluations together, longest first.
- :class:`Executors`: ``concurrent.futures`` executors, one request in flight on each (each
  executor one worker: a process of ``evolve perf search``, a thread in the tests).
"""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Any, Callable

from evolve.engine.dispatch import Dispatcher
from search.candidate import Candidate
from search.records import Evaluation


class Deferred:
    """A call made when it is first waited for (:func:`run_first`); ``result()`` gives its outcome."""

    __slots__ = ("call", "item", "value", "error")

    def __init__(self, call: Callable, item):
        self.call, self.item, self.value, self.error = call, item, None, None

    def run(self) -> None:
        try:
            self.value = self.call(self.item)
        except BaseException as exc:  # noqa: BLE001 - raised again by result(), where the dispatcher asks
            self.error = exc

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


def run_first(futures: list[Deferred], timeout: float | None) -> list[Deferred]:
    """The wait of in-process workers: any wait but a poll (``timeout`` 0) runs the first request."""
    if timeout == 0 or not futures:
        return []
    futures[0].run()
    return [futures[0]]


def first_completed(futures: list, timeout: float | None) -> list:
    """The wait of ``concurrent.futures``: the done ones, in the order given."""
    done, _ = wait(futures, timeout=timeout, return_when=FIRST_COMPLETED)
    return [f for f in futures if f in done]


class InProcess:
    """One worker, ``getattr(worker, method)(item)`` in this thread when its result is waited for."""

    deaths: tuple[type[BaseException], ...] = ()
    background = False

    def __init__(self, kind: str, worker, method: str):
        self.kind, self.worker, self.method = kind, worker, method

    def __len__(self) -> int:
        return 1

    def submit(self, slot: int, item) -> Deferred:
        return Deferred(getattr(self.worker, self.method), item)

    def replace(self, slot: int, future, error: BaseException) -> None:
        raise error

    def log(self, message: str) -> None:
        pass


class Executors:
    """``concurrent.futures`` executors, one request in flight on each; ``call(item)`` runs there."""

    deaths: tuple[type[BaseException], ...] = ()
    background = True

    def __init__(self, kind: str, executors: list, call: Callable):
        self.kind, self.executors, self.call = kind, list(executors), call

    def __len__(self) -> int:
        return len(self.executors)

    def submit(self, slot: int, item):
        return self.executors[slot].submit(self.call, item)

    def replace(self, slot: int, future, error: BaseException) -> None:
        raise error

    def log(self, message: str) -> None:
        pass


class LocalPool(Dispatcher):
    """In-process workers (``ProposerWorker`` / ``EvaluatorWorker`` instances, or anything with their
    ``propose`` / ``evaluate``), called one after another; needs no Ray."""

    def __init__(self, proposer, evaluator):
        self.proposer, self.evaluator = proposer, evaluator
        super().__init__(InProcess("proposer", proposer, "propose"), InProcess("evaluator", evaluator, "evaluate"),
                         run_first)


class ExecutorPool(Dispatcher):
    """Evaluations on ``concurrent.futures`` executors (``evaluate_fn(candidate)`` runs there), the
    next queued one to whichever executor is free. Proposals run in a thread of this process, one
    at a time, while this thread goes on handing finished evaluations over and sending the next
    (as the Ray pool does while its proposer actor works): an evaluator that finishes during a long
    proposal does not wait for it."""

    def __init__(self, proposer, executors: list, evaluate_fn: Callable[[Candidate], Evaluation]):
        self.proposer, self.executors, self.evaluate_fn = proposer, list(executors), evaluate_fn
        self.proposing = ThreadPoolExecutor(1, thread_name_prefix="proposer")
        super().__init__(Executors("proposer", [self.proposing], self._propose),
                         Executors("evaluator", self.executors, evaluate_fn), first_completed)

    def _propose(self, request):
        return self.proposer.propose(request)
