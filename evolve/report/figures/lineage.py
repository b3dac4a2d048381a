"""The lineage tree of the best programs (:mod:`evolve.report.lineage_tree`): one marker per
program, coloured by outcome, joined to its first parent; the best programs carry their rank.
A click on a marker opens that program's panel (the page's ``openProgram``, given the panel's
HTML id, the third entry of ``customdata``)."""

from __future__ import annotations

from html import escape

import plotly.graph_objects as go

from evolve.report.figures import OUTCOME_COLOURS
from evolve.report.lineage_tree import LineageTree, panel_id


def lineage_figure(tree: LineageTree) -> go.Figure | None:
    if not tree.nodes:
        return None
    at = {n.id: n for n in tree.nodes}
    ex, ey = [], []
    for n in tree.nodes:
        if n.parent is not None:
            p = at[n.parent]
            ex += [p.x, p.x + 0.5, p.x + 0.5, n.x, None]     # elbow connector
            ey += [p.y, p.y, n.y, n.y, None]
    fig = go.Figure(go.Scatter(x=ex, y=ey, mode="lines", line={"color": "#bbbbbb", "width": 1}, hoverinfo="skip",
                               showlegend=False))
    for kind, colour in OUTCOME_COLOURS.items():
        nodes = [n for n in tree.nodes if n.outcome == kind]
        if not nodes:
            continue
        fig.add_trace(go.Scatter(
            x=[n.x for n in nodes], y=[n.y for n in nodes], mode="markers+text", name=kind,
            text=[f"#{n.rank}" if n.rank else "" for n in nodes], textposition="middle right",
            marker={"color": colour, "size": [14 if n.rank else 9 for n in nodes], "line": {"width": 1, "color": "#333"}},
            customdata=[[escape(n.id), f"{n.fitness:.4f}", panel_id(n.id)] for n in nodes],
            hovertemplate=(f"%{{customdata[0]}}: {kind}, fitness %{{customdata[1]}}<br>generation %{{x}}"
                           "<br>click to open its code, diff, verdict, prompt<extra></extra>")))
    rows = max(n.y for n in tree.nodes) + 1
    last = max(n.x for n in tree.nodes)
    fig.update_xaxes(dtick=1 if last <= 20 else None, tickformat="d")     # generations are whole numbers
    # half a row of padding and a top margin the mode bar fits in: a marker in the top row must not sit
    # under the mode bar (top right, shown on hover), where a click hits a button instead of the marker
    fig.update_layout(height=min(900, max(300, 60 + 18 * rows)), margin={"t": 40, "b": 40}, hovermode="closest",
                      xaxis_title="generation", yaxis={"visible": False, "range": [-0.6, rows - 0.4]},
                      legend={"orientation": "h", "y": -0.15})
    return fig
