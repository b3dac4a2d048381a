"""Why a run produced nothing: the reason shared by its failed proposals.

A run in which every proposal failed (no code: provider errors, unparseable answers, diffs that
did not apply) has done no work, however cleanly it stopped. :func:`common_failure` says so and
names the most frequent reason; ``evolve launch``/``resume`` then exit with status 1 and print it,
and ``evolve show`` states it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

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
