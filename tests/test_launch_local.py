"""A launch never joins a stranger's Ray cluster by accident (issue 32, item 1).

The stranger is a real ``ray start --head --num-cpus 0`` in a temp dir of its own (``RAY_TMPDIR``;
tests/doubles/stranger_head.py), seen by every launch here as a head another user started on the
machine: Ray records its address where a bare ``ray.init()`` looks for one. With 0 CPUs, a launch
that joined it could never place an evaluator: before the fix such a run sat at "evaluations 0/N"
with no message, past its wall budget. Now:

- without ``--address`` a launch starts a local cluster of its own, says so, and finishes, whether
  the stranger's head is alive or was killed without ``ray stop`` (its files left behind: a bare
  ``ray.init()`` then waited minutes on the dead address, and its sentinel was left behind);
- ``--address auto`` is the explicit way to join it: a head that cannot place the run's evaluators
  is one line and exit 2 before any run directory exists, and a dead one is one line at once.

Every launch is checked to leave no sentinel and no Ray process of its own running. The head is
stopped by killing exactly its processes (never ``ray stop``, which stops every Ray of the machine).
"""

import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from doubles.stranger_head import StrangerHead, processes_naming
from evolve.store.journal import read_journal

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the head helper reads /proc")

EVOLVE = str(Path(sys.executable).with_name("evolve"))
CONFIG = {
    "task": "P01", "seed": 5,
    "budgets": {"proposals": 2, "evaluations": 2, "wall_time_s": 300},
    "evaluator": {"samples": 1, "ladder": False, "judge": False},      # which cluster runs it is under test
    "ray": {"num_evaluators": 1, "num_proposers": 1, "batch_size": 2, "evaluator_cpus": 1.0},
}


@pytest.fixture(scope="module")
def head():
    stranger = StrangerHead()
    stranger.start()
    try:
        yield stranger
    finally:
        stranger.stop()
        assert not stranger.processes(), "the stranger's head left processes running"


def launch(head: StrangerHead, tmp_path: Path, *flags, timeout: float = 240) -> subprocess.CompletedProcess:
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    proc = subprocess.Popen([EVOLVE, "launch", str(path), "--run-root", str(tmp_path / "runs"), *flags],
                            env=head.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the launch did not end within {timeout:.0f} s (it waited on the stranger's head?): "
                    f"{out[-1500:]} {err[-1500:]}")
    finally:
        _no_leftovers(proc.pid, head)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _no_leftovers(driver: int, head: StrangerHead) -> None:
    """No sentinel of the launch, and no Ray process of a cluster it started, outlives it."""
    deadline = time.monotonic() + 30       # the sentinel's own cleanup takes a few seconds after the driver
    while True:
        sentinels = processes_naming(f"evolve.engine.sentinel --driver {driver} ")
        head_session = {p.name for p in (head.temp / "ray").glob("session_2*")
                        if p.name in head.log.read_text(errors="replace")}
        strays = [pid for pid in processes_naming(f"{head.temp}/ray/session_")
                  if not any(s in _cmdline(pid) for s in head_session)]
        if not (sentinels or strays) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert not sentinels, f"the launch's sentinel is still running: {sentinels}"
    assert not strays, f"Ray processes of the launch are still running: {[_cmdline(p)[:100] for p in strays]}"


def _cmdline(pid: int) -> str:
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _finished_on_its_own_cluster(done: subprocess.CompletedProcess, tmp_path: Path) -> None:
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Ray: starting a local cluster of this run's own" in done.stdout
    (run,) = (tmp_path / "runs").iterdir()
    assert yaml.safe_load((run / "status.json").read_text())["state"] == "finished"
    assert any(r["kind"] == "evaluation" for r in read_journal(run / "journal.msgpack").records), \
        "evaluations ran: impossible on the stranger's 0-CPU head"
    assert "search started on the local Ray cluster of this run" in (run / "run.log").read_text()


def test_without_an_address_a_launch_starts_its_own_cluster_beside_a_strangers_head(head, tmp_path):
    assert head.address_file.read_text().strip().endswith(f":{head.port}"), "the head is where Ray looks"
    _finished_on_its_own_cluster(launch(head, tmp_path), tmp_path)


def test_address_auto_joins_the_head_and_a_head_without_cpus_is_one_line(head, tmp_path):
    done = launch(head, tmp_path, "--address", "auto", timeout=240)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"the Ray cluster at {head.address} (--address auto) cannot run this run's evaluators" in done.stderr
    assert "reserves 1 CPU" in done.stderr and "largest of its 1 node(s) has 0" in done.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir()), "no run directory"


@pytest.fixture(scope="module")
def stale(head):
    """The same head SIGKILLed without `ray stop`: its address file and session files stay."""
    head.kill()
    assert head.address_file.is_file() and not head.processes()
    return head


def test_a_stale_heads_files_neither_hang_a_launch_nor_leave_its_sentinel(stale, tmp_path):
    started = time.monotonic()
    _finished_on_its_own_cluster(launch(stale, tmp_path), tmp_path)
    assert time.monotonic() - started < 240


def test_address_auto_on_a_stale_head_is_one_line_at_once(stale, tmp_path):
    started = time.monotonic()
    done = launch(stale, tmp_path, "--address", "auto", timeout=120)
    assert time.monotonic() - started < 60, "it waited on the dead address"
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"--address auto means {stale.address} here" in done.stderr and "ray_current_cluster" in done.stderr
    assert "nothing answers there" in done.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_auto_means_the_recorded_head_even_when_another_cluster_runs_here(tmp_path, monkeypatch):
    """Ray's own rule would join the one other GCS running on the machine when the recorded head is dead
    (a stranger's cluster, chosen by what else runs); the record wins here, so a dead head is said dead."""
    import ray._private.services as services

    from evolve.engine.ray_session import resolve_auto

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    monkeypatch.setattr(services, "find_gcs_addresses", lambda: {"127.0.0.1:46273"})
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text("192.0.2.2:35051\n")
    address, origin = resolve_auto()
    assert address == "192.0.2.2:35051" and "ray_current_cluster" in origin
    (tmp_path / "ray" / "ray_current_cluster").unlink()           # no record: the running GCS, said so
    assert resolve_auto() == ("127.0.0.1:46273", "a GCS process running on this machine")
