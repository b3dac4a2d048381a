"""A real Ray cluster of several nodes on 127.0.0.1, for tests: one ``ray start --head`` and
``ray start --address`` workers, each a process of its own with its own CPUs, ports and temp dir,
and token authentication on (``RAY_AUTH_MODE=token``, the token in a file named by
``RAY_AUTH_TOKEN_PATH``).

Each ``ray start --block`` runs in a session of its own, so stopping the cluster never touches
another Ray on the machine (``ray stop`` would stop every one of them): ``stop`` sends SIGTERM to
the nodes, then SIGKILL to every process left in their sessions.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))


def free_ports(k: int) -> list[int]:
    socks = [socket.socket() for _ in range(k)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def session_members(sid: int) -> list[int]:
    """Live processes whose session id is ``sid`` (Linux /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                rest = open(f"/proc/{entry}/stat", "rb").read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(rest[3]) == sid and rest[0] != b"Z":
                out.append(int(entry))
    return out


class LocalRayCluster:
    """``with LocalRayCluster(tmp, cpus=(1, 1)) as c:`` a head with 1 CPU and a worker with 1 CPU;
    ``c.address`` is the head's GCS address, ``c.env`` the environment that holds the token."""

    def __init__(self, root: Path, cpus: tuple[int, ...] = (1, 1), start_timeout_s: float = 120.0):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.token_file = self.root / "token"
        self.token_file.write_text(secrets.token_hex(32))
        self.token_file.chmod(0o600)
        self.env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(self.token_file),
                    "RAY_USAGE_STATS_ENABLED": "0"}
        self.env.pop("RAY_ADDRESS", None)
        self.cpus, self.timeout = cpus, start_timeout_s
        self.nodes: list[subprocess.Popen] = []
        self.port = None
        # Ray's socket paths must stay under 108 bytes: its temp dirs go in a short folder of /tmp
        self.temp = Path(tempfile.mkdtemp(prefix="evrc-", dir="/tmp"))

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _start(self, name: str, args: list[str]) -> None:
        ports = free_ports(6)
        log = open(self.root / f"{name}.log", "w")
        cmd = [RAY, "start", "--block", "--node-ip-address", "127.0.0.1", "--temp-dir", str(self.temp / name),
               "--disable-usage-stats", "--min-worker-port", "0",
               "--max-worker-port", "0", "--node-manager-port", str(ports[0]), "--object-manager-port", str(ports[1]),
               "--dashboard-agent-listen-port", str(ports[2]), "--dashboard-agent-grpc-port", str(ports[3]),
               "--runtime-env-agent-port", str(ports[4]), "--metrics-export-port", str(ports[5]), *args]
        self.nodes.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                           start_new_session=True))
        deadline = time.monotonic() + self.timeout
        while "Ray runtime started" not in (self.root / f"{name}.log").read_text(errors="replace"):
            if self.nodes[-1].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray node {name} did not start:\n" + (self.root / f"{name}.log").read_text()[-3000:])
            time.sleep(0.3)

    def start(self) -> "LocalRayCluster":
        self.port, client_port = free_ports(2)
        try:
            self._start("head", ["--head", "--port", str(self.port), "--ray-client-server-port", str(client_port),
                                 "--include-dashboard", "false", "--num-cpus", str(self.cpus[0])])
            for i, cpus in enumerate(self.cpus[1:], 1):
                self._start(f"worker{i}", ["--address", self.address, "--num-cpus", str(cpus)])
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> list[int]:
        """Stop every node; the pids that had to be SIGKILLed (none when SIGTERM was enough)."""
        for node in reversed(self.nodes):
            if node.poll() is None:
                node.send_signal(signal.SIGTERM)
        deadline, killed = time.monotonic() + 15, []
        while time.monotonic() < deadline:
            left = [p for node in self.nodes for p in session_members(node.pid)]
            if not left:
                break
            if time.monotonic() > deadline - 10:
                for pid in left:
                    try:
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)
                    except ProcessLookupError:
                        pass
            time.sleep(0.2)
        for node in self.nodes:
            try:
                node.wait(timeout=5)
            except subprocess.TimeoutExpired:
                node.kill()
        self.nodes = []
        shutil.rmtree(self.temp, ignore_errors=True)
        return killed

    def __enter__(self) -> "LocalRayCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def reachable(port: int) -> bool:
    with closing(socket.socket()) as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0
