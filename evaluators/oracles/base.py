"""What every exact oracle shares: the NotApplicable signal and the result record."""

from __future__ import annotations

from dataclasses import dataclass


class NotApplicable(ValueError):
    """Raised by an oracle when the model lacks the structure the method needs (the message says which)."""


class TooLarge(NotApplicable):
    """The method applies in principle but this model is beyond what it can do here (memory or time)."""


@dataclass(frozen=True)
class OracleResult:
    """An exact log Z (natural log) with the method that produced it and its wall time in seconds."""

    log_z: float
    method: str
    seconds: float


class OutOfRange(TooLarge):
    """The method ran but cannot represent this case: its result was not a finite number, or its
    arithmetic over- or underflowed (the message names the method and the limit). The registry
    hands the model over to the next applicable method."""
