"""One self-contained HTML page: the sections, plotly.js inlined once, a small script to open a
program's panel, and the report's key figures as JSON for machines.

Nothing is fetched at view time: no CDN, no fonts, no MathJax; the file opens from disk in any
browser. Figures are plotly figures serialised with plotly's own JSON encoder (which escapes
``<`` and ``/``, so no text in a figure can close the script that draws it).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from html import escape
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

PLOT_CONFIG = {"displaylogo": False, "responsive": True}
REPORT_NAME = "report.html"      # the default file name, in the run (or bench) directory

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #222; }
header { background: #263238; color: #eceff1; padding: 14px 24px; }
header h1 { margin: 0; font-size: 20px; } header p { margin: 4px 0 0; color: #b0bec5; }
nav { position: sticky; top: 0; background: #eceff1; padding: 6px 24px; border-bottom: 1px solid #cfd8dc; z-index: 10; }
nav a { margin-right: 14px; color: #37474f; text-decoration: none; } nav a:hover { text-decoration: underline; }
main { max-width: 1280px; margin: 0 auto; padding: 8px 24px 48px; }
section { margin-top: 28px; } h2 { border-bottom: 2px solid #cfd8dc; padding-bottom: 4px; font-size: 18px; }
p.note { color: #555; margin: 4px 0 8px; }
table { border-collapse: collapse; margin: 6px 0; } th, td { padding: 3px 8px; vertical-align: top; text-align: left; }
table.grid th, table.grid td { border: 1px solid #cfd8dc; } table.grid th { background: #eceff1; }
table.grid th.paper { background: #e3f2fd; }
table.kv th { color: #555; font-weight: 600; white-space: nowrap; } table.kv td { overflow-wrap: anywhere; }
table.num td { text-align: right; } table.num td:first-child, table.num td.l { text-align: left; }
tr.bad td { background: #fdecea; } tr.ok td { background: #fff; }
details.program { border: 1px solid #cfd8dc; border-radius: 4px; margin: 6px 0; background: #fafafa; }
details.program > summary { padding: 6px 10px; cursor: pointer; font-weight: 600; }
details.program.accepted > summary { border-left: 5px solid #2ca02c; }
details.program.rejected > summary { border-left: 5px solid #ff7f0e; }
details.program.failed > summary, details.program.no-code > summary { border-left: 5px solid #d62728; }
details.program .body { padding: 4px 14px 10px; background: #fff; }
details details { margin: 4px 0; } details details > summary { cursor: pointer; color: #1565c0; }
pre { background: #f5f5f5; padding: 8px; overflow-x: auto; white-space: pre-wrap; word-break: break-word;
      max-height: 520px; overflow-y: auto; font-size: 12.5px; }
pre.diff .add { color: #1b5e20; background: #e8f5e9; } pre.diff .del { color: #b71c1c; background: #ffebee; }
pre.diff .hunk { color: #6a1b9a; } .cut { color: #b71c1c; font-style: italic; }
"""

SCRIPT = """
function openProgram(id) {
  var el = document.getElementById(id);
  if (!el) { return; }
  for (var p = el; p; p = p.parentElement) { if (p.tagName === 'DETAILS') { p.open = true; } }
  el.scrollIntoView({block: 'start'});
  if (history.replaceState) { history.replaceState(null, '', '#' + id); }
}
window.addEventListener('DOMContentLoaded', function () {
  if (location.hash.length > 1) { openProgram(decodeURIComponent(location.hash.slice(1))); }
});
"""


@dataclass(frozen=True)
class Section:
    id: str            # HTML id (letters, digits, '-')
    title: str
    body: str          # HTML


def plot_div(fig: go.Figure, div_id: str, on_click_program: bool = False) -> str:
    """The figure as a div and the script that draws it (plotly.js must be on the page); with
    ``on_click_program`` a click on a point opens the panel named by its ``customdata[2]``."""
    fig.update_layout(template="plotly_white", font={"size": 12})
    post = None
    if on_click_program:
        post = ("document.getElementById('{plot_id}').on('plotly_click', function (e) {"
                " var p = e.points && e.points[0]; if (p && p.customdata && p.customdata[2]) { openProgram(p.customdata[2]); } });")
    return pio.to_html(fig, include_plotlyjs=False, full_html=False, div_id=div_id, config=PLOT_CONFIG,
                       post_script=post)


def note(text: str) -> str:
    return f"<p class='note'>{escape(text)}</p>"


def json_script(element_id: str, data) -> str:
    """``data`` as a JSON data block (not executed); ``<`` is escaped so no text can end the block."""
    text = json.dumps(data, default=str, sort_keys=True).replace("<", "\\u003c")
    return f"<script type='application/json' id='{element_id}'>{text}</script>"


def page(title: str, subtitle: str, sections: list[Section], data: dict) -> str:
    nav = "".join(f"<a href='#{s.id}'>{escape(s.title)}</a>" for s in sections)
    body = "".join(f"<section id='{s.id}'><h2>{escape(s.title)}</h2>{s.body}</section>" for s in sections)
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{escape(title)}</title><style>{CSS}</style>"
            f"<script>{get_plotlyjs()}</script><script>{SCRIPT}</script></head><body>"
            f"<header><h1>{escape(title)}</h1><p>{escape(subtitle)}</p></header><nav>{nav}</nav>"
            f"<main>{body}</main>{json_script('report-data', data)}</body></html>\n")


@dataclass(frozen=True)
class WrittenReport:
    path: Path
    bytes: int
    seconds: float          # to read the inputs and write the page
    contents: str           # what it shows, in a few words ("8 programs, 3 with panels")


def write_page(path: Path, html: str, started: float, contents: str) -> WrittenReport:
    """Write ``html`` to ``path`` atomically (readers see the old file or the new one);
    ``started``: the ``time.perf_counter()`` at which building the page began."""
    data = html.encode("utf-8")
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return WrittenReport(path, len(data), time.perf_counter() - started, contents)
