"""The fork server ("zygote"): imports numpy/scipy once, then forks one child per run.

Started by ``host.Sandbox`` as ``python -m evaluators.sandbox.zygote`` in its own session with
a scrubbed environment. Protocol on its stdin/stdout (length-prefixed JSON, ``protocol.py``):

    host -> zygote  {"op": "run", "code": str, "calls": [...], "limits": {...}}
    zygote -> host  {"t": "ready"}                        once, after the preload
                    {"t": "started", "pid": int}          the child's pid (= its pgid)
                    {"t": "report", ...}                  when the child is done or killed

The zygote enforces the wall-clock limits: at ``timeout_s`` after the fork, or when one call runs
longer than ``call_timeout_s`` (if given), it SIGKILLs the child's process group. It drains the
child's stdout/stderr (keeping ``max_output_bytes`` of each) and verifies the signed result
frames. It serves one run at a time.
"""
from __future__ import annotations

import gc
import math
import os
import select
import signal
import sys
import time

from . import protocol

_READ = 65536
_PRELOAD = ("numpy", "numpy.linalg", "numpy.fft", "numpy.random", "scipy", "scipy.linalg",
            "scipy.sparse", "scipy.sparse.linalg", "scipy.special", "math", "cmath",
            "itertools", "functools", "operator", "fractions", "collections",
            "collections.abc", "decimal", "dataclasses", "typing", "ctypes")


def _preload() -> None:
    import importlib
    for name in _PRELOAD:
        importlib.import_module(name)
    _warm_networkx()
    _warm_pymatching()
    from . import child  # noqa: F401  (imports guards, audit, seccomp)


def _warm_pymatching() -> None:
    """Import pymatching and decode once, before any child.

    pymatching's implementation module imports ``matplotlib.cbook`` at its top, for one warning class
    named only in ``Matching.draw`` (drawing: refused to candidates, by attribute name). Importing
    matplotlib reads its configuration from files (refused inside a candidate's run) and cost every
    zygote start about 0.3 s of CPU, a third of the start. The zygote gets an empty stand-in instead:
    matplotlib is not importable by candidates (not in the allowlist), and the real package is never
    loaded here, so there is less in the zygote for a candidate to reach."""
    import types

    if "matplotlib" not in sys.modules:
        stand_in = types.ModuleType("matplotlib")
        stand_in.__path__ = []      # a package, so that `import matplotlib.cbook` finds its submodule below
        stand_in.cbook = types.ModuleType("matplotlib.cbook")
        sys.modules["matplotlib"], sys.modules["matplotlib.cbook"] = stand_in, stand_in.cbook
    import numpy as np
    import pymatching
    from scipy.sparse import csc_matrix
    check = csc_matrix(np.array([[1, 1, 0], [0, 1, 1]], dtype=np.uint8))
    pymatching.Matching.from_check_matrix(check, weights=np.ones(3)).decode(np.array([1, 1], dtype=np.uint8))


