"""The Ray pool: proposals and evaluations on Ray actors, which die and are replaced.

:class:`RayPool` is the one dispatcher (:mod:`evolve.engine.dispatch`: batches, tickets,
``arrived`` callbacks, the deadline on every wait) over two :class:`ActorSet` s: each free actor
is handed the next request, and ``ray.wait`` tells which have finished, proposals and evaluations
in one wait.

Actors die: a node is lost, the OOM killer picks one, someone calls ``ray.kill``. An
:class:`ActorSet` makes its actors from one factory and replaces a dead one (a request's
``RayActorError``) with a new actor from the same factory; the dispatcher then sends the request the
dead actor held to its replacement. A request's result is handed to the engine (and journaled)
only once, when it arrives, so nothing is lost or journaled twice. A request whose actor dies
``MAX_ATTEMPTS`` times running (a candidate that crashes every evaluator it meets) is a
:class:`~evolve.engine.dispatch.PoolError`. An exception raised *inside* an actor is not a death: it
propagates.

The wall clock matters most here: a request can wait forever on a Ray cluster (an actor that no
node can place, a cluster busy with someone else's work, a proposer whose provider never
answers), so past the deadline the pool raises
:class:`~evolve.engine.termination.WallTimeReached` and the engine ends the run.
"""

from __future__ import annotations

from typing import Callable

import ray
from ray.exceptions import RayActorError

from evolve.engine.dispatch import Dispatcher
from evolve.store.failures import one_line


class ActorCall:
    """A request sent to an actor: its object ref and the actor it went to (cotengra's ``RayFuture``,
    plus the actor, so that a death is pinned on the right one)."""

    __slots__ = ("ref", "actor")

    def __init__(self, ref, actor):
        self.ref, self.actor = ref, actor

    def result(self):
        return ray.get(self.ref)


def ray_wait(futures: list[ActorCall], timeout: float | None) -> list[ActorCall]:
    """The wait of actors: one finished call (``ray.wait``), or none once ``timeout`` s passed."""
    by_ref = {f.ref: f for f in futures}
    done, _ = ray.wait(list(by_ref), num_returns=1, timeout=timeout)
    return [by_ref[ref] for ref in done]


class ActorSet:
    """``size`` actors made by ``make(index, incarnation)``, each request a call of their ``method``;
    ``replace`` swaps a dead one for a new one."""

    deaths: tuple[type[BaseException], ...] = (RayActorError,)
    background = True

    def __init__(self, kind: str, method: str, make: Callable[[int, int], object], size: int,
                 log: Callable[[str], None] = print):
        self.kind, self.method, self.make, self.log = kind, method, make, log
        self.incarnations = [0] * size
        self.actors = [make(i, 0) for i in range(size)]
        self.replaced = 0

    def __len__(self) -> int:
        return len(self.actors)

    def submit(self, slot: int, item) -> ActorCall:
        actor = self.actors[slot]
        return ActorCall(getattr(actor, self.method).remote(item), actor)

    def replace(self, slot: int, future: ActorCall, error: BaseException) -> None:
        """Put a new actor at ``slot`` if the dead one ``future`` went to is still there."""
        dead = future.actor
        if self.actors[slot] is not dead:
            return
        try:
            ray.kill(dead)
        except Exception:  # noqa: BLE001 - it is dead already, or its node is gone
            pass
        self.incarnations[slot] += 1
        self.actors[slot] = self.make(slot, self.incarnations[slot])
        self.replaced += 1
        why = one_line(str(error), 200)
        self.log(f"{self.kind} actor {slot} died ({type(error).__name__}: {why}); replaced by a new one "
                 f"(incarnation {self.incarnations[slot]}), its requests sent again")


class FixedActors(ActorSet):
    """Actors given as a list: a death is not repaired, it propagates."""

    def __init__(self, kind: str, method: str, actors: list):
        super().__init__(kind, method, lambda i, k: actors[i], len(actors), log=lambda message: None)

    def replace(self, slot: int, future: ActorCall, error: BaseException) -> None:
        raise error


class RayPool(Dispatcher):
    """Requests to whichever actor of two :class:`ActorSet` s is free (plain lists of handles work
    too, without replacement)."""

    def __init__(self, proposers: ActorSet | list, evaluators: ActorSet | list):
        super().__init__(proposers if isinstance(proposers, ActorSet) else FixedActors("proposer", "propose", proposers),
                         evaluators if isinstance(evaluators, ActorSet) else FixedActors("evaluator", "evaluate",
                                                                                         evaluators),
                         ray_wait)

    def actors(self) -> list:
        return [*self.proposers.actors, *self.evaluators.actors]


class ActorProxy:
    """Calls a Ray actor's methods as if it were a local object (``proxy.f(x)`` is
    ``ray.get(actor.f.remote(x))``), so code that holds one, a strategy's database, say, does
    not know where the object lives."""

    def __init__(self, actor):
        self._actor = actor

    def __getattr__(self, name: str):
        method = getattr(self._actor, name)
        return lambda *args, **kwargs: ray.get(method.remote(*args, **kwargs))
