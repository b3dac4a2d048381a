"""Ray for one command: join an existing cluster, or a local cluster that ends with this process.

- **Local (no address).** The cluster is started by the driver's *sentinel*
  (:mod:`evolve.engine.sentinel`), a process in a session of its own that outlives nothing: when
  the driver ends, however it ends (SIGKILL of the driver alone included), the sentinel marks a
  run it was told about failed if it was still running, shuts Ray down and kills whatever Ray
  left. The driver joins that cluster by its GCS address. It is always a new cluster of this run's
  own (``ray.init(address="local")``): a bare ``ray.init()`` would attach to whatever head ``ray
  start`` left its address for in Ray's temp dir (``ray_current_cluster``), someone else's
  included, or wait on a dead one whose files remain.
- **An existing cluster (``--address`` or ``ray.address``).** ``auto`` (the cluster Ray finds on
  this machine: ``RAY_ADDRESS``, else the head the last ``ray start`` recorded in Ray's temp dir,
  even a dead one, else a GCS process running here), ``HOST:PORT`` (the head's GCS port, 6379 unless ``ray start
  --head --port`` said otherwise) or ``ray://HOST:PORT`` (Ray Client). ``auto`` is resolved to
  its ``HOST:PORT`` first, and every address is checked to answer before Ray is asked to join it
  (Ray waits minutes on a dead one). Clusters started by ``ray start`` authenticate clients with
  a token (Ray 2.60 turns token authentication on by default), but Ray's client sends one to an
  explicit address only when ``RAY_AUTH_MODE=token``: so, unless ``RAY_AUTH_MODE`` says
  otherwise, this process turns it on whenever a token is at hand, where Ray looks for one:
  ``RAY_AUTH_TOKEN``, the file named by ``RAY_AUTH_TOKEN_PATH``, or ``~/.ray/auth_token``
  (``RAY_AUTH_MODE=disabled`` opts out, and a cluster that wants a token then says so). A
  cluster that cannot be reached, or that refuses the token, is a :class:`ClusterError` with one
  line saying so, raised before anything else happens. A sentinel still watches the driver, to
  mark its run failed if it dies.

:func:`check_capacity` then tells whether the cluster joined can place the run's evaluators at all
(a head started with ``--num-cpus 0`` cannot), again one line before any run directory exists.

When Ray is already initialised in this process (tests, tuning trials running inside a Ray
worker) the session uses it as it is and leaves it running.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ray
from ray._common.utils import get_ray_address_file  # private, as the two below: how ray.init itself finds "auto"
from ray._private.services import get_ray_address_from_environment
from ray._raylet import Config as RayCoreConfig  # private, but it is how ray.init itself switches token auth on

READY_TIMEOUT_S = 180.0       # a loaded 2-core machine can take a minute to start Ray
SENTINEL_EXIT_S = 30.0        # its Ray shutdown and cleanup, before it is told more firmly
_HOST_PORT = re.compile(r"^(?:ray://)?(\[[0-9a-fA-F:]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")


class ClusterError(Exception):
    """A Ray cluster that cannot be used (unreachable, refusing our token, a malformed address); one line."""


def check_address(address: str) -> tuple[str, int] | None:
    """(host, port) of a ``HOST:PORT`` or ``ray://HOST:PORT`` address, None for ``auto``; ClusterError otherwise."""
    if address == "auto":
        return None
    m = _HOST_PORT.match(address)
    if not m or not 0 < int(m.group(2)) < 65536:
        raise ClusterError(f"Ray address {address!r} is not 'auto', HOST:PORT or ray://HOST:PORT")
    return m.group(1).strip("[]"), int(m.group(2))


def resolve_auto() -> tuple[str, str]:
    """(HOST:PORT, where it came from) of the cluster ``auto`` means on this machine: ``RAY_ADDRESS``;
    else the address the last ``ray start`` left in Ray's temp dir; else a GCS process running here.
    ClusterError when there is none.

    Ray's own rule differs in one case, and deliberately: when the recorded head is dead and exactly one
    other GCS runs on the machine, Ray joins that one. On a shared machine that is a stranger's cluster,
    chosen by which other jobs happen to run; here the record wins, and a dead record is said to be dead."""
    record = get_ray_address_file(None)
    if not os.environ.get("RAY_ADDRESS") and os.path.isfile(record):
        with contextlib.suppress(OSError):
            recorded = Path(record).read_text().strip()
            if recorded:
                return recorded, f"{record}, written by the last `ray start`"
    quiet = logging.getLogger("ray._private.services")   # its "found multiple Ray instances" is ours to say
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        found = get_ray_address_from_environment("auto", None)
    except Exception as exc:  # noqa: BLE001 - Ray raises ConnectionError or ValueError; one line either way
        raise ClusterError(f"--address auto found no Ray cluster on this machine ({' '.join(str(exc).split())}); "
                           "start one with `ray start --head`, or leave --address out to start a local "
                           "cluster of this run's own") from None
    finally:
        quiet.setLevel(level)
    if not found:
        raise ClusterError("--address auto found no Ray cluster on this machine; start one with `ray start --head`, "
                           "or leave --address out to start a local cluster of this run's own")
    if os.environ.get("RAY_ADDRESS"):
        return found, "RAY_ADDRESS"
    return found, "a GCS process running on this machine"


