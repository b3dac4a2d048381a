"""A Ray head someone else started on this machine with ``ray start``, for tests: 0 CPUs, so a run
that joins it can never place an evaluator, in a temp dir of its own (``RAY_TMPDIR``), where
``ray start`` records its address (``<temp>/ray/ray_current_cluster``) as it does in ``/tmp/ray``
for a real user. A process given ``env`` sees it exactly as a user of this machine would see a
stranger's head.

``ray stop`` is never used: it stops every Ray process of the machine, other people's included.
The head runs ``ray start --block`` in a session of its own; ``stop`` ends every process of that
session and every process whose command line names the temp dir (SIGTERM, then SIGKILL), and
removes the temp dir. ``kill`` is what the issue saw: the head SIGKILLed without ``ray stop``, its
files left behind (a *stale* head).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from doubles.local_ray_cluster import RAY, free_ports, session_members


def processes_naming(text: str) -> list[int]:
    """Live processes whose command line contains ``text`` (Linux /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmd = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
            state = open(f"/proc/{entry}/stat", "rb").read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if text in cmd and state != b"Z":
            out.append(int(entry))
    return out


class StrangerHead:
    """``with StrangerHead() as head:`` a 0-CPU head; ``head.env`` the environment that sees it."""

    def __init__(self, start_timeout_s: float = 120.0):
        # Ray's socket paths must stay under 108 bytes: a short folder of /tmp
        self.temp = Path(tempfile.mkdtemp(prefix="evsh-", dir="/tmp"))
        self.env = {**os.environ, "RAY_TMPDIR": str(self.temp), "RAY_USAGE_STATS_ENABLED": "0"}
        self.env.pop("RAY_ADDRESS", None)
        self.timeout = start_timeout_s
        self.node: subprocess.Popen | None = None
        self.log = self.temp / "head.log"

    @property
    def address_file(self) -> Path:
        return self.temp / "ray" / "ray_current_cluster"

    def start(self) -> "StrangerHead":
        port, client, dashboard, *agents = free_ports(9)
        cmd = [RAY, "start", "--head", "--block", "--num-cpus", "0", "--node-ip-address", "127.0.0.1",
               "--port", str(port), "--ray-client-server-port", str(client), "--include-dashboard", "false",
               "--dashboard-port", str(dashboard), "--disable-usage-stats", "--min-worker-port", "0",
               "--max-worker-port", "0", "--node-manager-port", str(agents[0]), "--object-manager-port",
               str(agents[1]), "--dashboard-agent-listen-port", str(agents[2]), "--dashboard-agent-grpc-port",
               str(agents[3]), "--runtime-env-agent-port", str(agents[4]), "--metrics-export-port", str(agents[5])]
        with open(self.log, "w") as log:
            self.node = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        deadline = time.monotonic() + self.timeout
        try:
            while "Ray runtime started" not in self.log.read_text(errors="replace"):
                if self.node.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the stranger's head did not start:\n" + self.log.read_text()[-3000:])
                time.sleep(0.3)
        except BaseException:
            self.stop()
            raise
        self.port = port
        # what `ray start` recorded where Ray looks (the node's address, not always 127.0.0.1)
        self.address = self.address_file.read_text().strip() if self.address_file.is_file() else f"127.0.0.1:{port}"
        return self

    def processes(self) -> list[int]:
        """Every live process of the head: its session, and whatever names its temp dir."""
        own = session_members(self.node.pid) if self.node is not None else []
        return sorted(set(own) | set(processes_naming(str(self.temp))))

    def kill(self) -> None:
        """SIGKILL every process of the head at once, as a crash would: its files stay (a stale head)."""
        for _ in range(3):
            for pid in self.processes():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.3)
        if self.node is not None:
            self.node.wait(timeout=10)

    def stop(self) -> None:
        """End every process of the head (SIGTERM, SIGKILL after 10 s) and remove its temp dir."""
        deadline = time.monotonic() + 15
        sig = signal.SIGTERM
        while time.monotonic() < deadline:
            left = self.processes()
            if not left:
                break
            if time.monotonic() > deadline - 5:
                sig = signal.SIGKILL
            for pid in left:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            time.sleep(0.3)
        if self.node is not None and self.node.poll() is None:
            self.node.kill()
            self.node.wait(timeout=10)
        shutil.rmtree(self.temp, ignore_errors=True)

    def __enter__(self) -> "StrangerHead":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
