"""The host side: ``Sandbox`` starts (and restarts) the zygote, sends runs, enforces a backstop timeout.

Usage::

    with Sandbox(Limits(timeout_s=10)) as sb:
        report = sb.run(code, [Call("Z_efficient", {"beta": 0.5}, 8)])

``run`` never raises for anything the candidate does: every failure is in the report. It does
raise ``ValueError`` for host bugs (calls that are not JSON-serialisable).
"""
from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass

from . import protocol
from .policy import static_check
from .records import Call, CallResult, Limits, SandboxReport

_START_TIMEOUT_S = 60.0   # zygote preload (numpy + scipy import), seconds
_GRACE_S = 5.0            # host backstop beyond the zygote's own timeout, seconds
_PASS_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")  # hardware workarounds, not secrets


class _ZygoteGone(Exception):
    pass


@dataclass
class SandboxStats:
    """What a Sandbox has spent on itself, cumulative seconds (an evaluation reads the difference)."""

    starts: int = 0              # fork servers started (the first one included)
    start_s: float = 0.0
    static_checks: int = 0       # static checks run (a remembered code is not checked again)
    static_check_s: float = 0.0


def scrubbed_env(home: str, tmp: str) -> dict:
    """The whole environment of the zygote (and so of every child): no host variables."""
    pkg_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
        "HOME": home, "TMPDIR": tmp, "PYTHONPATH": pkg_root, "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1", "PYTHONHASHSEED": "0",
        "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "NUMEXPR_NUM_THREADS": "1", "VECLIB_MAXIMUM_THREADS": "1",
    }
    env.update({k: os.environ[k] for k in _PASS_ENV if k in os.environ})
    return env


