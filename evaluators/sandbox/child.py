"""The sandbox child: forked by the zygote, runs one candidate on a list of calls, then exits.

Order of hardening (all before any candidate byte runs):
1. ``setsid`` (own process group, so the zygote can kill everything it might spawn);
2. fds: 0 = /dev/null, 1/2 = the zygote's capture pipes, the signed result pipe moved to a
   random fd number in [64, 1024); every other fd is closed;
3. rlimits: CPU (soft ``cpu_s``, hard +1 s), AS (``memory_mb`` MiB), FSIZE 0, CORE 0,
   NPROC 0 (not enforced for root; seccomp and the audit hook cover process creation),
   NOFILE just above the result fd;
4. seccomp filter (``seccomp.py``; x86-64);
5. the candidate is compiled, then the audit hook (``audit.py``) is added and the module is
   executed with the restricted builtins (``guards.py``).

Results go to the zygote as HMAC-signed frames on the private pipe, one per call as soon as
it finishes: ``{"t": "r", ok, value, error, error_type, seconds}``; also ``{"t": "v", name}`` for a
violation (sent from inside the guard or hook, before the candidate sees the exception),
``{"t": "e", error}`` for a run error, ``{"t": "m"}`` for memory exhaustion, ``{"t": "done"}``.
"""
from __future__ import annotations

import math
import os
import resource
import secrets
import sys
import time

import numpy as np

from . import audit, guards, protocol, seccomp

_perf = time.perf_counter
_RECURSION_LIMIT = 10_000
_STACK_BYTES = 64 * 1024 * 1024
_IMAG_TOL = 1e-12  # relative; see to_float


def to_float(x) -> float:
    """The value of a candidate's return, mirroring the paper's ``_to_float``.

    float(x) for real scalars (int, float, numpy scalars, Fraction, Decimal); a size-1 array
    gives its single element. Refused with ValueError/TypeError: bool, None, str/bytes,
    non-scalar arrays ("non-scalar return of shape (3,)"), and complex numbers whose
    imaginary part is not negligible (|imag| > 1e-12 |real|); complex with a zero or
    negligible imaginary part gives the real part (determinant/Pfaffian formulas in complex
    arithmetic legitimately end with a +0j or a rounding-level residue).
    """
    for _ in range(2):  # the scalar itself, then the single element of a size-1 array
        if isinstance(x, (bool, np.bool_)) or x is None or isinstance(x, (str, bytes)):
            raise TypeError(f"unsupported return type {type(x).__name__}")
        if isinstance(x, (complex, np.complexfloating)):
            z = complex(x)
            if z.imag != 0 and not abs(z.imag) <= _IMAG_TOL * abs(z.real):
                raise ValueError(f"complex return with non-zero imaginary part {z.imag!r}")
            return float(z.real)
        if isinstance(x, np.ndarray) or isinstance(x, (list, tuple)):
            arr = np.asarray(x)
            if arr.size != 1:
                raise ValueError(f"non-scalar return of shape {arr.shape}")
            x = arr.reshape(()).item() if arr.dtype != object else arr.reshape(())[()]
            continue
        try:
            return float(x)
        except (TypeError, ValueError):
            arr = np.asarray(x)
            if arr.size == 1 and arr.dtype != object:
                x = arr.reshape(()).item()
                continue
            if arr.size != 1:
                raise ValueError(f"non-scalar return of shape {arr.shape}") from None
            raise TypeError(f"unsupported return type {type(x).__name__}") from None
    raise TypeError("unsupported return type")


def _describe(exc: BaseException, with_type: bool = True) -> str:
    try:
        text = str(exc)
    except BaseException:  # a hostile __str__
        text = "<unprintable>"
    return (f"{type(exc).__name__}: {text}" if with_type else text)[:2000]


