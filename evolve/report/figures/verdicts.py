"""What happened to the proposals over time, and which checks reject most.

Three panels: the outcome of every proposal (accepted, rejected, failed in the sandbox, no code,
duplicate of an earlier program, left unjudged by the budget) in bins of proposals; the total
count of each rejection reason (:func:`evolve.report.timeline.rejection_reasons`; a program
rejected for several reasons counts once for each); and the running count of the most frequent
reasons against evaluations.
"""

from __future__ import annotations

import math
from collections import Counter

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from evolve.report.data import ProgramRecord, RunData
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


def verdicts_figure(run: RunData, points: list[Point]) -> go.Figure | None:
    records = run.proposals
    if not records:
        return None
    totals = reason_counts(points).most_common()
    titles = ["outcome of the proposals"] + (["rejection reasons (total)", "rejection reasons over time"] if totals else [])
    fig = make_subplots(rows=1, cols=len(titles), column_widths=[0.4, 0.3, 0.3][:len(titles)],
                        horizontal_spacing=0.12, subplot_titles=titles)
    width = max(1, math.ceil(len(records) / MAX_BINS))
    starts = list(range(0, len(records), width))
    outcomes = [outcome(r) for r in records]
    for kind, colour in OUTCOME_COLOURS.items():
        counts = [sum(o == kind for o in outcomes[s:s + width]) for s in starts]
        if any(counts):
            fig.add_trace(go.Bar(x=[s + 1 for s in starts], y=counts, name=kind, marker_color=colour, width=width * 0.9,
                                 offset=0, legendgroup=kind,
                                 hovertemplate=f"proposals %{{x}}..%{{x}}+{width - 1}: %{{y}} {kind}<extra></extra>"),
                          row=1, col=1)
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text=f"proposal (bins of {width})", row=1, col=1)
    fig.update_yaxes(title_text="proposals", row=1, col=1)
    if totals:
        shown = totals[:TOP_REASONS * 2][::-1]
        fig.add_trace(go.Bar(x=[c for _, c in shown], y=[r for r, _ in shown], orientation="h", showlegend=False,
                             marker_color=OUTCOME_COLOURS["rejected"], hovertemplate="%{y}: %{x}<extra></extra>"),
                      row=1, col=2)
        fig.update_xaxes(title_text="judged programs", row=1, col=2)
        sample = thin(len(points), 400)
        for reason, _ in totals[:TOP_REASONS]:
            running, ys = 0, []
            for p in points:
                running += reason in p.reasons
                ys.append(running)
            fig.add_trace(go.Scatter(x=[points[i].index for i in sample], y=[ys[i] for i in sample], mode="lines",
                                     name=reason, line_shape="hv", legendgroup="reasons",
                                     hovertemplate=f"{reason}<br>evaluation %{{x}}: %{{y}} so far<extra></extra>"),
                          row=1, col=3)
        fig.update_xaxes(title_text="evaluations", row=1, col=3)
    fig.update_layout(height=420, margin={"t": 40, "b": 40, "l": 40}, legend={"orientation": "h", "y": -0.2})
    return fig
