"""Lineage, top programs and run summaries from a synthetic run journal, and the `evolve lineage`,
`evolve show`, `evolve runs` commands on it (text and JSON, bad input -> one line, exit 2)."""

import argparse
import json
import types

import pytest

from evaluators.verdict import ClassCheck, Complexity, Numerical, Verdict
from evolve import cli
from evolve.commands import inspect as cmd_inspect
from evolve.store import journal
from evolve.store.lineage import LineageError, ancestry, run_summary, top_programs
from evolve.store.run_store import RunStore
from search.candidate import Candidate

BASE = "def Z_efficient(params, n):\n    import math\n    return 2.0 ** n\n"
CODE = {
    "aa01": BASE,
    "bb02": BASE.replace("return 2.0 ** n", "total = 2.0 ** n\n    return total"),
    "cc03": BASE.replace("return 2.0 ** n", "total = 2.0 ** n\n    return total * math.cosh(0.0)"),
    "dd04": "import numpy as np\n" + BASE.replace("return 2.0 ** n", "total = 2.0 ** n\n    return total * math.cosh(0.0)"),
    "ee05": "def Z_efficient(params, n):\n    return float(2 ** n)\n",
    "gg07": BASE,
}
# id: (parent_ids, proposer, model, class claim, scores (one per evaluation), verdict, largest n verified)
PROGRAMS = {
    "aa01": ([], "llm", "openai/a", "brute_force", [[0, 8.0]], "reject", 0),
    "bb02": (["aa01"], "llm", "openai/a", "transfer_matrix", [[1, 16.0]], "accept", 16),
    "ee05": ([], "structural", None, "closed_form", [[0, 100.0]], "reject", 0),
    "cc03": (["bb02", "ee05"], "llm", "openai/b", "transfer_matrix", [[0, 5.0], [1, 32.0]], "accept", 32),
    "dd04": (["cc03"], "llm", "openai/b", "transfer_matrix", [[1, 64.0]], "accept", 64),
    "gg07": (["zz99"], "llm", "openai/a", "tensor_network", [[0, 1.0]], "reject", 0),
}
CLOCK_STEP = 30.0


def verdict(pid, v, n):
    return Verdict(task="P04", verdict=v, numerical=Numerical(passed=v == "accept", max_rel_err=1e-13,
                                                              largest_n_verified=n),
                   complexity=Complexity(claimed="O(n)"), class_=ClassCheck(claimed=PROGRAMS[pid][3]),
                   feedback=f"feedback for {pid}").to_dict()


def build_run(root, monkeypatch, keep_open=False):
    ticks = iter(1000.0 + CLOCK_STEP * i for i in range(10_000))
    monkeypatch.setattr(journal, "time", types.SimpleNamespace(time=lambda: next(ticks)))
    store = RunStore.create(root, {"task": "P04", "seed": 1}, "P04", run_id="20261130-061502-p04-3f9a")
    for slot, (pid, (parents, proposer, model, cls, scores, v, n)) in enumerate(PROGRAMS.items()):
        cand = Candidate(id=pid, task="P04", code=CODE[pid], tractable_class=cls, complexity_O="O(n)",
                         proposer=proposer, model=model, parent_ids=parents, tokens_in=100, tokens_out=10 * slot,
                         cost_usd=0.01 * slot)
        store.journal.append({"kind": "proposal", "candidate": cand.to_dict(), "batch": 0, "slot": slot})
        if pid == "cc03":
            failed = Candidate.failed("ff06", "P04", "no JSON object in the answer", proposer="llm", model="openai/b")
            store.journal.append({"kind": "proposal", "candidate": failed.to_dict(), "batch": 0, "slot": 99})
        for score in scores:
            store.journal.append({"kind": "evaluation", "id": pid, "verdict": verdict(pid, v, n), "score": score,
                                  "features": {"cell": [slot, 0]}})
    store.journal.append({"kind": "promotion", "id": "dd04", "score": [1, 64.0]})
    store.journal.append({"kind": "finish", "reason": "budget exhausted"})
    store.set_status("finished", proposals=7)
    if not keep_open:
        store.close()
    return store


