"""Per-model accounting of a run, read from its journal (``evolve show``, ``evolve show --json``
under ``models``).

For every model that wrote a proposal: proposals, parse failures (an answer that held no usable
program), diffs that did not apply, provider failures, evaluations, accepted programs, tokens in
and out, USD, and the mean latency of its requests (retries included); plus the outcome of its
preflight call when the run made one.
"""

from __future__ import annotations

import re

from evolve.store.events import PreflightEvent

_SECONDS_NOTE = re.compile(r"^seconds: ([0-9.]+)$")


def model_stats(index) -> dict[str, dict]:
    """model name -> counts, from an :class:`evolve.store.lineage.RunIndex` (proposals without a model are left out)."""
    out: dict[str, dict] = {}
    latencies: dict[str, list[float]] = {}
    for cand in index.proposals.values():
        if not cand.model:
            continue
        row = out.setdefault(cand.model, {"proposals": 0, "parse_failures": 0, "diff_failures": 0, "api_failures": 0,
                                          "evaluations": 0, "accepted": 0, "tokens_in": 0, "tokens_out": 0,
                                          "usd": 0.0, "mean_latency_s": None, "preflight": None})
        row["proposals"] += 1
        row["parse_failures"] += cand.error_kind == "parse"
        row["diff_failures"] += cand.error_kind == "diff"
        row["api_failures"] += cand.error_kind == "api"
        ev = index.evaluations.get(cand.id)
        if ev is not None:
            row["evaluations"] += 1
            row["accepted"] += ev.accepted
        row["tokens_in"] += int(cand.tokens_in)
        row["tokens_out"] += int(cand.tokens_out)
        row["usd"] += float(cand.cost_usd)
        latency = latency_of(cand)
        if latency is not None:
            latencies.setdefault(cand.model, []).append(latency)
    for model, values in latencies.items():
        out[model]["mean_latency_s"] = sum(values) / len(values)
    for event in index.of_kind(PreflightEvent):
        row = out.setdefault(event.model, {"proposals": 0, "parse_failures": 0, "diff_failures": 0, "api_failures": 0,
                                           "evaluations": 0, "accepted": 0, "tokens_in": 0, "tokens_out": 0,
                                           "usd": 0.0, "mean_latency_s": None, "preflight": None})
        row["preflight"] = "ok" if event.ok else f"failed ({event.error_kind}): {event.error}"
    return out


def latency_of(cand) -> float | None:
    """Seconds the model request took (``latency_s``; older journals: the client's "seconds:" note)."""
    if cand.latency_s:
        return float(cand.latency_s)
    for note in cand.notes:
        m = _SECONDS_NOTE.match(note)
        if m:
            return float(m.group(1))
    return None
