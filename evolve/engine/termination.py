"""The exceptions that end a run early, on their own so that the command line and the engine can
catch them without importing the runtime (Ray): SIGTERM, and the wall-time deadline passing while
the pool waits (:class:`WallTimeReached`).

:class:`Terminated` is a ``KeyboardInterrupt``: Ray's blocking calls (``ray.wait``, ``ray.get``)
check for signals while they wait and let only a ``KeyboardInterrupt`` raised by a handler through
(as a fresh ``KeyboardInterrupt``); any other exception raised there surfaced as ``SystemError:
<cyfunction CoreWorker.wait ...> returned a result with an exception set`` and the run was marked
failed. Since Ray replaces the exception, the handler also notes that SIGTERM arrived
(:func:`sigterm_received`), which is how a plain ``KeyboardInterrupt`` is told apart from Ctrl-C.
"""

from __future__ import annotations

import threading

_received = threading.Event()


class Terminated(KeyboardInterrupt):
    """SIGTERM reached the driver: it stops like Ctrl-C (interrupted, resumable)."""


def note_sigterm() -> None:
    """Called by the SIGTERM handler before it raises :class:`Terminated`."""
    _received.set()


def sigterm_received() -> bool:
    """Whether SIGTERM reached this process (a ``KeyboardInterrupt`` Ray raised in its place included)."""
    return _received.is_set()


def by_sigterm(exc: BaseException) -> bool:
    """Whether ``exc`` (a ``KeyboardInterrupt``) stands for SIGTERM rather than Ctrl-C."""
    return isinstance(exc, Terminated) or sigterm_received()


class WallTimeReached(Exception):
    """The run's wall-time deadline passed while a pool waited for results; ``in_flight`` requests
    (sent or queued, never journaled) were abandoned."""

    def __init__(self, in_flight: int):
        super().__init__(f"the deadline passed with {in_flight} request(s) in flight")
        self.in_flight = in_flight