def check_reachable(address: str, timeout_s: float = 5.0, origin: str | None = None) -> None:
    """Open and close a TCP connection to the address's port (ray.init would wait minutes on a dead one).
    ``origin``: where an address resolved from ``auto`` came from (said when it is dead)."""
    hostport = check_address(address)
    if hostport is None:
        return
    try:
        with socket.create_connection(hostport, timeout=timeout_s):
            pass
    except OSError as exc:
        why = exc.strerror or type(exc).__name__.replace("Error", " error").lower()
        if origin is not None:
            raise ClusterError(f"--address auto means {address} here (from {origin}), and nothing answers there: "
                               f"{why} (a head killed without `ray stop` leaves its address behind); start one with "
                               "`ray start --head`, or leave --address out to start a local cluster of this run's own"
                               ) from None
        raise ClusterError(f"cannot reach a Ray cluster at {address}: {why} (is `ray start --head` running there, "
                           "and is this its GCS port?)") from None


def check_capacity(evaluator_cpus: float, where: str = "the Ray cluster") -> None:
    """ClusterError unless some live node of the cluster this process joined has ``evaluator_cpus``
    CPUs in all (an evaluator actor reserves that many on one node; Ray would keep it pending forever,
    and the run would wait with it). Nodes added later by an autoscaler are not foreseen."""
    if evaluator_cpus <= 0:
        return
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    largest = max((float((n.get("Resources") or {}).get("CPU", 0.0)) for n in nodes), default=0.0)
    if largest + 1e-9 < evaluator_cpus:
        raise ClusterError(f"{where} cannot run this run's evaluators: each reserves "
                           f"{evaluator_cpus:g} CPU (ray.evaluator_cpus) and the largest of its {len(nodes)} node(s) "
                           f"has {largest:g} (started with `ray start --num-cpus 0`?); give it CPUs, lower "
                           "ray.evaluator_cpus, or leave --address out to start a local cluster of this run's own")


def token_at_hand() -> str | None:
    """Where Ray would read this process's cluster token from (its documented order), or None."""
    if os.environ.get("RAY_AUTH_TOKEN", "").strip():
        return "RAY_AUTH_TOKEN"
    path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if path:
        return f"RAY_AUTH_TOKEN_PATH={path}"
    default = Path.home() / ".ray" / "auth_token"
    return str(default) if default.is_file() and default.stat().st_size > 0 else None


def present_token() -> None:
    """Send our token to the cluster we join (see the module docstring)."""
    if "RAY_AUTH_MODE" not in os.environ and token_at_hand() is not None:
        os.environ["RAY_AUTH_MODE"] = "token"
        RayCoreConfig.initialize("")      # Ray read the mode once, at import; read it again


def join_cluster(address: str, reach_check: bool = True) -> None:
    """``ray.init(address=...)`` with failures turned into one-line ClusterErrors. What Ray's core
    writes on stderr meanwhile (a retry warning a second while a token is refused) is held back and
    read for the reason."""
    if reach_check:
        check_reachable(address)
    present_token()
    # Ray retries a refused connection for about 20 s (its budget for a GCS that is restarting);
    # the port answered, so 5 s tell a refused token from a slow start (the user may set more)
    os.environ.setdefault("RAY_gcs_server_port_wait_time_s", "5")
    with tempfile.TemporaryFile(mode="w+b") as held:
        try:
            with _stderr_to(held):
                ray.init(address=address, logging_level=logging.ERROR, configure_logging=True)
            return
        except Exception as exc:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError, ValueError, ...
            held.seek(0)
            said = held.read().decode(errors="replace")
            chain = " ".join(" ".join(str(e).split()) for e in _chain(exc))
    if "uthentication token is missing or incorrect" in said + chain or "AuthenticationError" in chain:
        if os.environ.get("RAY_AUTH_MODE", "").strip().lower() == "disabled":
            raise ClusterError(
                f"the Ray cluster at {address} wants a token, and RAY_AUTH_MODE=disabled in this environment sends "
                "none: unset RAY_AUTH_MODE (evolve then presents the token from RAY_AUTH_TOKEN_PATH, RAY_AUTH_TOKEN "
                "or ~/.ray/auth_token) or set RAY_AUTH_MODE=token (README: 'Running on a Ray cluster')")
        where = token_at_hand()
        raise ClusterError(
            f"the Ray cluster at {address} refused this client's token (Authentication token is missing or "
            f"incorrect; token from {where or 'nowhere: none at hand'}): give this process the cluster's token "
            "with RAY_AUTH_TOKEN_PATH=<file holding it> (README: 'Running on a Ray cluster')")
    raise ClusterError(f"cannot join the Ray cluster at {address}: {chain[:300]}")