@pytest.fixture
def run(tmp_path, monkeypatch):
    return build_run(tmp_path / "runs", monkeypatch).path


def added_removed(diff):
    body = [ln for ln in diff.splitlines()[2:] if not ln.startswith("@@")]
    return ({ln[1:] for ln in body if ln.startswith("+")}, {ln[1:] for ln in body if ln.startswith("-")})


def test_ancestry_of_the_best_program_is_root_first_with_diffs_from_each_parent(run):
    chain = ancestry(run)
    assert [a.id for a in chain] == ["aa01", "bb02", "cc03", "dd04"]  # [1, 64] beats [0, 100]: lexicographic
    assert chain[0].diff_from_parent == "" and chain[0].parent_ids == []
    for prev, a in zip(chain, chain[1:]):
        assert a.diff_from_parent.startswith(f"--- {prev.id}/program.py\n+++ {a.id}/program.py\n@@")
        old, new = CODE[prev.id].splitlines(), CODE[a.id].splitlines()
        assert added_removed(a.diff_from_parent) == (set(new) - set(old), set(old) - set(new))
    assert [ln for ln in chain[3].diff_from_parent.splitlines()[2:] if ln[:1] in "+-"] == ["+import numpy as np"]
    c = chain[2]
    assert (c.proposer, c.model, c.class_claim, c.complexity_claim) == ("llm", "openai/b", "transfer_matrix", "O(n)")
    assert (c.verdict, c.largest_n_verified, c.score) == ("accept", 32, [1, 32.0])  # the re-evaluation counts
    assert c.parent_ids == ["bb02", "ee05"] and c.feedback == "feedback for cc03"
    assert chain[0].verdict == "reject" and chain[0].code == BASE


def test_ancestry_of_a_chosen_program_by_id_or_unique_prefix(run):
    assert [a.id for a in ancestry(run, "cc03")] == ["aa01", "bb02", "cc03"]
    assert [a.id for a in ancestry(run, "ee")] == ["ee05"]
    failed = ancestry(run, "ff06")
    assert len(failed) == 1 and failed[0].verdict is None and failed[0].code is None
    orphan = ancestry(run, "gg07")
    assert [a.id for a in orphan] == ["gg07"] and not orphan[0].parent_in_run and orphan[0].diff_from_parent == ""
    with pytest.raises(LineageError, match=r"'nope' is not in run 20261130-061502-p04-3f9a.*evolve show"):
        ancestry(run, "nope")
    with pytest.raises(LineageError, match="ambiguous"):
        ancestry(run, "")


def test_top_programs_rank_scores_lexicographically(run):
    assert [p.id for p in top_programs(run, 4)] == ["dd04", "cc03", "bb02", "ee05"]
    assert [p.id for p in top_programs(run, 10)][-2:] == ["aa01", "gg07"]
    assert top_programs(run, 0) == []


def test_run_summary_counts_cost_time_and_labels(run):
    s = run_summary(run)
    records = len(journal.read_journal(run / "journal.msgpack").records)
    assert (s["proposals"], s["evaluations"], s["accepted"], s["rejected"]) == (7, 6, 3, 3)
    assert s["failed_proposals"] == 1 and s["failed_by_kind"] == {"parse": 1}
    assert s["best_id"] == "dd04" and s["best_score"] == [1, 64.0]
    assert s["cost_usd"] == pytest.approx(0.01 * sum(range(6)))
    assert s["tokens_in"] == 600 and s["tokens_out"] == 10 * sum(range(6))
    assert s["wall_s"] == CLOCK_STEP * records
    assert s["proposals_per_minute"] == pytest.approx(7 / (CLOCK_STEP * records / 60))
    assert s["by_proposer"] == {"llm": 6, "structural": 1}
    assert s["by_model"] == {"openai/a": 3, "openai/b": 3, "(none)": 1}
    assert s["class_labels"] == ["brute_force", "closed_form", "tensor_network", "transfer_matrix"]
    assert (s["status"], s["finished"], s["promotions"], s["journal_torn"]) == ("finished", "budget exhausted", 1, False)


