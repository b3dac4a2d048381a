"""Plain records exchanged between the verifier and the sandbox.

Times are in seconds (float), sizes in bytes unless the field name says otherwise
(``memory_mb`` is in MiB).
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Call:
    """One call of a candidate function: ``function(params, n)``.

    ``function`` is ``"Z_efficient"`` or ``"log_Z"``; ``params`` is JSON-like (numbers and
    nested lists of numbers) and travels to the child as JSON.
    """

    function: str
    params: dict
    n: int


@dataclass(frozen=True)
class CallResult:
    """Outcome of one call.

    ``value`` is ``float(...)`` of the return value (nan/inf pass through; the verifier
    judges), ``None`` when ``ok`` is false. ``error`` is ``"TypeError: ..."`` when the call
    raised, or a conversion message such as ``"non-scalar return of shape (3,)"``.
    ``seconds`` is the wall time of the call inside the child (``time.perf_counter``).
    ``error_type`` is the exception's class name when the call raised (``"OverflowError"``), so a
    caller decides by type, never by reading ``error``'s words.
    """

    ok: bool
    value: float | None
    error: str | None
    seconds: float
    error_type: str | None = None


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run.

    timeout_s: wall clock for the whole run (module code + all calls), seconds; the whole
        process group is SIGKILLed after it.
    cpu_s: RLIMIT_CPU of the child, CPU seconds (SIGXCPU at cpu_s, SIGKILL one second later).
    memory_mb: RLIMIT_AS of the child, MiB of address space (the preloaded numpy/scipy
        image counts, about 200 MiB).
    max_output_bytes: captured stdout and stderr are each cut to this many bytes.
    call_timeout_s: wall clock for each call (the first one's includes running the module), or
        None; the child is killed at the first call that exceeds it, as at ``timeout_s``, so a
        list of calls can share one run and still give each call its own budget.
    """

    timeout_s: float = 30.0
    cpu_s: int = 60
    memory_mb: int = 2048
    max_output_bytes: int = 64_000
    call_timeout_s: float | None = None


@dataclass(frozen=True)
class SandboxReport:
    """Everything the host learned from one run (see ``Sandbox.run``).

    ``results`` holds one entry per call that completed, in call order (fewer than the
    calls when the run died). ``error`` is set when the code did not run at all or the run
    died. ``violations`` are named policy violations in the order first seen, without
    duplicates. ``wall_s`` is the host-measured wall time of the run, seconds.
    """

    results: tuple[CallResult, ...] = ()
    error: str | None = None
    violations: tuple[str, ...] = ()
    timed_out: bool = False
    memory_exhausted: bool = False
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0
    extra: dict = field(default_factory=dict, compare=False, repr=False)
