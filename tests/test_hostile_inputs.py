"""Every command, and every config key, fed hostile values: never a traceback. Each call ends with
exit status 0, 1 or 2; whatever it writes on stderr is at most one line; a refused launch leaves no
run directory behind. Status 3 is the command line's "internal error" (a bug), so it fails here.

Each flag gets every string of ``NASTY_TEXT`` (a fixed sweep, so a regression on ``nan`` cannot
hide behind the luck of a draw) and then Hypothesis' own draws. The commands run in this process
(``evolve.cli.main``): `launch` and `resume` run with Ray and the search stubbed out (what is under
test is everything before them); `verify` gets a candidate that runs and fails its first probe, so
a valid flag costs one short sandbox run; `bench` gets a model name it refuses last, so every other
flag is checked first; `tune` gets a config with nothing to tune; `oracle` sizes stay where drawing
parameters is cheap or absurd (never the gigabytes in between).
"""

import contextlib
import io
import json
import math
import os
from pathlib import Path
from unittest import mock

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evolve import cli
from evolve.config import Config

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
ROOT = Path(__file__).parent.parent
LEGACY_RUN = ROOT / "tests" / "fixtures" / "legacy_runs" / "islands"

NASTY_TEXT = ["", " ", "-", "--", "nan", "NaN", "inf", "-inf", "+inf", "1e400", "-1e400", "0", "-0", "-1", "-5",
              "1e-320", "0x10", "1_000", "10**30", "1" * 40, "-" + "9" * 40, "\x00", "a\x00b", "é", "☃", "\n", "P01\n",
              "../../etc/passwd", "/dev/null", "/proc/self/mem", "/", ".", "$HOME", "{}", "[]", "true", "null",
              "127.0.0.1:0", "ray://", "auto"]


def hostile_text():
    return st.one_of(st.sampled_from(NASTY_TEXT), st.text(max_size=12),
                     st.integers(-10 ** 40, 10 ** 40).map(str),
                     st.floats(allow_nan=True, allow_infinity=True).map(repr))


# -- running a command here -----------------------------------------------------------------------

@pytest.fixture(scope="module", autouse=True)
def one_parser():
    """``cli.main`` builds its argparse parser on every call (10 ms of CPU; 25 ms on a busy machine), and
    this file makes about 4,500 calls: the parser is the same every time (nothing here adds a task or a
    plugin, the only things it could depend on), so it is built once for the file. Parsing, and all
    that follows it, is what is under test, and runs as it did."""
    with pytest.MonkeyPatch.context() as patch:
        parser = cli.build_parser()
        patch.setattr(cli, "build_parser", lambda: parser)
        yield


