"""The threshold run's HTML report: self-contained (plotly inlined, :mod:`evolve.report.page`),
the crossing curves with their 95% error bars, the scaling collapse, the pairwise crossings
against 1/L, and the numbers."""

from __future__ import annotations

import time
from dataclasses import asdict
from html import escape
from pathlib import Path

import numpy as np
import plotly.graph_objects as go

from evolve.report.page import Section, note, page, plot_div, write_page
from evolve.threshold import stats

COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def _p_c_lines(fig: go.Figure, summary) -> None:
    if np.isfinite(summary.p_c):
        fig.add_vrect(x0=summary.p_c - summary.p_c_err, x1=summary.p_c + summary.p_c_err, fillcolor="#90a4ae",
                      opacity=0.25, line_width=0)
        fig.add_vline(x=summary.p_c, line_color="#37474f",
                      annotation_text=f"p_c = {summary.p_c:.5f} ± {summary.p_c_err:.5f}")
    fig.add_vline(x=summary.reference_p_c, line_dash="dot", line_color="#b71c1c",
                  annotation_text=f"reference {summary.reference_p_c}", annotation_position="bottom right")


def crossing_figure(summary, pts: list[stats.Point]) -> go.Figure:
    """Success probability against p, one colour per L: the Nishimori estimator (filled, with its
    quadratic fit) and the 0/1 indicator (open), each with 95% error bars."""
    fig = go.Figure()
    sizes = sorted({q.L for q in pts})
    for k, L in enumerate(sizes):
        colour = COLOURS[k % len(COLOURS)]
        mine = sorted((q for q in pts if q.L == L), key=lambda q: q.p)
        p = np.array([q.p for q in mine])
        fig.add_trace(go.Scatter(x=p, y=[q.nishimori for q in mine], mode="markers", name=f"L = {L}",
                                 legendgroup=str(L), marker={"color": colour, "size": 7},
                                 error_y={"type": "data", "array": [stats.Z95 * q.nishimori_se for q in mine]}))
        fig.add_trace(go.Scatter(x=p, y=[q.indicator for q in mine], mode="markers", name=f"L = {L} (indicator)",
                                 legendgroup=str(L), showlegend=False, opacity=0.5,
                                 marker={"color": colour, "size": 7, "symbol": "circle-open"},
                                 error_y={"type": "data", "array": [stats.Z95 * q.indicator_se for q in mine],
                                          "thickness": 1}))
        if len(p) >= 3:
            centre = float(p.mean())
            c = np.polyfit(p - centre, [q.nishimori for q in mine], 2, w=[1 / q.nishimori_se for q in mine])
            grid = np.linspace(p.min(), p.max(), 100)
            fig.add_trace(go.Scatter(x=grid, y=np.polyval(c, grid - centre), mode="lines", legendgroup=str(L),
                                     showlegend=False, line={"color": colour, "width": 1.5}))
    _p_c_lines(fig, summary)
    rate = "depolarizing rate" if getattr(summary, "noise", "bitflip") == "depolarizing" else "bit-flip rate"
    fig.update_layout(xaxis_title=f"p ({rate})", yaxis_title="P_succ (maximum-likelihood decoder)",
                      height=520, title="Success probability: filled = Nishimori estimator, open = 0/1 indicator "
                                        "(95% error bars)")
    return fig


def collapse_figure(pts: list[stats.Point], fss: stats.ScalingFit) -> go.Figure:
    fig = go.Figure()
    for k, L in enumerate(sorted({q.L for q in pts})):
        mine = [q for q in pts if q.L == L]
        x = [(q.p - fss.p_c) * L ** (1.0 / fss.nu) for q in mine]
        fig.add_trace(go.Scatter(x=x, y=[q.nishimori for q in mine], mode="markers", name=f"L = {L}",
                                 marker={"color": COLOURS[k % len(COLOURS)]},
                                 error_y={"type": "data", "array": [stats.Z95 * q.nishimori_se for q in mine]}))
    if fss.coeffs:
        xs = np.linspace(min(np.min(t.x) for t in fig.data), max(np.max(t.x) for t in fig.data), 100)
        fig.add_trace(go.Scatter(x=xs, y=np.polyval(list(fss.coeffs)[::-1], xs), mode="lines", name="fit",
                                 line={"color": "#37474f"}))
    fig.update_layout(xaxis_title="(p - p_c) L^(1/nu)", yaxis_title="P_succ", height=420,
                      title=f"Scaling collapse: p_c = {fss.p_c:.5f} ± {fss.p_c_err:.5f}, nu = {fss.nu:.3f}")
    return fig