def _setup_fds(res_fd: int, out_fd: int, err_fd: int, keep: int) -> int:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    top = min(1024, soft if soft != resource.RLIM_INFINITY else 1024)
    target = 64 + secrets.randbelow(max(1, top - 65))
    if target == keep:
        target += 1
    os.dup2(res_fd, target, inheritable=False)
    try:
        open_fds = [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:
        open_fds = list(range(3, max(top, 4096)))
    for n in open_fds:
        if n > 2 and n not in (target, keep):
            try:
                os.close(n)
            except OSError:
                pass
    return target


def _set_limits(limits: dict, result_fd: int) -> None:
    cpu = max(1, int(math.ceil(float(limits.get("cpu_s", 60)))))
    mem = int(limits.get("memory_mb", 2048)) * 1024 * 1024
    wanted = [
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (mem, mem)),
        (resource.RLIMIT_FSIZE, (0, 0)),
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_NPROC, (0, 0)),
        (resource.RLIMIT_NOFILE, (result_fd + 1, result_fd + 1)),
    ]
    _, stack_hard = resource.getrlimit(resource.RLIMIT_STACK)
    if stack_hard == resource.RLIM_INFINITY or stack_hard >= _STACK_BYTES:
        wanted.append((resource.RLIMIT_STACK, (_STACK_BYTES, _STACK_BYTES)))
    for which, value in wanted:
        try:
            resource.setrlimit(which, value)
        except (ValueError, OSError):
            pass


def run(key: bytes, req_fd: int, res_fd: int, out_fd: int, err_fd: int) -> None:
    """Body of a pre-forked child; never returns.

    Everything that does not depend on the request is done before waiting for it (it also
    takes the copy-on-write page faults off the critical path). Then: one request from
    ``req_fd`` (EOF: the zygote is gone, exit quietly), limits, compile, arm the hook, run,
    flush stdout/stderr, send ``{"t": "done"}``.
    """
    status = 0
    try:
        os.setsid()
        base = protocol.mac(key)
        del key
        fd = _setup_fds(res_fd, out_fd, err_fd, keep=req_fd)
        seq = [0]
        write_all, sign = protocol.write_all, protocol.sign

        def send(obj):
            frame = sign(base, seq[0], obj)
            seq[0] += 1
            write_all(fd, frame)

        def report(name):
            send({"t": "v", "name": str(name)[:300]})

        builtins_ = guards.make_builtins(report)
        arm = audit.install(report)
        sandboxed = seccomp.install()
        _warm_up(base)
        request = protocol.read_frame(req_fd)
        os.close(req_fd)
        if request is None:
            os._exit(0)
        if not sandboxed:
            send({"t": "info", "seccomp": False})
        try:
            _run(request, fd, send, report, builtins_, arm)
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except BaseException:
                    pass
        send({"t": "done"})
    except BaseException:
        status = 70
    finally:
        os._exit(status)


def _warm_up(base) -> None:
    """Touch what every run uses, so its copy-on-write faults happen while we wait."""
    protocol.sign(base, 0, {"t": "r", "ok": True, "value": 1.0, "error": None, "seconds": 0.0})
    to_float(np.float64(1.0))
    compile("def f(x):\n    return [x for _ in range(2)]\n", "<warm>", "exec", dont_inherit=True)


def _run(request: dict, fd: int, send, report, builtins_, arm) -> None:
    _set_limits(request.get("limits", {}), fd)
    sys.setrecursionlimit(_RECURSION_LIMIT)
    try:
        code = compile(request["code"], audit.CANDIDATE_FILENAME, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as e:
        send({"t": "e", "error": _describe(e)})
        return
    namespace = {"__builtins__": builtins_, "__name__": "candidate"}
    arm(code)

    try:
        exec(code, namespace)
    except BaseException as e:
        if isinstance(e, MemoryError):
            send({"t": "m"})
        send({"t": "e", "error": f"candidate module raised {_describe(e)}"})
        return
    if not callable(namespace.get("Z_efficient")):
        send({"t": "e", "error": "missing Z_efficient"})
        return

    for call in request["calls"]:
        name = call["function"]
        fn = namespace.get(name) if name in ("Z_efficient", "log_Z") else None
        if not callable(fn):
            send({"t": "r", "ok": False, "value": None, "error": f"missing {name}", "seconds": 0.0})
            continue
        value, error, error_type = None, None, None
        t0 = _perf()
        try:
            raw = fn(call["params"], call["n"])
        except BaseException as e:
            seconds = _perf() - t0
            if isinstance(e, MemoryError):
                send({"t": "m"})
            error, error_type = _describe(e), type(e).__name__
        else:
            seconds = _perf() - t0
            try:
                value = to_float(raw)
            except (TypeError, ValueError) as e:
                error = _describe(e, with_type=False)
            except BaseException as e:
                if isinstance(e, MemoryError):
                    send({"t": "m"})
                error, error_type = _describe(e), type(e).__name__
        send({"t": "r", "ok": error is None, "value": value if error is None else None,
              "error": error, "error_type": error_type, "seconds": seconds})
        try:
            sys.stdout.flush()
        except BaseException:
            pass