def _warm_networkx() -> None:
    """Import networkx and call the planarity functions once, before any child exists: networkx reads
    its backends' entry points when imported and compiles some functions on their first call (its
    ``argmap`` decorator), both of which the audit hook refuses inside a candidate's run. A function
    not warmed here still runs in a child unless it compiles code; then the hook refuses it."""
    import networkx as nx
    g = nx.Graph([(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (4, 0)])
    g.add_nodes_from(range(6))
    g.add_edges_from([(4, 5)])
    planar, embedding = nx.check_planarity(g)
    embedding.get_data()
    nx.combinatorial_embedding_to_pos(embedding)
    nx.connected_components(g)


def _kill_group(pid: int) -> None:
    for kill, target in ((os.killpg, pid), (os.kill, pid)):
        try:
            kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _describe_status(status: int) -> str | None:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU:
            return "cpu limit exceeded"
        if sig == signal.SIGXFSZ:
            return "file size limit exceeded"
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"killed by signal {sig} ({name})"
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0:
        return f"child exited with status {os.WEXITSTATUS(status)}"
    return None


class _Collector:
    """State of one run as seen from the zygote."""

    def __init__(self, key: bytes, cap: int):
        self.reader = protocol.SignedReader(key)
        self.cap = cap
        self.out = {1: bytearray(), 2: bytearray()}
        self.results, self.violations, self.errors, self.info = [], [], [], {}
        self.memory = False
        self.done = False

    def feed(self, which: str, data: bytes) -> None:
        if which == "res":
            for frame in self.reader.feed(data):
                self.frame(frame)
        else:
            buf = self.out[1 if which == "out" else 2]
            room = self.cap - len(buf)
            if room > 0:
                buf += data[:room]

    def frame(self, f) -> None:
        if not isinstance(f, dict) or self.done:
            return
        t = f.get("t")
        if t == "r":
            self.results.append({k: f.get(k) for k in ("ok", "value", "error", "error_type", "seconds")})
        elif t == "v":
            if f.get("name") not in self.violations:
                self.violations.append(f.get("name"))
        elif t == "e":
            self.errors.append(f.get("error"))
        elif t == "m":
            self.memory = True
        elif t == "info":
            self.info.update({k: v for k, v in f.items() if k != "t"})
        elif t == "done":
            self.done = True


def _collect(pid: int, fds: dict, col: _Collector, timeout_s: float, t0: float, call_timeout_s: float | None = None):
    """Pump the child's pipes until it exits or a deadline (the run's, or the current call's: a
    call starts when the previous one's result arrives); returns (status, timed_out, call_timed_out)."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    poller = select.poll()
    names = {}
    for name, fd in fds.items():
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        names[fd] = name
    if pidfd is not None:
        poller.register(pidfd, select.POLLIN)
    run_deadline = t0 + timeout_s
    call_deadline, calls_seen = (t0 + call_timeout_s if call_timeout_s else math.inf), 0
    status, timed_out, call_timed_out, open_fds = None, False, False, set(names)
    while status is None:
        if call_timeout_s and len(col.results) > calls_seen:
            calls_seen = len(col.results)
            call_deadline = time.monotonic() + call_timeout_s
        deadline = min(run_deadline, call_deadline)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out, call_timed_out = True, call_deadline < run_deadline
            _kill_group(pid)
            _, status = os.waitpid(pid, 0)
            break
        wait_ms = remaining * 1000 if pidfd is not None else min(remaining * 1000, 5)
        for fd, _ev in poller.poll(max(1, int(wait_ms))):
            if fd == pidfd:
                continue
            if fd in open_fds:
                data = os.read(fd, _READ)
                if data:
                    col.feed(names[fd], data)
                else:
                    poller.unregister(fd)
                    open_fds.discard(fd)
        done_pid, st = os.waitpid(pid, os.WNOHANG)
        if done_pid == pid:
            status = st
        elif col.done:
            break  # everything is in; the child is only exiting (killed and reaped later)
    _kill_group(pid)  # anything left in the child's group
    for fd in list(open_fds):  # drain what is already buffered, without blocking
        os.set_blocking(fd, False)
        try:
            while True:
                data = os.read(fd, _READ)
                if not data:
                    break
                col.feed(names[fd], data)
        except BlockingIOError:
            pass
    if pidfd is not None:
        os.close(pidfd)
    return status, timed_out, call_timed_out


class _Spare:
    """A pre-forked child waiting for its request (forking costs ~10-20 ms: off the critical path)."""

    def __init__(self):
        self.key = os.urandom(32)
        req_r, self.req_w = os.pipe()
        res_r, res_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            for fd in (self.req_w, res_r, out_r, err_r):
                os.close(fd)
            from . import child
            child.run(self.key, req_r, res_w, out_w, err_w)
            os._exit(70)
        for fd in (req_r, res_w, out_w, err_w):
            os.close(fd)
        self.pid = pid
        self.fds = {"res": res_r, "out": out_r, "err": err_r}

    def discard(self) -> None:
        _kill_group(self.pid)
        os.close(self.req_w)
        for fd in self.fds.values():
            os.close(fd)
        os.waitpid(self.pid, 0)


class Zygote:
    """Serves runs one at a time, keeping one spare child forked ahead."""

    def __init__(self):
        self.spare: _Spare | None = None
        self.to_reap: list[int] = []

    def take_spare(self, request: dict) -> tuple[_Spare, float]:
        payload = protocol.encode(request)
        for _ in range(2):
            spare, self.spare = self.spare or _Spare(), None
            try:
                t0 = time.monotonic()
                protocol.write_all(spare.req_w, payload)
                os.close(spare.req_w)
                return spare, t0
            except OSError:  # the spare died meanwhile: fork a fresh one
                spare.discard()
        raise RuntimeError("cannot start a sandbox child")

    def serve(self, request: dict) -> dict:
        """Hand ``request`` to a child, wait for it, and return the report frame."""
        limits = request.get("limits", {})
        timeout_s = float(limits.get("timeout_s", 30.0))
        call_timeout_s = limits.get("call_timeout_s")
        call_timeout_s = float(call_timeout_s) if call_timeout_s else None
        cap = int(limits.get("max_output_bytes", 64_000))
        spare, t0 = self.take_spare(request)
        pid = spare.pid
        protocol.write_all(1, protocol.encode({"t": "started", "pid": pid}))
        col = _Collector(spare.key, cap)
        try:
            status, timed_out, call_timed_out = _collect(pid, spare.fds, col, timeout_s, t0, call_timeout_s)
        finally:
            for fd in spare.fds.values():
                os.close(fd)
        if status is None:
            self.to_reap.append(pid)
        report = _report(col, status, timed_out, timeout_s, time.monotonic() - t0)
        if call_timed_out:
            report["error"] = f"timeout after {call_timeout_s:g} s (call {len(col.results) + 1})"
        return report

    def idle(self) -> None:
        """Work done after a reply was sent: fork the next spare, reap finished children."""
        if self.spare is None:
            self.spare = _Spare()
        still = []
        for pid in self.to_reap:  # exiting children take a few ms to tear down: don't wait
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == 0:
                    still.append(pid)
            except ChildProcessError:
                pass
        self.to_reap = still


def _report(col: _Collector, status, timed_out: bool, timeout_s: float, wall: float) -> dict:
    error = col.errors[0] if col.errors else None
    died = _describe_status(status) if status is not None else None
    if col.reader.corrupt:
        col.violations.append("channel:forged")
        error = error or f"result channel corrupted: {col.reader.corrupt}"
    if not timed_out and status is not None and os.WIFSIGNALED(status) \
            and os.WTERMSIG(status) == signal.SIGKILL and not col.done:
        col.memory = True  # a SIGKILL that we did not send: the kernel's OOM killer
    if col.memory:
        error = "memory limit exceeded"
    if timed_out:
        error = f"timeout after {timeout_s:g} s"
    elif died and not col.done and not col.memory:
        error = error or died
    elif not col.done and error is None:
        error = "child ended without finishing the calls"
    return {
        "t": "report", "results": col.results, "error": error, "violations": col.violations,
        "timed_out": timed_out, "memory_exhausted": col.memory,
        "stdout": col.out[1].decode("utf-8", "replace"), "stderr": col.out[2].decode("utf-8", "replace"),
        "child_wall_s": wall, "exit": died, "info": col.info, "complete": col.done,
    }


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _preload()
    gc.collect()
    gc.freeze()  # keep the preloaded heap shared (copy-on-write) across forks
    zygote = Zygote()
    zygote.idle()
    protocol.write_all(1, protocol.encode({"t": "ready", "pid": os.getpid()}))
    while True:
        request = protocol.read_frame(0)
        if request is None:
            break
        if request.get("op") == "run":
            reply = zygote.serve(request)
        else:
            reply = {"t": "pong"}
        protocol.write_all(1, protocol.encode(reply))
        zygote.idle()
    if zygote.spare is not None:
        zygote.spare.discard()
    sys.exit(0)


if __name__ == "__main__":
    main()