def _chain(exc: BaseException) -> list[BaseException]:
    out = []
    while exc is not None and exc not in out:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


@contextlib.contextmanager
def _stderr_to(fileobj):
    """Point file descriptor 2 (where Ray's C++ core logs) at ``fileobj`` for a while."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        os.dup2(fileobj.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


class RaySession:
    """Ray for the life of one command (a context manager); see the module docstring."""

    def __init__(self, address: str | None = None):
        self.address = address or None
        self.joined = False          # this session called ray.init (and will call ray.shutdown)
        self.sentinel: subprocess.Popen | None = None
        self.gcs: str | None = None  # HOST:PORT of the cluster joined (``auto`` resolved)

    @property
    def local(self) -> bool:
        return self.address is None

    @property
    def starts_ray(self) -> bool:
        """Whether ``open`` will start or join a cluster (False: Ray is already up in this process)."""
        return not ray.is_initialized()

    def describe(self) -> str:
        """The cluster in a few words, for the user and run.log."""
        if self.local:
            return f"the local Ray cluster of this run ({self.gcs})" if self.gcs else "the local Ray cluster of this run"
        if self.address == "auto" and self.gcs:
            return f"the Ray cluster at {self.gcs} (--address auto)"
        return f"the Ray cluster at {self.address}"

    def open(self) -> "RaySession":
        if ray.is_initialized():
            return self
        os.environ.setdefault("RAY_DEDUP_LOGS", "0")
        origin = None
        if self.address == "auto":
            self.gcs, origin = resolve_auto()
        elif self.address is not None:
            check_address(self.address)
            self.gcs = self.address
        if self.gcs is not None:
            check_reachable(self.gcs, origin=origin)
        try:
            gcs = self._start_sentinel(local=self.address is None)
            self.gcs = self.gcs or gcs
            join_cluster(self.gcs, reach_check=False)
        except BaseException:      # a ClusterError, Ctrl-C or SIGTERM while waiting: no sentinel is left behind
            self.close()
            raise
        self.joined = True
        return self

    def _start_sentinel(self, local: bool) -> str | None:
        cmd = [sys.executable, "-m", "evolve.engine.sentinel", "--driver", str(os.getpid())] + (["--ray"] if local else [])
        self.sentinel = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, start_new_session=True, text=True, bufsize=1)
        if not local:
            return None
        line = self._read_line(READY_TIMEOUT_S)
        word, _, rest = line.strip().partition(" ")
        if word != "ready" or not rest:
            self.close()
            reason = rest if word == "error" else (line.strip() or "it ended without a word")
            raise ClusterError(f"could not start a local Ray cluster: {reason}")
        return rest

    def _read_line(self, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        out = self.sentinel.stdout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([out], [], [], 0.5)
            if ready:
                return out.readline()
            if self.sentinel.poll() is not None:
                return out.readline()
        return "error no answer within {:.0f} s".format(timeout_s)

    def watch(self, run_dir: str | Path) -> None:
        """Tell the sentinel which run directory to mark failed should this process die."""
        self._tell(f"run {Path(run_dir).resolve()}")

    def _tell(self, line: str) -> None:
        if self.sentinel is not None and self.sentinel.poll() is None:
            try:
                self.sentinel.stdin.write(line + "\n")
                self.sentinel.stdin.flush()
            except (BrokenPipeError, OSError):
                pass

    def close(self) -> None:
        """Leave Ray (when this session joined it) and let the sentinel stop what it started. A
        sentinel that does not end by itself (still inside ``ray.init``, say) gets SIGTERM, which it
        takes as its driver's death (it cleans up all the same), and SIGKILL after that, its
        process group with it: no sentinel outlives its session."""
        if self.joined:
            self.joined = False
            try:
                ray.shutdown()
            except Exception:  # noqa: BLE001 - leaving; the sentinel cleans up whatever is left
                pass
        if self.sentinel is not None:
            self._tell("done")
            try:
                self.sentinel.stdin.close()
            except OSError:
                pass
            for stop, wait_s in ((None, SENTINEL_EXIT_S), (signal.SIGTERM, SENTINEL_EXIT_S), (signal.SIGKILL, 5.0)):
                if stop is not None:
                    _signal_group(self.sentinel.pid, stop)
                try:
                    self.sentinel.wait(timeout=wait_s)
                    break
                except subprocess.TimeoutExpired:
                    continue
            self.sentinel.stdout.close()
            self.sentinel = None

    def __bool__(self) -> bool:
        return self.joined

    def __enter__(self) -> "RaySession":
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()


def _signal_group(pid: int, sig: int) -> None:
    """``sig`` to the process group led by ``pid`` (the sentinel runs in a session of its own)."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
