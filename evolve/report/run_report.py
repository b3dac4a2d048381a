"""The report of one run: every section, from the run's journal and newest snapshot, in one page.

:func:`write_run_report` is what ``evolve report RUN_DIR`` and the end of ``evolve launch`` /
``evolve resume`` call. The page's ``report-data`` JSON block repeats the key figures (counts,
the best program and its named score, the programs inlined) for scripts and tests.
"""

from __future__ import annotations

import time
from collections import Counter
from html import escape
from pathlib import Path

from evolve.report.data import RunData, load_run
from evolve.report.figures.archive import archive_figures
from evolve.report.figures.lineage import lineage_figure
from evolve.report.figures.models import model_usage, models_figure
from evolve.report.figures.negative import negative_figure, negative_items
from evolve.report.figures.progress import largest_n_figure, progress_figure
from evolve.report.figures.tree import tree_figure, tree_summary
from evolve.report.figures.verdicts import outcome, outcomes_figure, reason_counts, reasons_figure
from evolve.report.lineage_tree import MAX_NODES, TOP, lineage_tree, panel_id
from evolve.report.page import REPORT_NAME, Section, WrittenReport, note, page, plot_div, write_page
from evolve.report.programs import program_panel, score_table
from evolve.report.timeline import Point, timeline
from evolve.store.failures import run_failure
from search.database import named_score


def _duration(s: float) -> str:
    m, sec = divmod(int(round(s)), 60)
    h, m = divmod(m, 60)
    return f"{h}h {m:02d}m {sec:02d}s" if h else f"{m}m {sec:02d}s"


def _grid(head: list[str], rows: list[list], cls: str = "grid num") -> str:
    """A table; cells are escaped unless they are already marked up (tuples ``(html,)``)."""
    def cell(x):
        return x[0] if isinstance(x, tuple) else escape(str(x))
    return (f"<table class='{cls}'><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"
            + "".join("<tr>" + "".join(f"<td>{cell(x)}</td>" for x in r) + "</tr>" for r in rows) + "</table>")


def summary_figures(run: RunData, points: list[Point]) -> dict:
    """The run's key counts (the same numbers the summary section shows)."""
    outcomes = Counter(outcome(r) for r in run.proposals)
    best = points[-1].best_id if points else None
    score = next(j.evaluation.score for j in reversed(run.judged) if j.evaluation.id == best) if best else None
    named = named_score(score) if score is not None else None
    return {"run_id": run.run_id, "task": run.task, "strategy": run.strategy, "proposals": len(run.programs),
            "evaluations": len(run.judged), "accepted": sum(j.evaluation.accepted for j in run.judged),
            "outcomes": dict(outcomes), "best_id": best, "best_score": list(score) if score is not None else None,
            "best_score_named": named.to_dict() if named is not None else None,
            "tokens_in": sum(r.candidate.tokens_in for r in run.proposals),
            "tokens_out": sum(r.candidate.tokens_out for r in run.proposals),
            "cost_usd": sum(r.candidate.cost_usd for r in run.proposals), "wall_s": run.wall_s,
            "promotions": len(run.promotions), "finish": run.finish, "failure": _failure(run)}


def _failure(run: RunData) -> dict | None:
    """Why the run failed (evolve.store.failures.run_failure), as `evolve show --json` has it."""
    failure = run_failure(run.status, [r.candidate for r in run.proposals])
    return None if failure is None else failure.to_dict()


