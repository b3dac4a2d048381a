"""`evolve report` on real runs: the numbers in the page match the journal (read here as raw records,
independently of the report's code), every section is there, and the page opens in a real headless
Chromium without a script error; `evolve launch` and `evolve resume` end by naming the report.

Two real searches on Ray against the scripted model of doubles.scripted_scenario (P01, wrong first
answers): islands with the structural proposer mixed in and negative prompting on, then the tree
(launched, then resumed with more proposals).
"""

import contextlib
import html
import io
import json
import os
import re
import statistics
from collections import Counter
from pathlib import Path

import pytest
import yaml

from doubles.scripted_scenario import rules
from doubles.scripted_server import ScriptedServer
from evolve.cli import main
from evolve.store.journal import read_journal
from evolve.store.run_store import read_latest_snapshot
from search.database import fitness, named_score

ray = pytest.importorskip("ray")

KEY_ENV = "SCRIPTED_TEST_KEY"
# Ray workers inherit the environment at ray.init (the session's, tests/conftest.py): set at import, before it
os.environ.setdefault(KEY_ENV, "sk-scripted-test")
PRICE_IN, PRICE_OUT = 1e-6, 2e-6


@pytest.fixture(scope="module")
def ray_cluster(ray_session):
    """The session's Ray (tests/conftest.py): one ray.init per worker, not one per file."""


@pytest.fixture(scope="module")
def server():
    with ScriptedServer(rules(1)) as srv:
        yield srv


def config(strategy: str, api_base: str, root: Path, **extra) -> dict:
    return {"task": "P01", "seed": 1, "strategy": strategy,
            "budgets": {"proposals": 8, "evaluations": 8, "wall_time_s": 600},
            "proposers": {"llm": 1.0, "structural": 0.0},
            "evaluator": {"samples": 1, "rung_timeout_s": 5, "ladder_total_s": 10, "ladder_max_n": 1000, "judge": False},
            "ray": {"num_evaluators": 2, "num_proposers": 1, "batch_size": 4, "evaluator_cpus": 0.5},
            "llm": {"models": [{"name": "openai/scripted", "api_base": api_base, "api_key_env": KEY_ENV,
                                "input_cost_per_token": PRICE_IN, "output_cost_per_token": PRICE_OUT}],
                    "retries": 0, "request_timeout_s": 30},
            "run": {"root": str(root)}, **extra}


