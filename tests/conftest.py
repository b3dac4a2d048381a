"""Shared fixtures: one sandbox (a warm fork server) for the whole session, fixture candidates."""

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# the path search's executor costs stay the fixed default: learned ones would make a test's search
# depend on which contractions ran before it (tests/test_executor_rates.py lifts this where it tests them)
os.environ["STATMECH_EXECUTOR_RATES"] = "default"

FIXTURES = Path(__file__).parent / "fixtures" / "candidates"

#: the files that take longest (45-210 s each on two busy cores, `--durations`), longest first.
#: `make test` hands whole files to its two workers in collection order; alphabetically most of these
#: came last, and the suite ended with one worker idle while the other finished them. Longest first,
#: the short files fill in at the end.
LONG_FILES = ("test_runtime.py", "test_run_faults.py", "test_report.py", "test_judgement.py", "test_derivation.py",
              "test_hostile_inputs.py", "test_structural_templates.py", "test_structural_proposer.py",
              "test_strategy_bench.py", "test_cluster.py", "test_launch_local.py", "test_reliability_cli.py",
              "test_tune.py", "test_llm_launch.py", "test_task_t17.py",
              "test_oracle_sweep.py", "test_tree_runtime.py")


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
def chromium():
    """One headless Chromium for the session's report tests (tests/browser.py); skips, saying why,
    where Chromium is not installed."""
    from browser import Browser, require_chromium   # only the browser tests pay for selenium

    require_chromium()
    with Browser() as b:
        yield b
