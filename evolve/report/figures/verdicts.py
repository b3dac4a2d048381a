"""What happened to the proposals over time, and which checks reject most.

:func:`outcomes_figure`: the outcome of every proposal (accepted, rejected, failed in the sandbox,
no code, duplicate of an earlier program, left unjudged by the budget) in bins of proposals.
:func:`reasons_figure`: the total count of each rejection reason
(:func:`evolve.report.timeline.rejection_reasons`; a program rejected for several reasons counts
once for each), and the running count of the most frequent reasons against evaluations.
"""

from __future__ import annotations

import math
from collections import Counter

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from evolve.store.run_view import ProgramRecord, RunView
from evolve.report.figures import OUTCOME_COLOURS, thin
from evolve.report.timeline import Point
from search.database import named_score

MAX_BINS = 40
TOP_REASONS = 8


def outcome(record: ProgramRecord) -> str:
    """accepted | rejected | failed | no code | duplicate | not judged."""
    if record.evaluation is not None:
        named = named_score(record.evaluation.score)
        if named is not None:
            return named.status
        return "accepted" if record.evaluation.accepted else "rejected"
    if not record.candidate.ok:
        return "no code"
    return "duplicate" if record.duplicate_of is not None else "not judged"


def reason_counts(points: list[Point]) -> Counter:
    return Counter(r for p in points for r in p.reasons)


def outcomes_figure(run: RunView) -> go.Figure | None:
    """The outcome of every proposal, stacked, in at most MAX_BINS bins of proposals."""
    records = run.proposed
    if not records:
        return None
    width = max(1, math.ceil(len(records) / MAX_BINS))
    starts = list(range(0, len(records), width))
    outcomes = [outcome(r) for r in records]
    fig = go.Figure()
    for kind, colour in OUTCOME_COLOURS.items():
        counts = [sum(o == kind for o in outcomes[s:s + width]) for s in starts]
        if any(counts):
            fig.add_trace(go.Bar(x=[s + 1 for s in starts], y=counts, name=kind, marker_color=colour, width=width * 0.9,
                                 offset=0, hovertemplate=f"proposals %{{x}}..%{{x}}+{width - 1}: %{{y}} {kind}<extra></extra>"))
    fig.update_layout(barmode="stack", height=320, margin={"t": 20, "b": 40}, xaxis_title=f"proposal (bins of {width})",
                      yaxis_title="proposals")
    return fig


def reasons_figure(points: list[Point]) -> go.Figure | None:
    """Which checks reject most: totals, and the running count of the most frequent reasons."""
    totals = reason_counts(points).most_common()
    if not totals:
        return None
    fig = make_subplots(rows=1, cols=2, column_widths=[0.45, 0.55], horizontal_spacing=0.1,
                        subplot_titles=("rejection reasons (total)", "rejection reasons over time"))
    shown = totals[:TOP_REASONS * 2][::-1]
    fig.add_trace(go.Bar(x=[c for _, c in shown], y=[r for r, _ in shown], orientation="h", showlegend=False,
                         marker_color=OUTCOME_COLOURS["rejected"], hovertemplate="%{y}: %{x}<extra></extra>"), 1, 1)
    sample = thin(len(points), 400)
    for reason, _ in totals[:TOP_REASONS]:
        running, ys = 0, []
        for p in points:
            running += reason in p.reasons
            ys.append(running)
        fig.add_trace(go.Scatter(x=[points[i].index for i in sample], y=[ys[i] for i in sample], mode="lines",
                                 name=reason, line_shape="hv",
                                 hovertemplate=f"{reason}<br>evaluation %{{x}}: %{{y}} so far<extra></extra>"), 1, 2)
    fig.update_xaxes(title_text="judged programs", row=1, col=1)
    fig.update_yaxes(automargin=True, row=1, col=1)
    fig.update_xaxes(title_text="evaluations", row=1, col=2)
    fig.update_layout(height=80 + 24 * max(8, len(shown)), margin={"t": 40, "b": 40})
    return fig
