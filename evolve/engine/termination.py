"""The exception SIGTERM raises in a driver, on its own so that the command line can catch it
without importing the runtime (Ray).

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

