"""Shared fixtures: one sandbox (a warm fork server) and one Ray (``ray_session``) for the whole
session, fixture candidates."""

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# the path search's executor costs stay the fixed default: learned ones would make a test's search
# depend on which contractions ran before it (tests/test_executor_rates.py lifts this where it tests them)
os.environ["STATMECH_EXECUTOR_RATES"] = "default"

FIXTURES = Path(__file__).parent / "fixtures" / "candidates"

#: the files that take longest (35-370 s each on two busy cores, the sums of `--durations=0` at
#: 21c6676), longest first. `make test` hands whole files to its two workers in this order
#: (pytest_configure below keeps xdist from reordering them by test count); alphabetically most
#: of these came last, and the suite ended with one worker idle while the other finished them.
#: Longest first, the short files fill in at the end.
LONG_FILES = ("test_hostile_inputs.py", "test_run_faults.py", "test_derivation.py", "test_judgement.py",
              "test_oracle_sweep.py", "test_structural_templates.py", "test_structural_proposer.py",
              "test_launch_local.py", "test_runtime.py", "test_report.py", "test_cluster.py", "test_tasks_v1.py",
              "test_tune.py", "test_llm_chain.py", "test_task_t17.py", "test_paraphrase.py", "test_structural_v1.py",
              "test_tree_runtime.py", "test_tier3_solvers.py", "test_task_files.py", "test_strategy_bench.py",
              "test_nishimori_rungs.py", "test_llm_launch.py", "test_reliability_cli.py")


def pytest_configure(config):
    """pytest-xdist (3.x) hands out whole files ordered by their number of tests unless told not
    to (``--loadscope-reorder`` is its default): the files of a few long tests (test_run_faults.py,
    test_launch_local.py) then came last and one worker ended the suite alone for minutes (1798 s
    in all at 21c6676, the last ~10 minutes on one worker). Keep LONG_FILES' order."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items):
    """The long files first, in LONG_FILES' order; every other file after them, in collection order."""
    rank = {name: k for k, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONG_FILES)))     # stable: order within a file kept


@pytest.fixture(scope="session", autouse=True)
def _private_oracle_cache(tmp_path_factory):
    """Tests never read or write the user's oracle cache."""
    os.environ["STATMECH_CACHE"] = str(tmp_path_factory.mktemp("oracle-cache"))


@pytest.fixture(scope="session")
def sandbox():
    from evaluators.sandbox import Sandbox

    box = Sandbox()
    yield box
    box.close()


def fixture_candidates() -> dict[str, dict]:
    """name -> claims dict (with 'task') for every reference candidate in tests/fixtures/candidates."""
    return json.loads((FIXTURES / "claims.json").read_text())


def candidate_json(name: str, tmp_path: Path) -> Path:
    """Write the fixture candidate ``name`` as a paper-schema JSON file and return its path."""
    claims = dict(fixture_candidates()[name])
    claims.pop("task")
    claims["code"] = (FIXTURES / name).read_text()
    path = tmp_path / (Path(name).stem + ".json")
    path.write_text(json.dumps(claims))
    return path


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray for the tests that ask for it, in a temp dir of its own (``RAY_TMPDIR``: never
    the user's /tmp/ray, where another session's cluster may live); shut down at the end of the
    session if this fixture started it. Every test file that needs Ray in this process asks for
    this one, none starts or shuts down its own: ray.init and shutdown cost 5-15 s each on two
    busy cores, once per worker instead of once per file. The variables a Ray worker must
    inherit (a scripted provider's key) are set when the test files are imported, before this runs."""
    import shutil
    import tempfile

    ray = pytest.importorskip("ray")
    temp = tempfile.mkdtemp(prefix="ray-tests-")       # short: Ray's socket paths must fit in 107 bytes
    before = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = temp
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", _temp_dir=temp)
    yield ray
    if started and ray.is_initialized():
        ray.shutdown()
    if before is None:
        os.environ.pop("RAY_TMPDIR", None)
    else:
        os.environ["RAY_TMPDIR"] = before
    shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="session")
def chromium():
    """One headless Chromium for the session's report tests (tests/browser.py); skips, saying why,
    where Chromium is not installed."""
    from browser import Browser, require_chromium   # only the browser tests pay for selenium

    require_chromium()
    with Browser() as b:
        yield b
