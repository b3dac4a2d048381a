"""`evolve oracle`: exact values with the method used, and clear errors for bad input."""

import json
import math

import numpy as np
import pytest

from evaluators.oracles.naive import naive_log_z
from evolve.cli import main
from tasks.registry import get_task


def test_seeded_value_matches_naive_enumeration(capsys):
    assert main(["oracle", "--task", "P04", "--n", "16", "--seed", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    task = get_task("P04")
    assert out["log_z"] == pytest.approx(naive_log_z(task.to_model(task.probe_params(16, 2, 0), 16)), rel=1e-12)
    assert out["method"] and out["seconds"] >= 0


def test_params_file_and_forced_method(tmp_path, capsys):
    params = {"beta": 0.5, "J": 1.0}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(params))
    assert main(["oracle", "--task", "P03", "--n", "4096", "--params", str(path), "--method", "kaufman", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "kaufman" and out["log_z"] > 4096 * 0.69


@pytest.mark.parametrize(
    "args,message",
    [
        (["--task", "P04", "--n", "16", "--seed", "0", "--method", "kaufman"], "does not apply"),
        (["--task", "P04", "--n", "15", "--seed", "0"], "L*L"),
        (["--task", "P02", "--n", "6", "--params", "{shape}"], "bad parameters"),
        (["--task", "P06", "--n", "600", "--seed", "0"], "no exact method"),
        (["--task", "P01", "--n", "6", "--params", "{missing}"], "cannot read"),
        (["--task", "X1", "--n", "6", "--seed", "0"], "unknown task"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, message, tmp_path, capsys):
    shape = tmp_path / "shape.json"
    shape.write_text(json.dumps({"beta": 1.0, "J": 1.0, "h": [0.1, 0.2]}))
    subst = {"{shape}": str(shape), "{missing}": str(tmp_path / "none.json")}
    assert main(["oracle", *[subst.get(a, a) for a in args]]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_a_method_that_cannot_represent_the_case_hands_over_or_exits_2(tmp_path, capsys):
    """Every result is checked finite. P04 at beta = 200: whichever method answers, the value is
    finite and the ground-state one (planar's -inf hands over). At beta = 1e307, log Z itself
    exceeds a double: forced or not, a one-line error names the limit (exit 2)."""
    from test_oracle_sweep import ground_state_and_degeneracy

    task = get_task("P04")
    params = {**task.probe_params(64, 0, 0), "beta": 200.0}
    path = tmp_path / "cold.json"
    path.write_text(json.dumps(params))
    assert main(["oracle", "--task", "P04", "--n", "64", "--params", str(path), "--json"]) == 0
    e0, g0 = ground_state_and_degeneracy(8, np.concatenate([np.ravel(params["Jh"]), np.ravel(params["Jv"])]))
    assert json.loads(capsys.readouterr().out)["log_z"] == pytest.approx(-200.0 * e0 + math.log(g0), rel=1e-13)
    small = {**task.probe_params(16, 0, 0), "beta": 1e307}
    path.write_text(json.dumps(small))
    for forced in ([], ["--method", "brute"]):
        assert main(["oracle", "--task", "P04", "--n", "16", "--params", str(path), *forced]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "beyond its numerical range" in err