def call(argv):
    """(exit status, stdout, stderr) of ``evolve argv`` run here; never lets an exception through."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main([str(a) for a in argv])
        except SystemExit as exc:         # argparse's own refusals
            status = exc.code
    return status, out.getvalue(), err.getvalue()


def run(argv):
    status, out, err = call(argv)
    assert status in (0, 1, 2), f"evolve {argv!r} -> status {status}: {err!r}"
    assert "Traceback" not in out + err, f"evolve {argv!r} printed a traceback: {err[-500:]!r}"
    assert err.count("\n") <= 1, f"evolve {argv!r} wrote more than one line on stderr: {err!r}"
    if status == 2:
        assert err.strip(), f"evolve {argv!r} refused without saying why"
    return status, out, err


class NoRay:
    """Stands in for RaySession: what launch and resume do before and after Ray is what is tested."""

    sentinel = None

    def __init__(self, address=None):
        self.address = address

    def open(self):
        return self

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


@contextlib.contextmanager
def working_directory(path: Path):
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


@contextlib.contextmanager
def stubbed_search(cwd: Path):
    """Ray and the search stubbed out; relative paths (a run root of ".") land in ``cwd``."""
    with mock.patch("evolve.commands.launch.RaySession", NoRay), \
            mock.patch("evolve.commands.launch.drive", lambda cfg, store, **kw: "stubbed"), working_directory(cwd):
        yield


def confined(value, root: Path):
    """A hostile path that could really be created (this suite may run as root) is moved under ``root``."""
    if isinstance(value, str) and value.startswith("/") and not value.startswith(("/dev/", "/proc/")):
        return str(root / value.lstrip("/"))
    return value


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    (d / "binary.dat").write_bytes(bytes(range(256)) * 4)
    (d / "empty.yaml").write_text("")
    (d / "syntax.py").write_text("def Z_efficient(params, n):\n    return 2 **\n")
    (d / "wrong.py").write_text("def Z_efficient(params, n):\n    return 1.0\n")   # runs, fails the probes at once
    (d / "list.json").write_text("[1, 2, 3]")
    (d / "nan.json").write_text('{"code": "def Z_efficient(params, n):\\n  return (", "confidence": NaN}')
    (d / "ok.yaml").write_text("task: P01\n")
    (d / "adir").mkdir()
    return d


# -- each command's flags, one hostile value at a time ------------------------------------------------

def oracle(files, which, value):
    argv = {"--task": "P01", "--n": "10", "--seed": "0"}
    if which == "--n":   # sizes where drawing parameters is cheap, or absurd enough to be refused at once
        try:
            if 5000 < int(value) < 10 ** 20:
                value = "-7"
        except ValueError:
            pass
    argv[which] = value
    return ["oracle", *[x for kv in argv.items() for x in kv]]


def verify(files, which, value):
    argv = {"--task": "P01", "--samples": "1", which: value}
    return ["verify", files / "wrong.py", *[x for kv in argv.items() for x in kv]]


def bench(files, which, value):
    if which == "--llm-config" and value in ("/proc/self/mem",):
        value = str(files / "binary.dat")
    return ["bench", "--models", "not a model", "--out", files / "bench", which, value]


def tune(files, which, value):
    return ["tune", files / "ok.yaml", "--trials", "1", which, value]   # valid flags reach "nothing to tune"


def inspect(files, which, value):
    return {"show": ["show", value], "lineage": ["lineage", value], "runs": ["runs", "--root", value],
            "--program": ["lineage", LEGACY_RUN, "--program", value], "--top": ["show", LEGACY_RUN, "--top", value],
            "--json": ["show", value, "--json"]}[which]


def tasks(files, which, value):
    return ["tasks", "show", value] if which == "show" else ["tasks", "show", "P01", "--paraphrase", value]


def perf(files, which, value):
    if which == "--seeds":
        try:   # valid seeds would measure for real (minutes)
            if all(int(x) >= 0 for x in value.split(",") if x.strip()) and value.strip(", "):
                value = "-1"
        except ValueError:
            pass
        return ["perf", "tn", "--seeds", value]
    try:   # a valid count would measure for real
        if 1 <= int(value) <= 10000:
            value = "0"
    except ValueError:
        pass
    return ["perf", "sandbox", "--repeats", value]


def derive(files, which, value):
    if which in ("--seed", "--paraphrase"):
        try:   # a valid seed would derive for real (seconds each)
            if 0 <= int(value) < 2 ** 63:
                value = "-1"
        except ValueError:
            pass
    argv = {"--task": "P01", which: value}
    return ["derive", *[x for kv in argv.items() for x in kv]]


def run_readers(files, which, value):
    """replay, export and report, each given a hostile run directory; export and report also a hostile
    --out for a real run (replay's would re-judge the run for every value)."""
    command, flag = which.split()
    if flag == "run_dir":
        return [command, value]
    if flag == "--bench":
        return ["report", "--bench", value]
    return [command, LEGACY_RUN, "--out", value]


def resume(files, which, value):
    # the run directory is never reached with a valid flag: it does not exist
    return ["resume", value] if which == "run_dir" else ["resume", "/nonexistent/run", which, value]


def launch(files, which, value):
    return ["launch", value] if which == "config" else ["launch", files / "ok.yaml", which, value]


SWEEPS = [(oracle, f) for f in ("--n", "--seed", "--task", "--method")] + \
         [(verify, f) for f in ("--timeout", "--samples", "--seed", "--task", "--ladder-max-n")] + \
         [(bench, f) for f in ("--rounds", "--samples", "--timeout", "--seed", "--tasks", "--variants", "--llm-config")] + \
         [(tune, f) for f in ("--trials", "--parallel", "--address")] + \
         [(inspect, f) for f in ("show", "lineage", "runs", "--program", "--top", "--json")] + \
         [(tasks, f) for f in ("show", "--paraphrase")] + [(perf, f) for f in ("--repeats", "--seeds")] + \
         [(derive, f) for f in ("--task", "--seed", "--paraphrase")] + \
         [(run_readers, f) for f in ("replay run_dir", "export run_dir", "export --out", "report run_dir",
                                      "report --bench", "report --out")] + \
         [(resume, f) for f in ("run_dir", "--extra-proposals", "--extra-evaluations", "--extra-wall-time", "--address")] + \
         [(launch, f) for f in ("config", "--seed", "--address", "--run-root")]
IDS = [f"{build.__name__} {flag}" for build, flag in SWEEPS]


def try_flag(files, tmp_root: Path, build, which, value):
    if (build is launch and which == "--run-root") or (build is run_readers and which.endswith("--out")):
        value = confined(value, tmp_root)
    argv = build(files, which, value)
    if build is launch and which != "--run-root":
        argv += ["--run-root", tmp_root / "runs"]
    with stubbed_search(tmp_root):
        status, _, _ = run(argv)
    if build is launch and status == 2 and which != "--run-root":
        assert not (tmp_root / "runs").exists() or not any((tmp_root / "runs").iterdir()), \
            f"a refused launch ({argv!r}) left a run directory"


@pytest.mark.parametrize("build,which", SWEEPS, ids=IDS)
def test_every_flag_against_every_nasty_string(files, tmp_path, build, which):
    for k, value in enumerate(NASTY_TEXT):
        (tmp_path / str(k)).mkdir()
        try_flag(files, tmp_path / str(k), build, which, value)


@SETTINGS
@given(sweep=st.sampled_from(SWEEPS), value=hostile_text())
def test_every_flag_against_drawn_values(files, tmp_path_factory, sweep, value):
    try_flag(files, tmp_path_factory.mktemp("flag"), sweep[0], sweep[1], value)


# -- files as inputs ----------------------------------------------------------------------------------

JSON = st.recursive(st.none() | st.booleans() | st.integers(-10 ** 20, 10 ** 20) | st.floats() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
                    max_leaves=12)


@SETTINGS
@given(params=st.dictionaries(st.sampled_from(["beta", "J", "h", "xi", "eps", "mu", "x"]), JSON, max_size=4),
       task=st.sampled_from(["P01", "P02", "P05", "T07", "T10", "T11"]))
def test_oracle_parameter_files(files, params, task):
    path = files / "params.json"
    path.write_text(json.dumps(params))     # NaN and Infinity included, as Python writes them
    n = {"T07": "6", "T10": "8", "T11": "8"}.get(task, "10")
    run(["oracle", "--task", task, "--n", n, "--params", path])


def test_a_boolean_is_not_a_number_in_a_parameter_file(files):
    path = files / "bool.json"
    path.write_text('{"beta": true, "J": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]}')
    status, _, err = run(["oracle", "--task", "P01", "--n", "10", "--params", path])
    assert status == 2 and "'beta'" in err and "boolean" in err


@pytest.mark.parametrize("name", ["binary.dat", "empty.yaml", "list.json", "adir", "missing.json"])
def test_oracle_refuses_unusable_parameter_files_in_one_line(files, name):
    status, _, err = run(["oracle", "--task", "P01", "--n", "10", "--params", files / name])
    assert status == 2 and "--params" in err


@pytest.mark.parametrize("name", ["binary.dat", "empty.yaml", "list.json", "adir", "missing.py", "nan.json", "syntax.py"])
def test_verify_candidate_files(files, name):
    status, out, err = run(["verify", "--task", "P01", "--json", files / name])
    if status != 2:                  # it ran: the verdict is strict JSON, and a syntax error is "did not run"
        verdict = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
        assert verdict["verdict"] == "reject" and verdict["confidence"] is None
        assert verdict["sandbox"]["violations"] == [] and "did not run" in verdict["feedback"]


@pytest.mark.parametrize("name,why", [("binary.dat", "not a text file"), ("empty.yaml", "is empty"),
                                      ("adir", "cannot read"), ("missing.yaml", "cannot read")])
def test_unusable_config_files_are_one_line(files, tmp_path, name, why):
    with stubbed_search(tmp_path):
        status, _, err = run(["launch", files / name, "--run-root", tmp_path / "runs"])
    assert status == 2 and why in err and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("seed", ["-1", str(10 ** 30)])
def test_a_bad_seed_in_the_config_or_on_the_command_line_leaves_nothing(tmp_path, seed):
    config = tmp_path / "c.yaml"
    config.write_text(f"task: P01\nseed: {seed}\n")
    with stubbed_search(tmp_path):
        for argv in (["launch", config, "--run-root", tmp_path / "runs"],
                     ["launch", ROOT / "configs" / "p01.yaml", "--seed", seed, "--run-root", tmp_path / "runs"]):
            status, _, err = run(argv)
            assert status == 2 and "seed" in err
    assert not (tmp_path / "runs").exists()


# -- every config key ---------------------------------------------------------------------------------

def leaves(tree, prefix=""):
    """Dotted paths of every scalar (and list) in the default config."""
    for key, value in tree.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict) and value:
            yield from leaves(value, path)
        else:
            yield path


