"""`evolve report` without Ray: Table 3 and Figure 2 from real `evolve bench` trial records (a scripted
model through litellm and the structural proposer), checked against the records read here directly;
a synthetic run of many programs, whose report inlines only the best programs' lineage; hand-made
runs (nothing done yet; hostile text and a derivation); one-line errors for bad input. Every page
opens in headless Chromium without a script error."""

import argparse
import json
import re
import sys
from html import escape

import pytest

from benchmarks.report_scale import synthetic_run
from conftest import FIXTURES, fixture_candidates
from database_helpers import code, verdict
from doubles.scripted_server import Rule, ScriptedServer
from evolve.cli import main
from evolve.commands import bench as cmd_bench
from evolve.commands.common import UsageError
from evolve.config import config_from_dict
from evolve.store.run_view import read_run
from evolve.report.lineage_tree import lineage_tree
from evolve.store.events import EvaluationEvent, ProposalEvent
from evolve.store.journal import read_journal
from evolve.store.run_store import RunStore
from search.candidate import Candidate
from search.database import score_of
from search.records import Evaluation
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


def test_bench_report_table3_and_figure2_match_the_trial_records(bench_dir, capsys, request):
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
    b = request.getfixturevalue("chromium")   # skips here, saying why, without Chromium
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
    run = read_run(synthetic)
    tree = lineage_tree(run, top=5, max_nodes=10)
    ids = [n.id for n in tree.nodes]
    assert len(ids) == len(set(ids)) == 10 and tree.cut > 0
    judged = sorted((r for r in run.proposed if r.evaluation is not None),
                    key=lambda r: (tuple(-x for x in r.evaluation.score), r.proposal_index))
    top = [r.id for r in judged[:5]]
    assert [n.id for n in sorted(tree.nodes, key=lambda n: n.rank or 99)[:5]] == top
    assert all(n.parent is None or n.parent == run.programs[n.id].parent for n in tree.nodes)
    # the budget keeps the nearest ancestors: a kept ancestor's child is kept
    kept = set(ids)
    for n in tree.nodes:
        if n.rank is None:
            assert any(run.programs[m].parent == n.id for m in kept)


def test_a_large_run_report_stays_small_and_opens_without_errors(synthetic, capsys, request):
    assert main(["report", str(synthetic)]) == 0
    page = (synthetic / "report.html").read_text()
    data = json.loads(re.search(r"id='report-data'>(.*?)</script>", page, re.S).group(1))
    records = read_journal(synthetic / "journal.msgpack").records
    assert data["proposals"] == sum(r["kind"] == "proposal" for r in records) == 800
    assert data["evaluations"] == sum(r["kind"] == "evaluation" for r in records)
    assert len(data["inlined_programs"]) <= 300 and page.count("<details class='program") == len(data["inlined_programs"])
    assert len(page.encode()) < 8_000_000
    b = request.getfixturevalue("chromium")   # skips here, saying why, without Chromium
    b.open(synthetic / "report.html")
    assert b.errors() == []


def test_a_run_that_has_done_nothing_yet_reports_what_it_has(tmp_path, capsys, request):
    cfg = config_from_dict({"task": "P01", "strategy": "tree"})
    with RunStore.create(tmp_path, cfg.to_dict(), "P01", run_id="fresh") as store:   # live: the journal is held
        assert main(["report", str(store.path), "--out", str(tmp_path / "fresh.html")]) == 0
    page = (tmp_path / "fresh.html").read_text()
    data = json.loads(re.search(r"id='report-data'>(.*?)</script>", page, re.S).group(1))
    assert (data["proposals"], data["evaluations"], data["best_id"], data["inlined_programs"]) == (0, 0, None, [])
    for text in ("No program was judged yet.", "No evaluations yet.", "No snapshot of the tree yet."):
        assert text in page
    b = request.getfixturevalue("chromium")   # skips here, saying why, without Chromium
    b.open(tmp_path / "fresh.html")
    assert b.errors() == []


HOSTILE = {"class": "<script>window.__pwned = 1</script>", "justification": "<img src=x onerror='window.__pwned = 3'>",
           "code_comment": "# </script><script>window.__pwned = 2</script>", "model": "evil/<b onmouseover=alert(1)>m",
           "negative": "</td></tr></table><script>window.__pwned = 4</script>"}
DERIVATION = [  # Candidate.derivation as the derivation proposer records it: steps with their checks, the solver last
    {"action": "gauge", "summary": "gauged the couplings to +|J|", "params": {}, "log_change": 0.0,
     "check": {"passed": True, "in_process": 1.2e-15, "sandbox": 3.4e-14, "instances": ["n=9 beta=0.53"], "detail": None}},
    {"action": "summing_out", "summary": "summed out 4 spins of degree 2", "params": {"degree": 2}, "log_change": 1.5,
     "check": {"passed": False, "in_process": 0.02, "sandbox": None, "instances": [], "detail": "log Z moved"}},
    {"action": "solve", "summary": "chain", "params": {}, "claims": {"tractable_class": "transfer_matrix"}}]


def test_hostile_text_is_shown_as_text_and_a_derivation_as_its_checked_steps(tmp_path, request):
    cfg = config_from_dict({"task": "P01", "strategy": "islands"})
    with RunStore.create(tmp_path, cfg.to_dict(), "P01", run_id="hostile") as store:
        src = code(1.0, "\n" + HOSTILE["code_comment"] + "\n")
        cand = Candidate(id="g0000s00", task="P01", code=src, tractable_class=HOSTILE["class"], complexity_O="O(n)",
                         justification=HOSTILE["justification"], proposer="derivation", model=HOSTILE["model"],
                         prompt="<!-- a prompt --><script>window.__pwned = 5</script>", response="<b>bold?</b>")
        store.record(ProposalEvent(cand, 0, 0, 0, {"derivation": DERIVATION}, (HOSTILE["negative"],)))
        v = verdict(accept=False, n=14, passed=False)
        store.record(EvaluationEvent(Evaluation(cand.id, v, score_of(v, src), 1.0, "test:1")))
        run = read_run(store.path)
        assert [s["action"] for s in run.programs["g0000s00"].derivation] == ["gauge", "summing_out", "solve"]
        assert main(["report", str(store.path)]) == 0
    page = (store.path / "report.html").read_text()
    assert "<script>window.__pwned" not in page and "<img src=x" not in page
    assert escape(HOSTILE["class"]) in page and "Derivation (3 steps)" in page
    b = request.getfixturevalue("chromium")   # skips here, saying why, without Chromium
    b.open(store.path / "report.html")
    b.js("openProgram('prog-g0000s00'); document.querySelectorAll('#prog-g0000s00 details')"
         ".forEach(function (d) { d.open = true; });")
    assert b.js("return window.__pwned;") is None and b.errors() == []
    text = b.js("return document.getElementById('prog-g0000s00').innerText;")
    for value in HOSTILE.values():
        assert value.strip("# ") in text
    rows = b.js("return Array.from(document.querySelectorAll('#prog-g0000s00 table.grid tr')).map("
                "function (r) { return Array.from(r.cells).map(function (c) { return c.innerText; }); });")
    steps = [r for r in rows if r and r[0] in ("1", "2", "3")]
    assert [(r[1], r[4]) for r in steps] == [("gauge", "passed"), ("summing_out", "FAILED"), ("solve", "-")]
    assert steps[0][5] == "in_process 1.2e-15, sandbox 3.4e-14" and steps[1][5] == "in_process 2.0e-02: log Z moved"
