"""Bench reports: ``table.md`` laid out like the paper's Table 3 (plus our columns and the
cumulative pass rates of Figure 2) and ``results.csv`` with the same numbers unrounded."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from evolve.bench.metrics import __doc__ as METRICS_DOC

COLUMNS = [  # (row key, Markdown header, CSV header)
    ("TC0", "TC0 (%) ↑", "TC0_pct"), ("NM0", "NM0 (%) ↑", "NM0_pct"), ("O", "O (%) ↑", "O_pct"),
    ("k_star", "k* ↓", "k_star"), ("time_s", "Time ↓", "time_s"), ("cost_usd", "Cost ↓", "cost_usd"),
    ("NM", "NM (%) ↑", "NM_pct"), ("Acc", "Acc (%) ↑", "Acc_pct"), ("k_star_acc", "k*acc ↓", "k_star_acc"),
    ("Cls", "Cls (%) ↑", "Cls_pct"), ("Phys", "Phys (%) ↑", "Phys_pct"), ("n_verified", "n ↑", "n_verified_median"),
]
PAPER_COLUMNS = 6  # TC0 .. Cost are Table 3's; the rest are ours


def cell_text(key: str, value) -> str:
    """A metric as Table 3 prints it (minutes, dollars, whole percentages; dashes for undefined k*)."""
    if value is None:
        return "—" if key.startswith("k_star") else "n/a"
    if key == "time_s":
        return f"{value / 60:.1f} m"
    if key == "cost_usd":
        return f"${value:.2f}" if value >= 0.01 or value == 0 else f"${value:.4f}"
    if key in ("k_star", "k_star_acc"):
        return str(value)
    return f"{value:.0f}"


def render_table(rows: list[dict]) -> str:
    """The main table: Table 3's layout (model named on its first row only) with our columns."""
    heads = ["Model", "Variant"] + [h for _, h, _ in COLUMNS] + ["Trials"]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    previous = None
    for r in rows:
        shown = r["model"] if r["model"] != previous else ""
        previous = r["model"]
        cells = [cell_text(k, r.get(k)) for k, _, _ in COLUMNS] if r["trials"] else ["—"] * len(COLUMNS)
        lines.append("| " + " | ".join([shown, r["variant"]] + cells + [f"{r['trials']}/{r['expected']}"]) + " |")
    return "\n".join(lines)


def render_markdown(rows: list[dict], settings: dict, tasks: list[str]) -> str:
    lines = ["# StatMechBench-v0 results", "",
             f"Tasks: {', '.join(tasks)}. Rounds k = {settings['rounds']}, {settings['samples']} parameter "
             f"sample(s) per probed n, seed {settings['seed']}, probe timeout {settings['timeout_s']:g} s, "
             f"ladder {'on' if settings['ladder'] else 'off'}, judge {'on' if settings['judge'] else 'off'}. "
             f"The first {PAPER_COLUMNS} metric columns are the paper's Table 3; the others are ours.", "",
             render_table(rows)]
    lines += ["", "## Cumulative numerical pass rate by round (Figure 2)", ""]
    n_rounds = settings["rounds"]
    heads = ["Model", "Variant"] + [f"k={k}" for k in range(n_rounds)]
    lines += ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for r in rows:
        rates = r.get("nm_by_round") or []
        cells = [f"{x:.0f}" for x in rates] + ["—"] * (n_rounds - len(rates))
        lines.append("| " + " | ".join([r["model"], r["variant"]] + cells) + " |")
    lines += ["", "## Definitions", "", "```", METRICS_DOC.strip(), "```", ""]
    return "\n".join(lines)


def render_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["model", "variant", "trials", "expected"] + [c for _, _, c in COLUMNS] + ["nm_by_round_pct"])
    for r in rows:
        vals = ["" if r.get(k) is None else r[k] for k, _, _ in COLUMNS]
        cum = ";".join(f"{x:g}" for x in r.get("nm_by_round") or [])
        w.writerow([r["model"], r["variant"], r["trials"], r["expected"]] + vals + [cum])
    return buf.getvalue()


def write_reports(out: str | os.PathLike, rows: list[dict], settings: dict, tasks: list[str]) -> tuple[Path, Path]:
    """Write ``table.md`` and ``results.csv`` into ``out``; their paths."""
    out = Path(out)
    table, results = out / "table.md", out / "results.csv"
    for path, text in ((table, render_markdown(rows, settings, tasks)), (results, render_csv(rows))):
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    return table, results
