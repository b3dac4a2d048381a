"""`evolve report --bench DIR`: Table 3 and Figure 2 from real `evolve bench` trial records (a scripted
model through litellm and the structural proposer), checked against the records read here directly;
the page opens in headless Chromium without a script error. Also: the report of a synthetic run of
many programs inlines only the best programs' lineage, and bad input gives one-line errors."""

import argparse
import json
import re
import sys

import pytest

from benchmarks.report_scale import synthetic_run
from browser import Browser, require_chromium
from conftest import FIXTURES, fixture_candidates
from doubles.scripted_server import Rule, ScriptedServer
from evolve.cli import main
from evolve.commands import bench as cmd_bench
from evolve.commands.common import UsageError
from evolve.config import config_from_dict
from evolve.report.data import load_run
from evolve.report.lineage_tree import lineage_tree
from evolve.store.journal import read_journal
from evolve.store.run_store import RunStore
from tasks.registry import get_task

KEY_ENV = "STATMECH_TEST_LLM_KEY"
MODEL = "openai/scripted"
TASKS = ["P01", "P02"]
VARIANTS = ["canonical", "paraphrased"]
ROUNDS = 3


def answer(task: str) -> str:
    name, claims = next((n, dict(c)) for n, c in fixture_candidates().items() if c["task"] == task)
    claims.pop("task")
    return json.dumps({**claims, "code": (FIXTURES / name).read_text()})


WRONG_P01 = json.dumps({"tractable_class": "free_fermion", "complexity_O": "O(n)", "confidence": 0.5,
                        "justification": "Periodic chain.",
                        "code": "import math\n\ndef Z_efficient(params, n):\n"
                                "    return (2 * math.cosh(params['beta'] * params['J'])) ** n\n"})


def script() -> list:
    """P01 is right at round 1 (canonical) or round 2 (paraphrased); P02 is right at once."""
    out = []
    for variant, wrong in zip(VARIANTS, (1, 2)):
        out.append(Rule(re.escape(get_task("P01").description(variant)), [WRONG_P01] * wrong + [answer("P01")],
                        repeat_last=True))
        out.append(Rule(re.escape(get_task("P02").description(variant)), [answer("P02")], repeat_last=True))
    return out


def bench(*argv) -> int:
    parser = argparse.ArgumentParser(prog="evolve")
    cmd_bench.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["bench", *argv])
    try:
        return args.run(args)
    except UsageError as exc:
        print(f"evolve bench: error: {exc}", file=sys.stderr)
        return 2


@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench")
    with pytest.MonkeyPatch.context() as mp, ScriptedServer(script()) as srv:
        mp.setenv(KEY_ENV, "sk-test")
        llm = tmp / "llm.yaml"
        llm.write_text(f"retries: 0\nrequest_timeout_s: 20\nmodels:\n  - name: {MODEL}\n    api_base: {srv.base_url}\n"
                       f"    api_key_env: {KEY_ENV}\n    input_cost_per_token: 1.0e-6\n    output_cost_per_token: 2.0e-6\n")
        out = tmp / "out"
        assert bench("--models", f"{MODEL},structural", "--tasks", ",".join(TASKS), "--rounds", str(ROUNDS),
                     "--samples", "1", "--no-ladder", "--no-judge", "--out", str(out), "--llm-config", str(llm)) == 0
    return out


def first_passes(out) -> dict:
    """(model, variant) -> each trial's first numerically passing round, read from the trial files."""
    got: dict = {}
    for path in (out / "trials").glob("*.json"):
        rec = json.loads(path.read_text())
        rounds = rec["trace"]["rounds"]
        first = next((r["index"] for r in rounds if r["verdict"] and r["verdict"]["numerical"]["passed"]), None)
        got.setdefault((rec["model"], rec["variant"]), []).append(first)
    return got


