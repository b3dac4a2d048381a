"""Negative prompting: how many items were in force for each proposal, and which.

The items are what the engine put in each proposal request (the negative-prompting memory of the
slot's niche under the run's policy), journaled with the proposal. Proposers that write no prompt
(the structural proposer) are never given any.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

import plotly.graph_objects as go

from evolve.report.data import RunData
from evolve.report.figures import thin

MAX_POINTS = 2000


@dataclass(frozen=True)
class NegativeItem:
    text: str
    first: int          # 1-based index of the first proposal it was in force for
    proposals: int      # how many proposals it was in force for


def negative_items(run: RunData) -> list[NegativeItem]:
    """Every distinct item, in the order it first appeared."""
    first: dict[str, int] = {}
    count: dict[str, int] = {}
    for rec in run.proposals:
        for item in rec.negative:
            first.setdefault(item, rec.proposal_index + 1)
            count[item] = count.get(item, 0) + 1
    return [NegativeItem(t, first[t], count[t]) for t in first]


def negative_figure(run: RunData) -> go.Figure | None:
    records = run.proposals
    if not any(r.negative for r in records):
        return None
    shown = [records[i] for i in thin(len(records), MAX_POINTS)]
    fig = go.Figure(go.Scatter(
        x=[r.proposal_index + 1 for r in shown], y=[len(r.negative) for r in shown], mode="lines+markers",
        line_shape="hv", marker={"size": 5}, customdata=[escape(r.id) for r in shown],
        hovertemplate="proposal %{x} (%{customdata}): %{y} items in force<extra></extra>"))
    fig.update_layout(height=300, margin={"t": 20, "b": 40}, xaxis_title="proposal",
                      yaxis={"title": "negative items in force", "rangemode": "tozero"})
    return fig
