"""Progress of a run: the best score and the accepted count against evaluations and against wall
time, and the largest n verified over time.

The best score is drawn as its fitness (:func:`search.database.fitness`, the score squeezed into
[0, 1], on an axis fitted to the values: accepted programs all lie above 0.84) with the named score
in the hover text; series that only change at a few evaluations
(the best, the accepted count) are drawn as steps through their change points, so a run of
10,000 evaluations costs a few hundred points.
"""

from __future__ import annotations

from html import escape

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from evolve.report.figures import OUTCOME_COLOURS, thin
from evolve.report.timeline import Point

MAX_POINTS = 1000   # markers per scatter: more than a plot's width in pixels shows nothing more
MAX_STEPS = 500


def _changes(points: list[Point], key) -> list[Point]:
    """The points where ``key`` changes, plus the first and the last."""
    out = []
    for i, p in enumerate(points):
        if i == 0 or i == len(points) - 1 or key(p) != key(points[i - 1]):
            out.append(p)
    return out


def progress_figure(points: list[Point]) -> go.Figure | None:
    if not points:
        return None
    fig = make_subplots(rows=1, cols=2, specs=[[{"secondary_y": True}, {"secondary_y": True}]],
                        subplot_titles=("against evaluations", "against wall time (minutes since the run was created)"))
    best = _changes(points, lambda p: p.best_id)
    acc = _changes(points, lambda p: p.accepted_so_far)
    acc = [acc[i] for i in thin(len(acc), MAX_STEPS)]       # a count that rises thousands of times: a sample of its steps
    for col, x_of, x_name in ((1, lambda p: p.index, "evaluation"), (2, lambda p: p.seconds / 60.0, "minute")):
        fig.add_trace(go.Scatter(
            x=[x_of(p) for p in best], y=[p.best_fitness for p in best], mode="lines+markers", line_shape="hv",
            name="best score (fitness)", legendgroup="best", showlegend=col == 1, line={"color": "#1f77b4"},
            customdata=[[escape(p.best_id or "-"), escape(p.best_text)] for p in best],
            hovertemplate=f"{x_name} %{{x:.4~g}}<br>best %{{customdata[0]}}<br>%{{customdata[1]}}<extra></extra>"),
            row=1, col=col, secondary_y=False)
        fig.add_trace(go.Scatter(
            x=[x_of(p) for p in acc], y=[p.accepted_so_far for p in acc], mode="lines", line_shape="hv",
            name="accepted so far", legendgroup="acc", showlegend=col == 1, line={"color": OUTCOME_COLOURS["accepted"]},
            hovertemplate=f"{x_name} %{{x:.4~g}}<br>accepted so far %{{y}}<extra></extra>"),
            row=1, col=col, secondary_y=True)
        fig.update_yaxes(title_text="best fitness", tickformat=".3f", row=1, col=col, secondary_y=False)
        small = points[-1].accepted_so_far <= 5       # a few programs: whole-number ticks, not 0.5 steps
        fig.update_yaxes(title_text="accepted", rangemode="tozero", tickformat="d", dtick=1 if small else None,
                         showgrid=False, row=1, col=col, secondary_y=True)
    fig.update_xaxes(title_text="evaluations", row=1, col=1)
    fig.update_xaxes(title_text="minutes", rangemode="tozero", row=1, col=2)
    fig.update_layout(height=380, margin={"t": 40, "b": 40}, legend={"orientation": "h", "y": -0.2})
    return fig


def largest_n_figure(points: list[Point]) -> go.Figure | None:
    """Each evaluation's largest n verified (log scale; 0 is not drawn) and the best program's."""
    keep = {points[i].index for i in thin(len(points), MAX_POINTS)}
    top = 0
    for p in points:          # every program that verified further than all before it is drawn
        if p.largest_n > top:
            keep.add(p.index)
            top = p.largest_n
    shown = [p for p in points if p.index in keep and p.largest_n > 0]
    record = _changes(points, lambda p: p.best_largest_n)
    if not shown:
        return None
    fig = go.Figure()
    for status in ("accepted", "rejected", "failed"):
        pts = [p for p in shown if p.status == status]
        if pts:
            fig.add_trace(go.Scatter(
                x=[p.index for p in pts], y=[p.largest_n for p in pts], mode="markers", name=status,
                marker={"color": OUTCOME_COLOURS[status], "size": 6, "opacity": 0.7},
                customdata=[escape(p.id) for p in pts],
                hovertemplate="evaluation %{x}<br>%{customdata}: largest n verified %{y}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[p.index for p in record], y=[max(1, p.best_largest_n) for p in record],
                             mode="lines", line_shape="hv", name="best program so far", line={"color": "#1f77b4"},
                             hovertemplate="evaluation %{x}<br>best program's largest n %{y}<extra></extra>"))
    fig.update_layout(height=340, margin={"t": 20, "b": 40}, xaxis_title="evaluations",
                      yaxis={"title": "largest n verified", "type": "log"})
    return fig