CONFIG_KEYS = sorted(leaves(Config().to_dict()))
HOSTILE_VALUES = [None, True, False, -1, 0, 1, 2 ** 63, 10 ** 30, -1e308, math.nan, math.inf, -math.inf, "", "x",
                  "\x00", "nan", "1e400", [], {}, [1, "a", None], {"a": {"b": 1}}, "P01", 0.5, -0.0, 1e-320]


def try_config(tmp_root: Path, key: str, value) -> None:
    if key == "run.root":
        value = confined(value, tmp_root)
    node = config = {"task": "P01"}
    *parents, last = key.split(".")
    for p in parents:
        node = node.setdefault(p, {})
    node[last] = value
    path = tmp_root / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    runs = tmp_root / "runs"
    argv = ["launch", path] + ([] if key == "run.root" else ["--run-root", runs])
    with stubbed_search(tmp_root):
        status, _, _ = run(argv)
    if status == 2 and key != "run.root":
        assert not runs.exists() or not any(runs.iterdir()), f"a refused launch ({key}={value!r}) left a run directory"
    not_a_number = isinstance(value, (bool, list, dict)) or (isinstance(value, float) and not math.isfinite(value))
    if _is_number(DEFAULTS.get(key)) and not_a_number:
        assert status == 2, f"{key} is a number; {value!r} was taken"


