"""Negative prompting: how many items were in force for each proposal, and which.

The items are what the engine put in each proposal request (the negative-prompting memory of the
slot's niche, i.e. its island, under the run's policy), journaled with the proposal; each niche
remembers only its own failures, so the count can differ from one proposal to the next. Proposers that write no prompt
(the structural proposer) are never given any.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

import plotly.graph_objects as go

from evolve.store.run_view import RunView
from evolve.report.figures import thin

MAX_POINTS = 1000


@dataclass(frozen=True)
class NegativeItem:
    text: str
    first: int          # 1-based index of the first proposal it was in force for
    proposals: int      # how many proposals it was in force for


def negative_items(run: RunView) -> list[NegativeItem]:
    """Every distinct item, in the order it first appeared."""
    first: dict[str, int] = {}
    count: dict[str, int] = {}
    for rec in run.proposed:
        for item in rec.negative:
            first.setdefault(item, rec.proposal_index + 1)
            count[item] = count.get(item, 0) + 1
    return [NegativeItem(t, first[t], count[t]) for t in first]


def negative_figure(run: RunView) -> go.Figure | None:
    """Items in force per proposal, one line per proposer that was ever given any (x: the run's
    proposal index, so proposers share the axis)."""
    records = run.proposed
    given = sorted({r.candidate.proposer for r in records if r.negative})
    if not given:
        return None
    fig = go.Figure()
    for proposer in given:
        mine = [r for r in records if r.candidate.proposer == proposer]
        shown = [mine[i] for i in thin(len(mine), MAX_POINTS)]
        fig.add_trace(go.Scatter(
            x=[r.proposal_index + 1 for r in shown], y=[len(r.negative) for r in shown], name=proposer,
            mode="lines+markers" if len(shown) <= 300 else "lines", line_shape="hv", marker={"size": 5},
            customdata=[[escape(r.id), r.island] for r in shown],
            hovertemplate=(f"{escape(proposer)} proposal %{{x}} (%{{customdata[0]}}, niche %{{customdata[1]}}): "
                           "%{y} items in force<extra></extra>")))
    top = max(len(r.negative) for r in records)
    fig.update_layout(height=300, margin={"t": 20, "b": 40}, xaxis_title="proposal", showlegend=len(given) > 1,
                      yaxis={"title": "negative items in force", "rangemode": "tozero", "tickformat": "d",
                             "dtick": 1 if top <= 10 else None})
    return fig