def table_rows(page: str) -> list[list[str]]:
    section = re.search(r"<section id='table3'>(.*?)</section>", page, re.S).group(1)
    return [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", section)[1:]]


def test_bench_report_table3_and_figure2_match_the_trial_records(bench_dir, capsys):
    assert main(["report", "--bench", str(bench_dir)]) == 0
    assert re.match(rf"wrote {re.escape(str(bench_dir / 'report.html'))} \(\d+\.\d MB, 8 trials", capsys.readouterr().out)
    page = (bench_dir / "report.html").read_text()
    firsts = first_passes(bench_dir)
    assert sorted(firsts[(MODEL, "canonical")]) == [0, 1] and sorted(firsts[(MODEL, "paraphrased")]) == [0, 2]

    def cumulative(model, variant):
        f = firsts[(model, variant)]
        return [100.0 * sum(x is not None and x <= k for x in f) / len(f) for k in range(ROUNDS)]

    rows = table_rows(page)
    assert [r[1] for r in rows] == ["canonical", "paraphrased"] * 2
    assert rows[0][0] == MODEL and rows[1][0] == "" and rows[2][0] == "structural"
    for i, row in enumerate(rows):
        model = MODEL if i < 2 else "structural"
        f = firsts[(model, row[1])]
        nm0 = 100.0 * sum(x == 0 for x in f) / len(f)
        k_star = max(f) if None not in f else None
        assert row[3] == f"{nm0:.0f}" and row[5] == ("—" if k_star is None else str(k_star))   # NM0, k*
        assert row[-1] == f"{len(f)}/{len(TASKS)}"
    require_chromium()
    with Browser() as b:
        b.open(bench_dir / "report.html")
        assert b.errors() == []
        traces = b.js("return document.getElementById('figure2-plot').data.map(function (t) {"
                      " return [t.name, t.xaxis, t.y]; });")
    panels = {"x": "canonical", "x2": "paraphrased"}
    assert sorted((name, panels[axis]) for name, axis, _ in traces) == sorted(firsts)
    for name, axis, ys in traces:
        assert ys == pytest.approx(cumulative(name, panels[axis]))
    assert any(ys != [100.0] * ROUNDS for _, _, ys in traces), "a model that needed revision rounds"


def test_bench_report_refuses_directories_without_results(tmp_path, capsys):
    assert main(["report", "--bench", str(tmp_path)]) == 2
    assert "has no trials/ folder" in capsys.readouterr().err
    (tmp_path / "trials").mkdir()
    (tmp_path / "trials" / "x.json").write_text("{not json")
    assert main(["report", "--bench", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evolve report: error: ") and "x.json is not a readable trial record" in err
    assert err.count("\n") == 1
    assert main(["report"]) == 2 and "one of the two" in capsys.readouterr().err
    assert main(["report", str(tmp_path), "--bench", str(tmp_path)]) == 2


# -- a large run ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    return synthetic_run(tmp_path_factory.mktemp("synthetic"), 800, seed=3)


def test_a_large_run_inlines_the_best_programs_and_their_nearest_ancestors_only(synthetic):
    run = load_run(synthetic)
    tree = lineage_tree(run, top=5, max_nodes=10)
    ids = [n.id for n in tree.nodes]
    assert len(ids) == len(set(ids)) == 10 and tree.cut > 0
    judged = sorted((r for r in run.proposals if r.evaluation is not None),
                    key=lambda r: (tuple(-x for x in r.evaluation.score), r.proposal_index))
    top = [r.id for r in judged[:5]]
    assert [n.id for n in sorted(tree.nodes, key=lambda n: n.rank or 99)[:5]] == top
    assert all(n.parent is None or n.parent == run.programs[n.id].parent for n in tree.nodes)
    # the budget keeps the nearest ancestors: a kept ancestor's child is kept
    kept = set(ids)
    for n in tree.nodes:
        if n.rank is None:
            assert any(run.programs[m].parent == n.id for m in kept)


def test_a_large_run_report_stays_small_and_opens_without_errors(synthetic, capsys):
    assert main(["report", str(synthetic)]) == 0
    page = (synthetic / "report.html").read_text()
    data = json.loads(re.search(r"id='report-data'>(.*?)</script>", page, re.S).group(1))
    records = read_journal(synthetic / "journal.msgpack").records
    assert data["proposals"] == sum(r["kind"] == "proposal" for r in records) == 800
    assert data["evaluations"] == sum(r["kind"] == "evaluation" for r in records)
    assert len(data["inlined_programs"]) <= 300 and page.count("<details class='program") == len(data["inlined_programs"])
    assert len(page.encode()) < 8_000_000
    require_chromium()
    with Browser() as b:
        b.open(synthetic / "report.html")
        assert b.errors() == []


def test_a_run_that_has_done_nothing_yet_reports_what_it_has(tmp_path, capsys):
    cfg = config_from_dict({"task": "P01", "strategy": "tree"})
    with RunStore.create(tmp_path, cfg.to_dict(), "P01", run_id="fresh") as store:   # live: the journal is held
        assert main(["report", str(store.path), "--out", str(tmp_path / "fresh.html")]) == 0
    page = (tmp_path / "fresh.html").read_text()
    data = json.loads(re.search(r"id='report-data'>(.*?)</script>", page, re.S).group(1))
    assert (data["proposals"], data["evaluations"], data["best_id"], data["inlined_programs"]) == (0, 0, None, [])
    for text in ("No program was judged yet.", "No evaluations yet.", "No snapshot of the tree yet."):
        assert text in page
    require_chromium()
    with Browser() as b:
        b.open(tmp_path / "fresh.html")
        assert b.errors() == []