def _is_number(x) -> bool:
    """A real number (booleans are not)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


DEFAULTS = {}
for _key in CONFIG_KEYS:
    _node = Config().to_dict()
    for _part in _key.split("."):
        _node = _node[_part]
    DEFAULTS[_key] = _node


@pytest.mark.parametrize("key", CONFIG_KEYS)
def test_every_config_key_against_every_hostile_value(tmp_path, key):
    for k, value in enumerate(HOSTILE_VALUES):
        root = tmp_path / str(k)
        root.mkdir()
        try_config(root, key, value)


@SETTINGS
@given(key=st.sampled_from(CONFIG_KEYS), value=st.one_of(JSON, hostile_text()))
def test_every_config_key_against_drawn_values(tmp_path_factory, key, value):
    try_config(tmp_path_factory.mktemp("cfg"), key, value)


@pytest.mark.parametrize("where", ["evolve.store.run_store._new_run_dir", "evolve.store.run_store.atomic_write",
                                   "evolve.store.run_store.Journal.create"])
def test_a_run_root_that_refuses_writes_is_one_line_and_leaves_nothing(files, tmp_path, where):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / "runs" / "x"))

    (tmp_path / "runs").mkdir()
    with stubbed_search(tmp_path), mock.patch(where, refuse):
        status, _, err = run(["launch", files / "ok.yaml", "--run-root", tmp_path / "runs"])
    assert status == 2 and "cannot create a run directory" in err and "Permission denied" in err
    assert not any((tmp_path / "runs").iterdir()), "the half-made run directory was removed"


def test_a_negative_size_is_refused_for_every_task_naming_the_flag():
    from tasks.registry import all_tasks

    for task in all_tasks():
        status, _, err = run(["oracle", "--task", task.id, "--n", "-5", "--seed", "0"])
        assert status == 2 and "--n must be a positive number of spins, got -5" in err, task.id


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs a resource limit on a child process")
def test_a_size_beyond_the_memory_limit_is_one_line(tmp_path):
    import resource
    import subprocess
    import sys

    def limit():      # 3 GB of address space: P01 at n = 10^9 needs 8 GB for its couplings alone
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    done = subprocess.run([str(Path(sys.executable).with_name("evolve")), "oracle", "--task", "P01", "--n",
                           str(10 ** 9), "--seed", "0"], capture_output=True, text=True, preexec_fn=limit, timeout=300)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr[-2000:]
    assert "--n 1000000000" in done.stderr and "memory" in done.stderr