def _summary(run: RunData, fig: dict) -> str:
    o = fig["outcomes"]
    state = str(run.status.get("state") or "unknown") + (f" ({run.finish})" if run.finish else "")
    searching = (run.status.get("counts") or {}).get("elapsed_s")    # across resumes, without the pauses
    rows = [("run", escape(f"{run.run_id} ({run.path})")), ("task", escape(str(run.task))),
            ("strategy", escape(run.strategy)), ("created", escape(str(run.created))), ("state", escape(state)),
            ("proposals", f"{fig['proposals']}: " + escape(", ".join(f"{k} {v}" for k, v in sorted(o.items())))),
            ("evaluations", f"{fig['evaluations']} ({fig['accepted']} accepted)"),
            ("new best programs", str(fig["promotions"])),
            ("migrations / resets", f"{run.migrations} / {run.resets}"),
            ("time", f"{_duration(run.wall_s)} from creation to the last record" + (
                f" ({_duration(searching)} searching)" if searching else "")),
            ("tokens", f"{fig['tokens_in']} in / {fig['tokens_out']} out"), ("cost", f"${fig['cost_usd']:.4f}")]
    if fig["failure"] is not None:
        rows.insert(5, ("why it failed", escape(fig["failure"]["line"])))
    if run.torn:
        rows.append(("journal", "its last record was torn (a write cut short) and is not shown"))
    if run.damage:
        rows.append(("journal damaged", escape(run.damage)))
    html = "<table class='kv'>" + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"
    best = fig["best_id"]
    if best is None:
        return html + note("No program was judged yet.")
    return (html + f"<h3>Best program: <a href='#{panel_id(best)}' onclick=\"openProgram('{panel_id(best)}')\">"
            f"{escape(best)}</a></h3>" + score_table(fig["best_score"]))


def _progress(points: list[Point]) -> str:
    fig = progress_figure(points)
    if fig is None:
        return note("No evaluations yet.")
    out = note("The best score is drawn as its fitness (the lexicographic score squeezed into [0, 1]); hover a "
               "step for the best program and its named score. Time counts from the run's creation, so a "
               "resumed run shows its pause as a flat stretch.") + plot_div(fig, "progress-plot")
    n_fig = largest_n_figure(points)
    out += "<h3>Largest n verified</h3>"
    if n_fig is None:
        return out + note("No program was verified at any size.")
    return out + note("Each judged program's largest verified size (against brute force, then exact oracles), "
                      "log scale; long runs show an even sample plus every program that went further than all "
                      "before it.") + plot_div(n_fig, "largest-n-plot")


def _verdicts(run: RunData, points: list[Point]) -> str:
    fig = outcomes_figure(run)
    if fig is None:
        return note("No proposals yet.")
    out = plot_div(fig, "outcomes-plot") + "<h3>Which checks reject most</h3>"
    reasons = reasons_figure(points)
    if reasons is None:
        return out + note("Nothing was rejected.")
    counts = reason_counts(points).most_common()
    rejected = sum(1 for p in points if p.reasons)
    return (out + note("A program rejected for several reasons counts once for each.") + plot_div(reasons, "reasons-plot")
            + _grid(["reason", "judged programs", "% of rejected"],
                    [[r, c, f"{100.0 * c / rejected:.0f}"] for r, c in counts]))


def _archive(run: RunData) -> str:
    grids = archive_figures(run.strategy_state())
    if not grids:
        return note("No snapshot of the islands yet.")
    out = note(f"From the newest snapshot (journal record {run.state_seq}). Rows: the first MAP-Elites feature; "
               "columns: the others. A cell shows its elite; colour: the elite's fitness.")
    for island, fig in grids:
        out += f"<h3>Island {island}</h3>"
        out += plot_div(fig, f"archive-plot-{island}") if fig is not None else note("empty")
    return out


def _tree(run: RunData) -> str:
    summary = tree_summary(run.strategy_state())
    fig = tree_figure(summary)
    if fig is None:
        return note("No snapshot of the tree yet.")
    root = "-" if summary.root_value is None else f"{summary.root_value:.4f}"
    head = note(f"From the newest snapshot (journal record {run.state_seq}): {len(summary.nodes)} nodes, "
                f"{summary.total_visits} expansions, {summary.drafts} fresh drafts from the root (PUCT value "
                f"{root}), c = {summary.exploration_c:g}. Marker area: visits; colour: PUCT value.")
    rows = [[(f"<a href='#{panel_id(n.id)}'>{escape(n.id)}</a>",), n.parent or "root", n.depth, n.visits, n.rank,
             f"{n.value:.4f}", n.text] for n in summary.nodes[:15]]
    return head + plot_div(fig, "tree-plot") + "<h3>Most visited nodes</h3>" + _grid(
        ["node", "parent", "depth", "visits", "rank", "PUCT value", "score"], rows)


