"""Progress of a run: a live status line on a terminal, plain log lines otherwise."""

from __future__ import annotations

import sys
import time


class Progress:
    """Shows evaluations, accepted, best, budget used and rate.

    On a terminal the line is redrawn in place; when stdout is not a terminal (CI, a pipe, a
    log file) a plain line is printed at most every ``interval_s`` seconds.
    """

    def __init__(self, budgets, stream=None, interval_s: float = 10.0):
        self.budgets = budgets
        self.stream = stream or sys.stdout
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.interval_s = interval_s
        self.started = time.monotonic()
        self._last = 0.0
        self.best = "none yet"

    def update(self, counters, best: str | None = None) -> None:
        if best:
            self.best = best
        now = time.monotonic()
        if not self.tty and now - self._last < self.interval_s:
            return
        self._last = now
        line = self.line(counters, now - self.started)
        if self.tty:
            self.stream.write("\r\x1b[2K" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def line(self, c, seconds: float) -> str:
        rate = 60.0 * c.evaluations / seconds if seconds > 0 else 0.0
        b = self.budgets
        cost = f"  ${c.usd:.2f}" if c.usd else ""
        return (f"gen {c.generation}  proposals {c.proposals}/{b.proposals}  evaluations {c.evaluations}/{b.evaluations}"
                f"  accepted {c.accepted}  dup {c.duplicates}  {rate:.1f} eval/min{cost}  best: {self.best}")

    def finish(self, counters, message: str) -> None:
        if self.tty:
            self.stream.write("\n")
        self.stream.write(self.line(counters, time.monotonic() - self.started) + "\n" + message + "\n")
        self.stream.flush()
