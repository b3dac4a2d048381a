"""Tokens, cost and latency per model (proposers that call no model are listed by name, in brackets).

Latency is the wall time of each model request, retries included
(:func:`evolve.store.model_stats.latency_of`: ``Candidate.latency_s``, or the client's note in
older journals); proposers that call no model have none.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from evolve.store.run_view import RunView
from evolve.store.model_stats import latency_of


@dataclass
class ModelUsage:
    model: str
    proposals: int = 0
    parse_failures: int = 0        # an answer that held no usable program
    diff_failures: int = 0         # a diff that did not apply to its parent
    api_failures: int = 0          # the provider failed for good
    evaluated: int = 0
    accepted: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    usd: float = 0.0
    latencies: list[float] = field(default_factory=list)

    def latency(self, q: float) -> float | None:
        """The ``q`` quantile of the latencies in seconds (None without any)."""
        return float(np.quantile(self.latencies, q)) if self.latencies else None


def model_name(candidate) -> str:
    return candidate.model or f"({candidate.proposer or 'unknown'})"


def model_usage(run: RunView) -> list[ModelUsage]:
    """One row per model, most proposals first."""
    rows: dict[str, ModelUsage] = {}
    for rec in run.proposed:
        c = rec.candidate
        u = rows.setdefault(model_name(c), ModelUsage(model_name(c)))
        u.proposals += 1
        u.parse_failures += c.error_kind == "parse"
        u.diff_failures += c.error_kind == "diff"
        u.api_failures += c.error_kind == "api"
        u.evaluated += int(rec.evaluation is not None)
        u.accepted += int(rec.evaluation is not None and rec.evaluation.accepted)
        u.tokens_in += int(c.tokens_in)
        u.tokens_out += int(c.tokens_out)
        u.usd += float(c.cost_usd)
        latency = latency_of(c)
        if latency is not None:
            u.latencies.append(latency)
    return sorted(rows.values(), key=lambda u: (-u.proposals, u.model))


def models_figure(usage: list[ModelUsage]) -> go.Figure | None:
    """Bars of tokens and cost, boxes of latency; panels with nothing to show are left out."""
    panels = [name for name, has in (("tokens", any(u.tokens_in or u.tokens_out for u in usage)),
                                     ("cost (USD)", any(u.usd for u in usage)),
                                     ("latency per proposal (s)", any(u.latencies for u in usage))) if has]
    if not panels:
        return None
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=panels, horizontal_spacing=0.08)
    names = [u.model for u in usage]
    col = {name: i + 1 for i, name in enumerate(panels)}
    if "tokens" in col:
        fig.add_trace(go.Bar(x=names, y=[u.tokens_in for u in usage], name="tokens in", marker_color="#1f77b4"),
                      1, col["tokens"])
        fig.add_trace(go.Bar(x=names, y=[u.tokens_out for u in usage], name="tokens out", marker_color="#aec7e8"),
                      1, col["tokens"])
    if "cost (USD)" in col:
        fig.add_trace(go.Bar(x=names, y=[u.usd for u in usage], name="USD", marker_color="#ff7f0e", showlegend=False,
                             hovertemplate="%{x}: $%{y:.4f}<extra></extra>"), 1, col["cost (USD)"])
    if "latency per proposal (s)" in col:
        for u in usage:   # quartiles computed here: the page does not carry every latency of a long run
            if u.latencies:
                lo, q1, med, q3, hi = (u.latency(q) for q in (0.0, 0.25, 0.5, 0.75, 1.0))
                fig.add_trace(go.Box(x=[u.model], q1=[q1], median=[med], q3=[q3], lowerfence=[lo], upperfence=[hi],
                                     mean=[sum(u.latencies) / len(u.latencies)], name=u.model, showlegend=False,
                                     marker_color="#2ca02c"), 1, col["latency per proposal (s)"])
        fig.update_yaxes(type="log", row=1, col=col["latency per proposal (s)"])
    fig.update_layout(barmode="stack", height=360, margin={"t": 40, "b": 40}, legend={"orientation": "h", "y": -0.25})
    return fig
