"""The report of an ``evolve bench`` output directory: the paper's Table 3 (with our columns), its
Figure 2 (the cumulative numerical pass rate across refinement rounds, one panel per variant,
canonical and paraphrased side by side) and every trial, from the finished trial records.

The numbers are :mod:`evolve.bench.metrics`' (the same as ``table.md`` and ``results.csv``);
unfinished trials (``*.error.json``) are counted, not scored, as the bench itself does.
"""

from __future__ import annotations

import json
import time
from html import escape
from pathlib import Path

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from evolve.bench.metrics import __doc__ as METRICS_DOC
from evolve.bench.metrics import bench_table, trial_summary
from evolve.bench.protocol import SCHEMA, VARIANTS
from evolve.bench.report import COLUMNS, PAPER_COLUMNS, cell_text
from evolve.report.page import REPORT_NAME, Section, WrittenReport, note, page, plot_div, write_page

COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


class BenchReportError(ValueError):
    """A directory that holds no bench results."""


def load_trials(bench_dir: str | Path) -> tuple[list[dict], int]:
    """(finished trial records in file-name order, number of unfinished ones) of ``bench_dir/trials``."""
    folder = Path(bench_dir) / "trials"
    if not folder.is_dir():
        raise BenchReportError(f"{bench_dir} has no trials/ folder (it is written by `evolve bench --out DIR`)")
    records, unfinished = [], 0
    for path in sorted(folder.glob("*.json")):
        if path.name.endswith(".error.json"):
            unfinished += 1
            continue
        try:
            rec = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BenchReportError(f"{path} is not a readable trial record: {exc}") from None
        if not isinstance(rec, dict) or rec.get("schema") != SCHEMA or "trace" not in rec:
            raise BenchReportError(f"{path} is not a bench trial record of schema {SCHEMA}")
        if rec.get("finished"):
            records.append(rec)
        else:
            unfinished += 1
    if not records:
        raise BenchReportError(f"{folder} holds no finished trial record")
    return records, unfinished


def _grid(head: list[str], rows: list[list[str]], paper_from: int | None = None) -> str:
    def th(i, h):
        cls = " class='paper'" if paper_from is not None and paper_from <= i < paper_from + PAPER_COLUMNS else ""
        return f"<th{cls}>{escape(h)}</th>"
    return ("<table class='grid num'><tr>" + "".join(th(i, h) for i, h in enumerate(head)) + "</tr>"
            + "".join("<tr>" + "".join(f"<td>{escape(str(x))}</td>" for x in r) + "</tr>" for r in rows) + "</table>")


def table3_html(rows: list[dict]) -> str:
    """Table 3's layout (the model named on its first row only), our columns after the paper's."""
    head = ["Model", "Variant"] + [h for _, h, _ in COLUMNS] + ["Trials"]
    out, previous = [], None
    for r in rows:
        cells = [cell_text(k, r.get(k)) for k, _, _ in COLUMNS] if r["trials"] else ["—"] * len(COLUMNS)
        out.append([r["model"] if r["model"] != previous else "", r["variant"], *cells, f"{r['trials']}/{r['expected']}"])
        previous = r["model"]
    return _grid(head, out, paper_from=2)


def figure2(rows: list[dict], variants: list[str], models: list[str]) -> go.Figure:
    """Cumulative numerical pass rate after each round k, one panel per variant, one line per model."""
    fig = make_subplots(rows=1, cols=len(variants), subplot_titles=variants, shared_yaxes=True)
    for col, variant in enumerate(variants, 1):
        for i, model in enumerate(models):
            row = next((r for r in rows if r["model"] == model and r["variant"] == variant and r["trials"]), None)
            if row is None:
                continue
            rates = row["nm_by_round"]
            fig.add_trace(go.Scatter(x=list(range(len(rates))), y=rates, mode="lines+markers", name=model,
                                     legendgroup=model, showlegend=col == 1,
                                     line={"color": COLOURS[i % len(COLOURS)]},
                                     hovertemplate=f"{escape(model)}, {variant}<br>after round %{{x}}: "
                                                   "%{y:.1f}% passed<extra></extra>"), 1, col)
        fig.update_xaxes(title_text="refinement round k", dtick=1, row=1, col=col)
    fig.update_yaxes(title_text="cumulative numerical pass rate (%)", range=[0, 105], row=1, col=1)
    fig.update_layout(height=400, margin={"t": 40, "b": 40})
    return fig


def _trials_table(records: list[dict]) -> str:
    rows = []
    for rec in records:
        s = trial_summary(rec)
        rows.append([s["model"], s["task"], s["variant"], f"{s['class0'] or '-'} (gold {s['gold_class']})",
                     "-" if s["first_numerical_round"] is None else s["first_numerical_round"],
                     "-" if s["accepted_round"] is None else s["accepted_round"], s["rounds"], s["largest_n"],
                     f"{s['seconds']:.1f}", f"{s['cost_usd']:.4f}", rec["trace"]["stopped"]])
    return _grid(["model", "task", "variant", "class at round 0", "first numerical pass (round)", "accepted (round)",
                  "rounds", "largest n", "seconds", "USD", "stopped"], rows)


def build_bench_report(bench_dir: str | Path) -> tuple[str, dict]:
    records, unfinished = load_trials(bench_dir)
    models = list(dict.fromkeys(r["model"] for r in records))
    variants = [v for v in VARIANTS if any(r["variant"] == v for r in records)]
    variants += sorted({r["variant"] for r in records} - set(variants))
    tasks = sorted({r["task"] for r in records})
    rows = bench_table(records, models, variants, tasks)
    settings = records[0]["settings"]
    about = (f"{len(records)} finished trials over tasks {', '.join(tasks)}; rounds k = {settings['rounds']}, "
             f"{settings['samples']} parameter sample(s) per probed n, seed {settings['seed']}, ladder "
             f"{'on' if settings['ladder'] else 'off'}, judge {'on' if settings['judge'] else 'off'}."
             + (f" {unfinished} trial(s) did not finish and are not scored (rerun `evolve bench` with the same "
                "--out to retry them)." if unfinished else ""))
    sections = [
        Section("table3", "Table 3", note(about) + note(f"The first {PAPER_COLUMNS} metric columns are the paper's "
                                                        "Table 3; the others are ours (definitions below).")
                + table3_html(rows)),
        Section("figure2", "Figure 2: cumulative numerical pass rate by round",
                note("A trial that first passes numerically at round j counts as passed for every k >= j.")
                + plot_div(figure2(rows, variants, models), "figure2-plot")),
        Section("trials", "Trials", _trials_table(records)),
        Section("definitions", "Definitions", f"<pre>{escape(METRICS_DOC.strip())}</pre>")]
    data = {"bench_dir": str(bench_dir), "trials": len(records), "unfinished": unfinished, "models": models,
            "variants": variants, "tasks": tasks, "rows": rows}
    return page("StatMechBench-v0 results", str(bench_dir), sections, data), data


def write_bench_report(bench_dir: str | Path, out: str | Path | None = None) -> WrittenReport:
    """Write the report of ``bench_dir`` to ``out`` (default ``DIR/report.html``)."""
    start = time.perf_counter()
    html, data = build_bench_report(bench_dir)
    path = Path(out) if out is not None else Path(bench_dir) / REPORT_NAME
    return write_page(path, html, start, f"{data['trials']} trials")
