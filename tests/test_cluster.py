"""evolve on a real Ray cluster: two `ray start` nodes on 127.0.0.1 (a head and a worker, one CPU
each, their own ports and temp dirs) with token authentication on, joined by `evolve launch`
through `ray.address`; evaluations run on both nodes. A client with the wrong token, or an
address where nothing listens, gets one line and exit status 2, and no run directory; so does a
client whose RAY_AUTH_MODE=disabled sends no token, told so rather than that its token is wrong."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from doubles.local_ray_cluster import LocalRayCluster, free_ports, session_members
from evolve.store.journal import read_journal

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the cluster helper reads /proc")

EVOLVE = str(Path(sys.executable).with_name("evolve"))
CONFIG = {
    "task": "P01", "seed": 3,
    "budgets": {"proposals": 8, "evaluations": 8, "wall_time_s": 600},
    "evaluator": {"samples": 1, "ladder": False, "judge": False},      # where evaluations run is under test, not how
    # one evaluator per CPU and one CPU per node: Ray must place one evaluator on each node
    "ray": {"num_evaluators": 2, "num_proposers": 1, "batch_size": 4, "evaluator_cpus": 1.0},
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = LocalRayCluster(tmp_path_factory.mktemp("cluster"), cpus=(1, 1))
    c.start()
    sessions = [node.pid for node in c.nodes]
    try:
        yield c
    finally:
        c.stop()
        assert not [p for sid in sessions for p in session_members(sid)], "the cluster left processes running"


def client_env(cluster, token_file=None) -> dict:
    """The environment of a user who holds the token in a file; RAY_AUTH_MODE is left unset:
    evolve presents the token by itself when one is at hand."""
    env = {k: v for k, v in cluster.env.items() if k != "RAY_AUTH_MODE"}
    env["RAY_AUTH_TOKEN_PATH"] = str(token_file or cluster.token_file)
    return env


def launch(config: dict, tmp_path: Path, env: dict, *flags) -> subprocess.CompletedProcess:
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(config))
    return subprocess.run([EVOLVE, "launch", str(path), "--run-root", str(tmp_path / "runs"), *flags],
                          env=env, capture_output=True, text=True, timeout=600)


def test_a_launch_on_a_two_node_cluster_evaluates_on_both_nodes(cluster, tmp_path):
    config = {**CONFIG, "ray": {**CONFIG["ray"], "address": cluster.address}}   # the config key, no flag
    done = launch(config, tmp_path, client_env(cluster))
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = (tmp_path / "runs").iterdir()
    evaluations = [r for r in read_journal(run / "journal.msgpack").records if r["kind"] == "evaluation"]
    assert len(evaluations) >= 2
    nodes = {r["node"] for r in evaluations}
    assert len(nodes) == 2 and all(len(n) == 56 for n in nodes), "Ray node ids of two nodes"
    assert len({r["worker"] for r in evaluations}) == 2
    assert f"the Ray cluster at {cluster.address}" in (run / "run.log").read_text()
    assert yaml.safe_load((run / "status.json").read_text())["state"] == "finished"


def test_a_wrong_token_is_one_line_and_leaves_no_run_directory(cluster, tmp_path):
    wrong = tmp_path / "wrong-token"
    wrong.write_text("0" * 64)
    env = {**client_env(cluster, wrong), "RAY_gcs_server_port_wait_time_s": "1"}   # Ray's retries: 1 s, not 5
    done = launch(CONFIG, tmp_path, env, "--address", cluster.address)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "refused this client's token" in done.stderr, done.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_client_with_auth_disabled_is_told_so_not_that_its_token_is_wrong(cluster, tmp_path):
    env = {**client_env(cluster), "RAY_AUTH_MODE": "disabled", "RAY_gcs_server_port_wait_time_s": "1"}
    done = launch(CONFIG, tmp_path, env, "--address", cluster.address)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "RAY_AUTH_MODE=disabled in this environment sends none" in done.stderr, done.stderr
    assert "refused this client's token" not in done.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_an_address_where_no_cluster_listens_is_one_line(tmp_path):
    (port,) = free_ports(1)
    done = launch(CONFIG, tmp_path, None, "--address", f"127.0.0.1:{port}")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "cannot reach a Ray cluster at" in done.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