def crossings_figure(summary) -> go.Figure:
    rows = [c for c in summary.crossings if np.isfinite(c["p"])]
    fig = go.Figure(go.Scatter(x=[1.0 / c["L2"] for c in rows], y=[c["p"] for c in rows], mode="markers+text",
                               text=[f"{c['L1']}-{c['L2']}" for c in rows], textposition="top center",
                               error_y={"type": "data", "array": [stats.Z95 * c["err"] for c in rows]}, name="crossing"))
    fig.add_hline(y=summary.reference_p_c, line_dash="dot", line_color="#b71c1c")
    fig.update_layout(xaxis_title="1 / L (the larger size of the pair)", yaxis_title="crossing p", height=380,
                      title="Crossings of consecutive sizes (95% error bars); dotted: the reference p_c")
    return fig


def _table(head: list[str], rows: list[list]) -> str:
    return ("<table class='grid num'><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"
            + "".join("<tr>" + "".join(f"<td>{escape(str(x))}</td>" for x in r) + "</tr>" for r in rows) + "</table>")


def write_report(path: Path, summary, pts: list[stats.Point], fss: stats.ScalingFit):
    started = time.perf_counter()
    kv = [("p_c", f"{summary.p_c:.5f} ± {summary.p_c_err:.5f} ({summary.method}; estimator {summary.estimator})"),
          ("reference", f"{summary.reference_p_c} ({summary.reference_source})"),
          ("noise", summary.noise + (f" (boundary MPS, chi = {summary.chi})" if summary.chi else "")),
          ("sizes", ", ".join(map(str, summary.sizes))), ("p", ", ".join(f"{p:g}" for p in summary.ps)),
          ("samples", f"{summary.samples} per (L, p), {summary.samples_total} in all"),
          ("wall", f"{summary.wall_s:.0f} s this invocation, {summary.wall_total_s:.0f} s in all"),
          ("decoder", summary.decoder),
          ("scaling fit", f"p_c = {fss.p_c:.5f} ± {fss.p_c_err:.5f}, nu = {fss.nu:.3f}"
                          + (f" ± {fss.nu_err:.3f}" if fss.nu_err else " (fixed)") + f", chi2/dof = {fss.chi2_dof:.2f}")]
    summary_html = ("<table class='kv'>" + "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in kv)
                    + "</table>" + "".join(note(n) for n in summary.notes))
    points_html = _table(["L", "p", "samples", "P_succ (Nishimori)", "± 95%", "P_succ (indicator)", "± 95%"],
                         [[q.L, f"{q.p:g}", q.n, f"{q.nishimori:.5f}", f"{stats.Z95 * q.nishimori_se:.5f}",
                           f"{q.indicator:.5f}", f"{stats.Z95 * q.indicator_se:.5f}"] for q in pts])
    cost_html = _table(["L", "samples", "sampling ms / sample", "decoding ms / sample"],
                       [[L, c["samples"], f"{c['sampling_ms']:.4f}", f"{c['decoding_ms']:.3f}"]
                        for L, c in summary.costs.items()])
    cross_html = _table(["L1", "L2", "crossing p", "± 1 s.e."], [[c["L1"], c["L2"], f"{c['p']:.5f}", f"{c['err']:.5f}"]
                                                                  for c in summary.crossings])
    sections = [
        Section("summary", "Summary", summary_html),
        Section("crossing", "Crossing curves", plot_div(crossing_figure(summary, pts), "crossing-plot")
                + note("The crossing is located with the Nishimori estimator max_a P(a | S); the indicator (open "
                       "markers) has the same mean on the Nishimori line and a larger variance.")),
        Section("pairs", "Crossings of consecutive sizes", plot_div(crossings_figure(summary), "pairs-plot") + cross_html),
        Section("collapse", "Finite-size scaling", plot_div(collapse_figure(pts, fss), "collapse-plot")),
        Section("points", "Every point", points_html),
        Section("cost", "Cost per sample (CPU, in the workers)", cost_html),
    ]
    html = page(f"Threshold of {summary.task}", f"{summary.decoder} decoder, run directory {summary.run_dir}",
                sections, {"summary": asdict(summary) if hasattr(summary, "__dataclass_fields__") else summary})
    return write_page(Path(path), html, started, f"{len(pts)} points")
