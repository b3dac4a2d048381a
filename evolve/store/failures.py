"""Why a run failed, in words a user reads where they look (``evolve show``, ``show --json``, the report).

Two kinds of failure:

- a run in which every proposal failed (no code: provider errors, unparseable answers, diffs that
  did not apply) has done no work, however cleanly it stopped. :func:`common_failure` says so and
  names the most frequent reason; ``evolve launch``/``resume`` then exit with status 1 and print it;
- a run that stopped on an error (an exception in the driver, a dead actor, the driver killed): its
  status.json says ``failed`` with the reason (:func:`status_failure`).

:func:`run_failure` gives whichever applies as a :class:`RunFailure`, the ``failure`` of a run's summary.
Reasons are one line, cut at a word boundary (:func:`one_line`), never in the middle of one.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass

from search.candidate import Candidate


@dataclass(frozen=True)
class FailureSummary:
    total: int              # proposals in the run
    reason: str             # the most frequent failure reason
    count: int              # proposals that failed with exactly that reason
    kinds: dict             # error kind (api, parse, diff) -> proposals

    @property
    def same_reason(self) -> bool:
        return self.count == self.total

    def line(self) -> str:
        if self.same_reason:
            return f"all {self.total} proposal(s) failed for the same reason: {self.reason}"
        return f"all {self.total} proposal(s) failed; the most frequent reason ({self.count} of them): {self.reason}"

    def to_dict(self) -> dict:
        return {"total": self.total, "reason": self.reason, "count": self.count, "kinds": dict(self.kinds),
                "same_reason": self.same_reason}


def common_failure(candidates: list[Candidate]) -> FailureSummary | None:
    """The summary when every one of ``candidates`` (at least one) failed, else None."""
    if not candidates or any(c.ok for c in candidates):
        return None
    reason, count = Counter(c.parse_error or "no code was produced" for c in candidates).most_common(1)[0]
    return FailureSummary(len(candidates), reason, count, dict(Counter(c.error_kind or "unknown" for c in candidates)))


def one_line(text: str, limit: int = 500) -> str:
    """``text`` on one line (whitespace runs made one space), at most ``limit`` characters: a longer
    text is cut at the last word boundary that fits and ends in "...", never in the middle of a word."""
    flat = " ".join(str(text).split())
    if len(flat) <= limit:
        return flat
    cut = flat[:max(1, limit - 3)]
    if " " in cut:
        cut = cut[:cut.rindex(" ")]
    return cut.rstrip(",;:") + "..."


@dataclass(frozen=True)
class RunFailure:
    """Why a run failed: ``kind`` is ``"proposals"`` (every proposal failed; ``proposals`` has the
    :class:`FailureSummary` as a dict) or ``"error"`` (status.json says failed, with ``reason``);
    ``line`` is the sentence to show."""

    kind: str
    reason: str
    line: str
    proposals: dict | None = None

    def to_dict(self) -> dict:
        """Flat: ``kind``, ``reason``, ``line`` and, for ``proposals``, the FailureSummary's keys."""
        out = {k: v for k, v in asdict(self).items() if k != "proposals"}
        return {**(self.proposals or {}), **out}


def status_failure(status: dict | None) -> RunFailure | None:
    """The failure status.json records (state ``failed`` with a reason), or None."""
    if not isinstance(status, dict) or status.get("state") != "failed":
        return None
    reason = (status.get("counts") or {}).get("reason") or "no reason was recorded"
    return RunFailure("error", str(reason), str(reason))


def run_failure(status: dict | None, candidates: list[Candidate]) -> RunFailure | None:
    """Why the run failed, if it did: every proposal failed, else the reason status.json records."""
    summary = common_failure(candidates)
    if summary is not None:
        return RunFailure("proposals", summary.reason, summary.line(), summary.to_dict())
    return status_failure(status)