def cli(*argv) -> str:
    """Run `evolve ARGV...` in this process (the module's Ray session is reused); what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(argv)) == 0
    return out.getvalue()


def launch(raw: dict, tmp: Path) -> tuple[Path, str]:
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(raw))
    out = cli("launch", str(path))
    return Path(re.search(r"^run directory: (.+)$", out, re.M).group(1)), out


@pytest.fixture(scope="module")
def islands(ray_cluster, server, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("islands")
    raw = config("islands", server.base_url, tmp / "runs",
                 budgets={"proposals": 12, "evaluations": 12, "wall_time_s": 600},
                 proposers={"llm": 1.0, "structural": 0.34},
                 evaluator={"samples": 1, "rung_timeout_s": 5, "ladder_total_s": 10, "ladder_max_n": 1000, "judge": True},
                 strategies={"islands": {"islands": 2, "migration_interval": 4}},
                 prompts={"negative": {"enabled": True, "start_after_accepted": None, "start_after_failures": 1}})
    return launch(raw, tmp)


@pytest.fixture(scope="module")
def tree(ray_cluster, server, tmp_path_factory):
    """The tree run, launched with 8 proposals then resumed with 4 more: (run dir, launch output, resume output)."""
    tmp = tmp_path_factory.mktemp("tree")
    run_dir, launched = launch(config("tree", server.base_url, tmp / "runs"), tmp)
    resumed = cli("resume", str(run_dir), "--extra-proposals", "4")
    return run_dir, launched, resumed


class Journal:
    """A run's journal as raw records, read without the report's code."""

    def __init__(self, run_dir: Path):
        self.records = read_journal(run_dir / "journal.msgpack").records
        self.proposals = [r for r in self.records if r["kind"] == "proposal"]
        self.evaluations = [r for r in self.records if r["kind"] == "evaluation"]
        self.candidates = {r["candidate"]["id"]: r["candidate"] for r in self.proposals}

    def best(self) -> dict:
        """The judged record with the highest score, the earliest on ties (the engine's rule)."""
        judged = [(i, e) for i, e in enumerate(self.evaluations) if e["score"][0] > 0]
        return max(judged, key=lambda ie: (tuple(ie[1]["score"]), -ie[0]))[1]

    def accepted(self) -> int:
        return sum(e["verdict"]["verdict"] == "accept" for e in self.evaluations)


def report_data(page: str) -> dict:
    return json.loads(re.search(r"<script type='application/json' id='report-data'>(.*?)</script>", page, re.S)
                      .group(1))


def section_ids(page: str) -> list[str]:
    return re.findall(r"<section id='([a-z0-9-]+)'>", page)


# -- launch and resume name the report --------------------------------------------------------------

def test_launch_ends_by_naming_the_report_it_wrote(islands):
    run_dir, out = islands
    last = out.strip().splitlines()[-3:]
    assert last[0] == f"best program: {run_dir / 'best' / 'program.py'}"
    assert last[2] == f"report:       {run_dir / 'report.html'}"
    assert (run_dir / "report.html").stat().st_size > 1_000_000   # plotly.js is inlined


def test_resume_writes_the_report_again_with_the_new_proposals(tree):
    run_dir, _, resumed = tree
    assert resumed.strip().splitlines()[-1] == f"report:       {run_dir / 'report.html'}"
    data = report_data((run_dir / "report.html").read_text())
    j = Journal(run_dir)
    assert data["proposals"] == len(j.proposals) == 12 and data["evaluations"] == len(j.evaluations)


# -- the numbers in the page are the journal's --------------------------------------------------------

def test_islands_report_counts_best_program_and_named_score_match_the_journal(islands):
    run_dir, _ = islands
    page = (run_dir / "report.html").read_text()
    data, j = report_data(page), Journal(run_dir)
    assert (data["proposals"], data["evaluations"], data["accepted"]) == (len(j.proposals), len(j.evaluations),
                                                                          j.accepted())
    best = j.best()
    v = best["verdict"]
    assert data["best_id"] == best["id"] and data["best_score"] == best["score"]
    named = data["best_score_named"]
    assert named["status"] == {"accept": "accepted", "reject": "rejected"}[v["verdict"]]
    assert named["largest_n_verified"] == v["numerical"]["largest_n_verified"]
    assert named["numerical_pass"] == v["numerical"]["passed"] and named["physics"] == v["physics"]["passed"]
    assert named["class_consistent"] == v["class"]["consistent"] and named["complexity_honest"] == v["complexity"]["honest"]
    assert named["fitness"] == pytest.approx(fitness(best["score"]))
    assert f"<tr><th>evaluations</th><td>{len(j.evaluations)} ({j.accepted()} accepted)</td></tr>" in page
    assert f"<tr><th>largest n verified</th><td>{v['numerical']['largest_n_verified']}</td></tr>" in page
    assert section_ids(page) == ["summary", "progress", "verdicts", "archive", "lineage", "models", "negative"]


def test_islands_report_models_negative_items_and_panels_match_the_journal(islands):
    run_dir, _ = islands
    page = (run_dir / "report.html").read_text()
    j = Journal(run_dir)
    llm = [c for c in j.candidates.values() if c["model"] == "openai/scripted"]
    tokens_in, tokens_out = sum(c["tokens_in"] for c in llm), sum(c["tokens_out"] for c in llm)
    usd = sum(c["cost_usd"] for c in llm)
    assert tokens_in > 0 and usd == pytest.approx(tokens_in * PRICE_IN + tokens_out * PRICE_OUT)
    failures = [sum(c["error_kind"] == kind for c in llm) for kind in ("parse", "diff", "api")]
    row = f"<tr><td>openai/scripted</td><td>{len(llm)}</td>" + "".join(f"<td>{n}</td>" for n in failures)
    assert row in page and f"<td>{tokens_in}</td><td>{tokens_out}</td><td>{usd:.4f}</td>" in page
    latencies = [c["latency_s"] for c in llm]
    assert min(latencies) > 0
    assert f"<td>{statistics.mean(latencies):.2f}</td><td>{statistics.median(latencies):.2f}</td>" in page
    assert "<td>(structural)</td>" in page

    in_force = Counter(item for r in j.proposals for item in r.get("negative", []))
    assert in_force, "a failed first attempt puts a negative item in force for later LLM proposals"
    for item, count in in_force.items():
        assert f"<tr><td>{html.escape(item)}</td>" in page and f"<td>{count}</td></tr>" in page
    assert all(not r["negative"] for r in j.proposals if r["candidate"]["proposer"] == "structural")

    data = report_data(page)
    systems = {r["digest"]: r["text"] for r in j.records if r["kind"] == "system_prompt"}
    assert systems
    ranked = sorted(j.evaluations, key=lambda e: tuple(-x for x in e["score"]))
    assert data["inlined_programs"][0] == ranked[0]["id"]
    assert any(j.candidates[pid]["prompt"] for pid in data["inlined_programs"]), "a model's program has a panel"
    for pid in data["inlined_programs"]:
        c = j.candidates[pid]
        assert f"id='prog-{pid}'" in page
        if c["code"]:
            assert html.escape(c["code"]) in page
        if c["prompt"]:
            assert html.escape(c["prompt"]) in page and html.escape(c["response"]) in page
            assert html.escape(systems[c["prompt_meta"]["system"]]) in page
    wrong = sum(any(r["stage"] == "probe" and not r["passed"] and r["rel_err"] is not None
                    for r in e["verdict"]["numerical"]["rungs"]) for e in j.evaluations)
    if wrong:
        assert re.search(rf"<tr><td>probe: wrong value</td><td>{wrong}</td>", page)


def test_islands_report_opens_in_chromium_and_its_figures_hold_the_journal_numbers(islands, request):
    run_dir, _ = islands
    j = Journal(run_dir)
    b = request.getfixturevalue("chromium")   # skips here, saying why, without Chromium
    b.open(run_dir / "report.html")
    assert b.errors() == []
    best_trace, accepted_trace = b.js("var d = document.getElementById('progress-plot').data;"
                                      "return [d[0], d[1]];")
    assert best_trace["x"][-1] == len(j.evaluations) and accepted_trace["y"][-1] == j.accepted()
    assert best_trace["y"][-1] == pytest.approx(fitness(j.best()["score"]))
    assert best_trace["customdata"][-1][0] == j.best()["id"]
    # the archives: each island's cells are exactly the elites of the newest snapshot
    state, _ = read_latest_snapshot(run_dir)
    for i, island in enumerate(state["strategy"]["db"]["islands"]):
        elites = {p["copy_of"] or p["id"] for p in island["programs"]}
        if elites:
            shown = b.js(f"return document.getElementById('archive-plot-{i}').data[0].text;")
            assert {t for row in shown for t in row if t} == elites
    # a click on the best program's marker in the lineage tree opens its panel
    best = j.best()["id"]
    assert not b.js(f"return document.getElementById('prog-{best}').open;")
    marker = b.js("""
        var gd = document.getElementById('lineage-plot'); gd.scrollIntoView();
        var box = gd.getBoundingClientRect(), xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
        for (var t = 0; t < gd.data.length; t++) {
          var cd = gd.data[t].customdata || [];
          for (var k = 0; k < cd.length; k++) {
            if (cd[k][2] === arguments[0]) {
              return [box.left + xa._offset + xa.l2p(gd.data[t].x[k]), box.top + ya._offset + ya.l2p(gd.data[t].y[k])];
            }
          }
        }""", f"prog-{best}")
    b.click_at(*marker)
    assert b.js(f"return document.getElementById('prog-{best}').open;")
    assert b.errors() == []


def test_tree_report_shows_every_node_with_the_snapshot_visits(tree, request):
    run_dir, _, _ = tree
    page = (run_dir / "report.html").read_text()
    assert section_ids(page) == ["summary", "progress", "verdicts", "tree", "lineage", "models", "negative"]
    state, _ = read_latest_snapshot(run_dir)
    nodes = {n["id"]: n for n in state["strategy"]["tree"]["nodes"]}
    assert f"{state['strategy']['tree']['total_visits']} expansions" in page
    b = request.getfixturevalue("chromium")   # skips here, saying why, without Chromium
    b.open(run_dir / "report.html")
    assert b.errors() == []
    points = b.js("return document.getElementById('tree-plot').data[1].customdata;")
    assert {p[0]: p[1] for p in points} == {nid: n["visits"] for nid, n in nodes.items()}


def test_show_and_lineage_name_the_score_components(islands):
    run_dir, _ = islands
    j = Journal(run_dir)
    best = j.best()
    shown = json.loads(cli("show", str(run_dir), "--json"))
    assert shown["best_score"] == best["score"]
    assert shown["best_score_named"] == named_score(best["score"]).to_dict()
    assert shown["top"][0]["score_named"]["largest_n_verified"] == best["verdict"]["numerical"]["largest_n_verified"]
    text = cli("show", str(run_dir))
    assert " growth " in text and "physics/class/honest" in text
    assert f"best {best['id']}: {named_score(best['score']).text()}" in text
    lineage = cli("lineage", str(run_dir))
    assert f"score: {named_score(best['score']).text()}" in lineage
    assert "[2.0, 1.0" not in text + lineage     # no unlabelled vector
    chain = json.loads(cli("lineage", str(run_dir), "--json"))["ancestors"]
    assert chain[-1]["score_named"] == named_score(best["score"]).to_dict()


def test_the_islands_run_parses_judges_prices_and_names_parents(islands):
    """The LLM islands run on Ray (what tests/test_runtime.py's scripted run, now ``-m slow``, checks
    on a run of its own): the model's answers become proposals with their prompts, an answer without
    JSON is a parse failure, both verdicts occur, negative prompting is used, later generations name
    their parents, and the calls are priced."""
    run_dir, _ = islands
    j = Journal(run_dir)
    llm = [c for c in j.candidates.values() if c["proposer"] == "llm"]
    assert llm and all(c["prompt"] and c["model"] == "openai/scripted" for c in llm)
    assert any(c["parse_error"] and c["error_kind"] == "parse" for c in llm), "the scripted 'no JSON' answer"
    assert {e["verdict"]["verdict"] for e in j.evaluations} >= {"accept", "reject"}
    assert any(c["prompt_meta"].get("negative") for c in llm), "negative prompting was used"
    assert any(c["parent_ids"] for c in llm if not c["id"].startswith("g0000")), "later generations name their parents"
    assert sum(c["cost_usd"] for c in llm) > 0