def test_a_live_run_with_a_torn_tail_can_be_inspected(tmp_path, monkeypatch):
    store = build_run(tmp_path, monkeypatch, keep_open=True)  # the writer still holds the journal
    with open(store.path / "journal.msgpack", "ab") as f:
        f.write(journal.encode_frame({"kind": "evaluation", "id": "aa01", "score": [9, 9]})[:-5])
    assert [a.id for a in ancestry(store.path)][-1] == "dd04"  # the torn evaluation is not counted
    assert run_summary(store.path)["journal_torn"] is True
    store.close()


def test_a_run_without_evaluations_has_no_best(tmp_path):
    with RunStore.create(tmp_path, {}, "P01") as store:
        pass
    with pytest.raises(LineageError, match="no evaluated program"):
        ancestry(store.path)
    assert run_summary(store.path)["best_id"] is None and top_programs(store.path, 3) == []


def evolve(monkeypatch, capsys, *argv):
    def build_parser():
        parser = argparse.ArgumentParser(prog="evolve")
        cmd_inspect.register(parser.add_subparsers(dest="command"))
        return parser

    monkeypatch.setattr(cli, "build_parser", build_parser)
    rc = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_lineage_command_prints_ancestors_and_indented_diffs(run, monkeypatch, capsys):
    rc, out, _ = evolve(monkeypatch, capsys, "lineage", run)
    assert rc == 0
    positions = [out.index(f"] {pid}  ") for pid in ("aa01", "bb02", "cc03", "dd04")]
    assert positions == sorted(positions)
    assert "root (no parent)" in out and "inspirations: ee05" in out
    assert "\n        +import numpy as np\n" in out and "\n        --- cc03/program.py\n" in out
    rc, out, _ = evolve(monkeypatch, capsys, "lineage", run, "--program", "bb02", "--json")
    data = json.loads(out)
    assert rc == 0 and data["program"] == "bb02" and [a["id"] for a in data["ancestors"]] == ["aa01", "bb02"]
    assert data["ancestors"][1]["diff_from_parent"] == ancestry(run, "bb02")[1].diff_from_parent


def test_show_and_runs_commands(run, monkeypatch, capsys):
    rc, out, _ = evolve(monkeypatch, capsys, "show", run, "--top", "2")
    assert rc == 0 and "proposals 7 (1 without code: parse 1)" in out and "budget exhausted" in out
    assert "dd04" in out and "cc03" in out and "bb02" not in out.split("best programs")[1]
    rc, out, _ = evolve(monkeypatch, capsys, "show", run, "--json")
    data = json.loads(out)
    assert [p["id"] for p in data["top"]] == ["dd04", "cc03", "bb02", "ee05", "aa01"] and data["proposals"] == 7
    rc, out, _ = evolve(monkeypatch, capsys, "runs", "--root", run.parent)
    assert rc == 0 and "20261130-061502-p04-3f9a" in out and "finished" in out and "P04" in out
    rc, out, _ = evolve(monkeypatch, capsys, "runs", "--root", run.parent, "--json")
    assert [r["status"] for r in json.loads(out)["runs"]] == ["finished"]


@pytest.mark.parametrize("argv,message", [
    (["lineage", "{tmp}/missing"], "does not exist"),
    (["lineage", "{tmp}"], "not a run directory"),
    (["lineage", "{run}", "--program", "nope"], "evolve show"),
    (["show", "{tmp}/missing"], "does not exist"),
    (["show", "{run}", "--top", "-1"], "--top"),
    (["runs", "--root", "{tmp}/missing"], "not a directory"),
])
def test_bad_input_is_one_line_and_exit_2(run, tmp_path, monkeypatch, capsys, argv, message):
    argv = [a.format(tmp=tmp_path, run=run) for a in argv]
    rc, out, err = evolve(monkeypatch, capsys, *argv)
    assert rc == 2 and out == "" and message in err
    assert err.startswith(f"evolve {argv[0]}: error: ") and err.count("\n") == 1