def _lineage(run: RunData) -> tuple[str, list[str]]:
    tree = lineage_tree(run)
    fig = lineage_figure(tree)
    if fig is None:
        return note("No program was judged yet."), []
    ranks = {n.id: n.rank for n in tree.nodes}
    order = sorted(ranks, key=lambda p: (ranks[p] is None, ranks[p] or 0, -run.programs[p].proposal_index))
    shown = set(order)
    cut = (f" {tree.cut} older ancestors are left out (`evolve lineage {run.path} --program ID` shows a whole "
           "ancestry).") if tree.cut else ""
    head = note(f"The {min(TOP, len(run.judged))} best programs (ranked by score, #1 the best) and their "
                f"ancestors by first parent, at most {MAX_NODES} programs.{cut} Click a program to open its "
                "code, diff from its parent, verdict, feedback, derivation, prompt and response.")
    panels = "".join(program_panel(run, run.programs[p], ranks[p], shown) for p in order)
    return head + plot_div(fig, "lineage-plot", on_click_program=True) + panels, order


def _models(run: RunData) -> str:
    usage = model_usage(run)
    rows = []
    for u in usage:
        lat = [u.latency(q) for q in (0.5, 0.9)]
        mean = sum(u.latencies) / len(u.latencies) if u.latencies else None
        rows.append([u.model, u.proposals, u.parse_failures, u.diff_failures, u.api_failures, u.evaluated, u.accepted,
                     u.tokens_in, u.tokens_out, f"{u.usd:.4f}"] + ["-" if x is None else f"{x:.2f}" for x in (mean, *lat)])
    fig = models_figure(usage)
    table = _grid(["model", "proposals", "parse failures", "diffs not applied", "provider failures", "judged",
                   "accepted", "tokens in", "tokens out", "USD", "latency mean (s)", "median", "p90"], rows)
    return table + (plot_div(fig, "models-plot") if fig is not None else "")


def _negative(run: RunData) -> str:
    fig = negative_figure(run)
    if fig is None:
        return note("No proposal had negative-prompting items in force (prompts.negative is off, its policy never "
                    "started, or no proposer writes prompts).")
    items = negative_items(run)
    return (plot_div(fig, "negative-plot") + "<h3>Items</h3>"
            + _grid(["item", "first in force at proposal", "proposals"], [[i.text, i.first, i.proposals] for i in items]))


def build_run_report(run_dir: str | Path) -> tuple[str, dict]:
    """(the page, its key figures) for the run in ``run_dir``."""
    run = load_run(run_dir)
    points = timeline(run)
    figures = summary_figures(run, points)
    lineage, inlined = _lineage(run)
    sections = [Section("summary", "Summary", _summary(run, figures)),
                Section("progress", "Best score and accepted programs", _progress(points)),
                Section("verdicts", "Verdicts and rejection reasons", _verdicts(run, points))]
    if run.strategy == "islands" or (run.strategy_state() or {}).get("db"):
        sections.append(Section("archive", "MAP-Elites archives", _archive(run)))
    if run.strategy == "tree" or (run.strategy_state() or {}).get("tree"):
        sections.append(Section("tree", "Tree search", _tree(run)))
    sections += [Section("lineage", "Lineage of the best programs", lineage),
                 Section("models", "Tokens, cost and latency per model", _models(run)),
                 Section("negative", "Negative prompting", _negative(run))]
    figures["inlined_programs"] = inlined
    subtitle = f"task {run.task} · strategy {run.strategy} · {len(run.programs)} proposals · created {run.created}"
    return page(f"Run {run.run_id}", subtitle, sections, figures), figures


def write_run_report(run_dir: str | Path, out: str | Path | None = None) -> WrittenReport:
    """Write the report of ``run_dir`` to ``out`` (default ``RUN_DIR/report.html``)."""
    start = time.perf_counter()
    html, figures = build_run_report(run_dir)
    path = Path(out) if out is not None else Path(run_dir) / REPORT_NAME
    return write_page(path, html, start, f"{figures['proposals']} programs, {len(figures['inlined_programs'])} "
                                         "with panels")