class Sandbox:
    """Runs untrusted candidate code in forked, locked-down children of a warm zygote."""

    def __init__(self, limits: Limits = Limits(), remember_checks: int = 16):
        """``remember_checks``: how many codes' static-check results to keep (0: check every run).
        The check is a pure function of the code's text, so remembering it changes nothing but
        time: a 660-line program costs about 0.17 s per check, and an evaluation makes 10-15 runs."""
        self.limits = limits
        self.stats = SandboxStats()
        self._checked: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._remember = max(0, int(remember_checks))
        self._lock = threading.RLock()
        self._proc: subprocess.Popen | None = None
        self._buf = bytearray()
        self._dir = tempfile.mkdtemp(prefix="sandbox-")
        self._closed = False
        self.restarts = 0
        atexit.register(self.close)

    # ----- lifecycle ----------------------------------------------------------------------
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        """Stop the zygote and remove the temp dir; safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._stop()
            shutil.rmtree(self._dir, ignore_errors=True)
        try:
            atexit.unregister(self.close)
        except Exception:
            pass

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        self._buf.clear()
        if proc is None:
            return
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
        proc.stdout.close()

    def start(self) -> None:
        """Start the fork server now (otherwise the first run does), so an evaluator is warm before
        its first candidate arrives."""
        with self._lock:
            if self._closed:
                raise RuntimeError("Sandbox is closed")
            if not self._alive():
                if self._proc is not None:
                    self._stop()
                    self.restarts += 1
                self._start()

    def _start(self) -> None:
        started = time.perf_counter()
        try:
            self._start_zygote()
        finally:
            self.stats.starts += 1
            self.stats.start_s += time.perf_counter() - started

    def _start_zygote(self) -> None:
        home, tmp = os.path.join(self._dir, "home"), os.path.join(self._dir, "tmp")
        os.makedirs(home, exist_ok=True)
        os.makedirs(tmp, exist_ok=True)
        log = open(os.path.join(self._dir, "zygote.log"), "ab")
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "evaluators.sandbox.zygote"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=log, env=scrubbed_env(home, tmp), cwd=tmp,
                start_new_session=True, close_fds=True, bufsize=0)
        finally:
            log.close()
        self._buf.clear()
        frame = self._read(time.monotonic() + _START_TIMEOUT_S)
        if not frame or frame.get("t") != "ready":
            self._stop()
            raise RuntimeError(f"sandbox zygote failed to start (see {self._dir}/zygote.log)")

    def _alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # ----- framing ------------------------------------------------------------------------
    def _read(self, deadline: float):
        """Next frame from the zygote, or None at the deadline; _ZygoteGone on EOF."""
        fd = self._proc.stdout.fileno()
        while True:
            if len(self._buf) >= 4:
                size = int.from_bytes(self._buf[:4], "big")
                if len(self._buf) >= 4 + size:
                    body = bytes(self._buf[4:4 + size])
                    del self._buf[:4 + size]
                    return json.loads(body)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                data = os.read(fd, 1 << 16)
                if not data:
                    raise _ZygoteGone("zygote closed its pipe")
                self._buf += data

    # ----- running ------------------------------------------------------------------------
    def run(self, code: str, calls: list[Call], limits: Limits | None = None) -> SandboxReport:
        """Run ``code`` once and call its functions in order; see ``SandboxReport``."""
        t0 = time.monotonic()
        if not isinstance(code, str):
            return SandboxReport(error="code is not a string", wall_s=time.monotonic() - t0)
        violations = self.check(code)
        syntax = [v for v in violations if v.startswith("syntax:")]
        if syntax:
            return SandboxReport(error="SyntaxError: " + syntax[0][len("syntax:"):],
                                 wall_s=time.monotonic() - t0)
        if violations:
            return SandboxReport(error="forbidden construct(s): " + ", ".join(violations),
                                 violations=tuple(violations), wall_s=time.monotonic() - t0)
        return self._run_unchecked(code, calls, limits, t0)

    def check(self, code: str) -> list[str]:
        """``static_check(code)``, remembered for the last ``remember_checks`` codes."""
        with self._lock:
            found = self._checked.get(code)
            if found is not None:
                self._checked.move_to_end(code)
                return list(found)
        started = time.perf_counter()
        found = tuple(static_check(code))
        with self._lock:
            self.stats.static_checks += 1
            self.stats.static_check_s += time.perf_counter() - started
            if self._remember:
                self._checked[code] = found
                while len(self._checked) > self._remember:
                    self._checked.popitem(last=False)
        return list(found)

    def _run_unchecked(self, code: str, calls: list[Call], limits: Limits | None = None,
                       t0: float | None = None) -> SandboxReport:
        """``run`` without the static check: for tests of the run-time layers only."""
        t0 = time.monotonic() if t0 is None else t0
        lim = limits or self.limits
        request = {"op": "run", "code": code, "limits": asdict(lim),
                   "calls": [{"function": c.function, "params": c.params, "n": int(c.n)} for c in calls]}
        try:
            payload = protocol.encode(request)
        except (TypeError, ValueError) as e:
            raise ValueError(f"calls are not JSON-serialisable: {e}") from e
        with self._lock:
            if self._closed:
                raise RuntimeError("Sandbox is closed")
            reply = self._exchange(payload, lim)
        return self._report(reply, lim, time.monotonic() - t0)

    def _exchange(self, payload: bytes, lim: Limits) -> dict:
        for attempt in range(2):
            if not self._alive():
                if self._proc is not None:
                    self._stop()
                    self.restarts += 1
                self._start()
            pid = None
            try:
                protocol.write_all(self._proc.stdin.fileno(), payload)
                started = self._read(time.monotonic() + _START_TIMEOUT_S)
                if not started or started.get("t") != "started":
                    raise _ZygoteGone("no start acknowledgement")
                pid = started["pid"]
                reply = self._read(time.monotonic() + lim.timeout_s + _GRACE_S)
                if reply is None:  # the zygote is stuck: kill everything, restart next time
                    self._kill_child(pid)
                    self._stop()
                    return {"error": f"timeout after {lim.timeout_s:g} s", "timed_out": True}
                return reply
            except (_ZygoteGone, OSError, ValueError) as e:
                if pid is not None:
                    self._kill_child(pid)
                self._stop()
                if pid is not None or attempt:
                    return {"error": f"sandbox worker died: {e}"}
        return {"error": "sandbox worker unavailable"}

    @staticmethod
    def _kill_child(pid: int) -> None:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    @staticmethod
    def _report(reply: dict, lim: Limits, wall_s: float) -> SandboxReport:
        results = []
        for r in reply.get("results", ()):
            ok = bool(r.get("ok"))
            value = r.get("value")
            results.append(CallResult(
                ok=ok, value=float(value) if ok and value is not None else None,
                error=None if ok else str(r.get("error")),
                seconds=float(r.get("seconds") or 0.0),
                error_type=None if ok or r.get("error_type") is None else str(r.get("error_type"))))
        cap = lim.max_output_bytes
        return SandboxReport(
            results=tuple(results), error=reply.get("error"),
            violations=tuple(dict.fromkeys(reply.get("violations", ()))),
            timed_out=bool(reply.get("timed_out")),
            memory_exhausted=bool(reply.get("memory_exhausted")),
            stdout=reply.get("stdout", "")[:cap], stderr=reply.get("stderr", "")[:cap],
            wall_s=wall_s,
            extra={k: reply[k] for k in ("child_wall_s", "exit", "info", "complete") if k in reply})
