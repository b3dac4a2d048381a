"""`evolve verify` as a user runs it: exit codes, one JSON object on stdout, one-line errors."""

import json
import subprocess
import sys

import pytest

from conftest import candidate_json
from evolve.cli import main


def run_cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "evolve.cli", *args], capture_output=True, text=True, timeout=timeout)


def test_accept_prints_one_json_object_and_exits_0(tmp_path):
    path = candidate_json("p05_correct.py", tmp_path)
    r = run_cli("verify", "--task", "P05", str(path), "--json", "--samples", "2")
    assert r.returncode == 0, r.stderr
    verdict = json.loads(r.stdout)  # exactly one object: json.loads refuses trailing data
    assert verdict["verdict"] == "accept" and verdict["task"] == "P05"
    assert verdict["numerical"]["largest_n_verified"] >= 12


def test_the_ladder_stops_at_the_size_asked_for(tmp_path, capsys):
    path = candidate_json("p01_correct.py", tmp_path)
    assert main(["verify", "--task", "P01", str(path), "--json", "--samples", "1", "--ladder-max-n", "1000"]) == 0
    numerical = json.loads(capsys.readouterr().out)["numerical"]
    assert numerical["largest_n_verified"] == 1000
    assert numerical["frontier"]["kind"] == "ladder_cap" and numerical["frontier"]["n"] == 10_000
    assert max(r["n"] for r in numerical["rungs"]) == 1000


def test_reject_exits_1_with_feedback(tmp_path):
    path = tmp_path / "wrong.py"
    path.write_text("def Z_efficient(params, n):\n    return 2.0 ** n\n")
    r = run_cli("verify", "--task", "P01", str(path), "--samples", "1")
    assert r.returncode == 1
    assert "REJECT" in r.stdout and "samples failed" in r.stdout


@pytest.mark.parametrize(
    "setup,args,message",
    [
        (None, ["--task", "P99", "{good}"], "unknown task 'P99'; known tasks: "),
        (None, ["--task", "P01", "{missing}"], "candidate file not found"),
        ("{not json", ["--task", "P01", "{file}"], "is not valid JSON"),
        ('{"tractable_class": "gauge"}', ["--task", "P01", "{file}"], "has no 'code' string"),
        ("[1, 2]", ["--task", "P01", "{file}"], "must be an object"),
        (None, ["--task", "P01", "{good}", "--samples", "0"], "--samples"),
        (None, ["--task", "P01", "{good}", "--ladder-max-n", "0"], "--ladder-max-n"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(setup, args, message, tmp_path, capsys):
    good = candidate_json("p01_correct.py", tmp_path)
    bad = tmp_path / "bad.json"
    if setup is not None:
        bad.write_text(setup)
    subst = {"{good}": str(good), "{missing}": str(tmp_path / "nope.json"), "{file}": str(bad)}
    code = main(["verify", *[subst.get(a, a) for a in args]])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert message in err and len(err.splitlines()) == 1
    if "P99" in args:    # the catalogue is listed (user tasks another test registered may come first)
        assert "P01, P02, P03" in err


def test_missing_task_flag_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["verify", "x.py"])
    assert exc.value.code == 2
