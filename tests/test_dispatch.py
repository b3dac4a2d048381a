"""The one dispatcher behind every pool (evolve/engine/dispatch.py), on workers that need no Ray:
batches queue behind each other and are handed over as they arrive, once; proposals and
evaluations share one wait; no wait goes past the deadline; a dead worker is replaced and its
request sent again, up to MAX_ATTEMPTS; the pools and stores are what the engine declares it needs."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from evolve.bench.trial import MemoryStore
from evolve.engine import ray_pool
from evolve.engine.dispatch import MAX_ATTEMPTS, Dispatcher, PoolError, Workers
from evolve.engine.pools import Executors, ExecutorPool, InProcess, LocalPool
from evolve.engine.protocols import Pool, Store
from evolve.engine.ray_pool import ActorCall, ActorSet, RayPool
from evolve.engine.termination import WallTimeReached
from evolve.store.run_store import RunStore


class Item:
    def __init__(self, id: str):
        self.id = id


class Died(Exception):
    """The worker died (a RayActorError, for a Ray actor)."""


class Call:
    def __init__(self, actor: str, item, dies: bool):
        self.actor, self.item, self.dies = actor, item, dies

    def result(self):
        if self.dies:
            raise Died(f"{self.actor} died")
        if self.item.id == "bad":
            raise ValueError("raised inside the worker")
        return f"{self.item.id} by {self.actor}"


class FakeActors:
    """Actors that die on the items named in ``deaths`` (as many times as given), replaced as an
    ActorSet replaces them."""

    kind, deaths, background = "evaluator", (Died,), True

    def __init__(self, size: int, die_on: dict[str, int] | None = None):
        self.actors = [f"actor {i}.0" for i in range(size)]
        self.die_on = dict(die_on or {})
        self.lines: list[str] = []
        self.replaced = 0

    def __len__(self) -> int:
        return len(self.actors)

    def submit(self, slot: int, item) -> Call:
        dies = self.die_on.get(item.id, 0) > 0
        if dies:
            self.die_on[item.id] -= 1
        return Call(self.actors[slot], item, dies)

    def replace(self, slot: int, future: Call, error: BaseException) -> None:
        if self.actors[slot] is future.actor:
            self.replaced += 1
            self.actors[slot] = f"actor {slot}.{self.replaced}"

    def log(self, message: str) -> None:
        self.lines.append(message)


def first(futures, timeout):
    return futures[:1]


def fake_pool(evaluators: FakeActors) -> Dispatcher:
    return Dispatcher(FakeActors(1), evaluators, first)


def test_a_dead_worker_is_replaced_and_its_request_handed_over_once():
    actors = FakeActors(2, die_on={"b": 2})
    pool = fake_pool(actors)
    arrived = []
    results = dict(pool.collect(pool.submit_evaluations([Item("a"), Item("b"), Item("c")],
                                                         lambda i, e: arrived.append((i, e)))))
    assert results == {0: "a by actor 0.0", 1: "b by actor 1.2", 2: "c by actor 0.0"}
    assert sorted(arrived) == sorted(results.items()), "each result handed over once"
    assert actors.replaced == 2
    assert actors.lines == ["evaluation of b sent again (attempt 2)", "evaluation of b sent again (attempt 3)"]
    assert pool.in_flight() == 0


def test_a_request_whose_worker_dies_max_attempts_times_is_a_pool_error():
    pool = fake_pool(FakeActors(2, die_on={"b": MAX_ATTEMPTS}))
    with pytest.raises(PoolError, match=f"evaluators died {MAX_ATTEMPTS} times on the same request \\(Died\\)"):
        list(pool.evaluate([Item("a"), Item("b")]))


def test_an_exception_inside_a_worker_is_not_a_death():
    actors = FakeActors(1)
    with pytest.raises(ValueError, match="inside the worker"):
        list(fake_pool(actors).evaluate([Item("bad")]))
    assert actors.replaced == 0


def test_the_actor_set_replaces_only_the_actor_that_died(monkeypatch):
    killed = []
    monkeypatch.setattr(ray_pool.ray, "kill", killed.append)
    made, lines = [], []

    def make(i, k):
        made.append((i, k))
        return f"actor {i}.{k}"

    actors = ActorSet("evaluator", "evaluate", make, 2, log=lines.append)
    dead = ActorCall(None, actors.actors[1])
    actors.replace(1, dead, RuntimeError("The actor died unexpectedly"))
    actors.replace(1, dead, RuntimeError("the same death, reported again"))
    assert made == [(0, 0), (1, 0), (1, 1)] and actors.actors == ["actor 0.0", "actor 1.1"]
    assert killed == ["actor 1.0"] and actors.replaced == 1 and actors.incarnations == [0, 1]
    assert lines == ["evaluator actor 1 died (RuntimeError: The actor died unexpectedly); replaced by a new one "
                     "(incarnation 1), its requests sent again"]


def test_batches_queue_behind_each_other_and_are_handed_over_as_they_arrive():
    """One evaluator: the earlier batch runs first, its results reach its callback while a later
    batch is collected, and it is collected afterwards."""
    done = []

    def evaluate(x):
        done.append(x)
        return x.upper()

    pool = ExecutorPool(None, [ThreadPoolExecutor(1)], evaluate)
    arrived = []
    a = pool.submit_evaluations(["a", "b"], lambda i, e: arrived.append(("a", i, e)))
    b = pool.submit_evaluations(["c"], lambda i, e: arrived.append(("b", i, e)))
    assert list(pool.collect(b)) == [(0, "C")]
    assert done == ["a", "b", "c"]
    assert arrived == [("a", 0, "A"), ("a", 1, "B"), ("b", 0, "C")]
    assert list(pool.collect(a)) == [(0, "A"), (1, "B")]
    assert arrived[-1] == ("b", 0, "C"), "nothing handed over twice"


class SlowProposer:
    def propose(self, request):
        time.sleep(0.5)
        return f"candidate {request}"


def test_evaluations_finishing_during_a_proposal_are_handed_over_and_the_next_sent():
    """One evaluator, two quick evaluations queued, a slow proposal: both evaluations arrive before
    the proposal does (the second was sent when the first came in, not after the proposal)."""
    pool = ExecutorPool(SlowProposer(), [ThreadPoolExecutor(1)], lambda x: x)
    arrived = []
    pool.submit_evaluations(["x", "y"], lambda i, e: arrived.append((e, time.monotonic())))
    assert pool.idle_evaluators() == 0
    proposals = list(pool.propose(["r"]))
    proposed_at = time.monotonic()
    assert proposals == [(0, "candidate r")]
    assert [e for e, _ in arrived] == ["x", "y"] and all(t < proposed_at - 0.2 for _, t in arrived)
    assert pool.idle_evaluators() == 1


def test_no_wait_goes_past_the_deadline():
    release = threading.Event()
    pool = ExecutorPool(None, [ThreadPoolExecutor(1), ThreadPoolExecutor(1)], lambda x: release.wait(30))
    pool.set_deadline(time.monotonic() + 0.3)
    started = time.monotonic()
    try:
        with pytest.raises(WallTimeReached) as stop:
            list(pool.evaluate(["a", "b", "c"]))
        assert stop.value.in_flight == 3, "two sent, one queued"
        assert time.monotonic() - started < 2
    finally:
        release.set()


def test_in_process_workers_check_the_deadline_between_requests():
    class Slow:
        def evaluate(self, x):
            time.sleep(0.2)
            return x

    pool = LocalPool(None, Slow())
    assert pool.idle_evaluators() == 0, "in-process workers are never idle: they run only when collected"
    pool.set_deadline(time.monotonic() + 0.3)
    got = []
    with pytest.raises(WallTimeReached) as stop:
        for item in pool.evaluate(list("abcde")):
            got.append(item)
    assert 1 <= len(got) <= 3 and stop.value.in_flight == 5 - len(got)


def test_the_pools_the_workers_and_the_stores_are_what_is_declared():
    for cls in (LocalPool, ExecutorPool, RayPool):
        assert issubclass(cls, Pool), cls
    for workers in (InProcess("evaluator", None, "evaluate"), Executors("evaluator", [], len),
                    ActorSet("evaluator", "evaluate", lambda i, k: f"actor {i}.{k}", 1), FakeActors(1)):
        assert isinstance(workers, Workers), workers
    assert issubclass(RunStore, Store) and isinstance(MemoryStore(), Store)


def test_requests_that_come_one_at_a_time_take_the_workers_in_turn():
    """Each evaluation submitted as its proposal arrives, and done before the next: the free workers are
    taken in turn, so every worker (on every node of a cluster) gets its share, not only the first."""
    pool = fake_pool(FakeActors(2))
    by = [dict(pool.evaluate([Item(f"e{k}")]))[0].split(" by ")[1] for k in range(4)]
    assert by == ["actor 0.0", "actor 1.0", "actor 0.0", "actor 1.0"]
