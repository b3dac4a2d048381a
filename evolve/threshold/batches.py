"""One unit of a threshold run: a seeded batch of errors at one (L, p), drawn and decoded, in
whatever process runs it (a Ray worker, or the driver itself).

A program as the decoder runs in the sandbox (evaluators/sandbox): one run per batch, two calls
per error (one per class) of its log_Z, or of Z_efficient (then logged); a call that fails or
returns a value that is not a finite log probability fails the batch, with the reason."""

from __future__ import annotations

import math
import time

import numpy as np

from evaluators.decoding.codes import CODES, code_for
from evolve.threshold.records import BatchKey, BatchResult

#: a program's batch: wall clock for its whole sandbox run, seconds
PROGRAM_BATCH_TIMEOUT_S = 1800.0


_WARM: set[str] = set()


def _warm_up(task_id: str) -> None:
    """Load the compiled decoder once per process before anything is timed (numba's cache takes a
    second or more to load; it would otherwise count as the first batch's decoding cost)."""
    if task_id in _WARM:
        return
    code = CODES[task_id]
    rng = np.random.default_rng(0)
    for p in (0.1, 1e-5, 1e-12):                 # the float64, double-double and small-p paths
        syn, _ = code.draw(rng, code.min_L, 0.3, 1)
        code.exact_log_p(code.min_L, p, syn)
    _WARM.add(task_id)


class BatchFailed(Exception):
    """The decoder could not answer for a batch (a program's call failed): one line."""


def run_batch(task_id: str, key: BatchKey, size: int, seed: int, program: tuple[str, bool] | None = None,
              noise: str = "bitflip", chi: int = 0) -> BatchResult:
    """Draw ``size`` errors for ``key`` and decode them. ``program``: (code, uses_log_z) to ask a
    program in the sandbox instead of the exact decoder; ``noise`` "depolarizing": the depolarizing
    planar code, decoded by the boundary MPS at bond dimension ``chi``."""
    code = code_for(task_id, noise)
    if noise != "bitflip":
        started = time.process_time()
        rng = np.random.default_rng(key.seed_words(seed))
        syn, true_class = code.draw(rng, key.L, key.p, size)
        sampled = time.process_time()
        log_p = code.approx_log_p(key.L, key.p, syn, chi)
        return BatchResult(key, true_class, log_p, sampled - started, time.process_time() - sampled)
    if program is None:
        _warm_up(task_id)
    started = time.process_time()
    rng = np.random.default_rng(key.seed_words(seed))
    syn, true_class = code.draw(rng, key.L, key.p, size)
    sampled = time.process_time()
    if program is None:
        log_p = code.exact_log_p(key.L, key.p, syn)
        decoding_s = time.process_time() - sampled
    else:
        log_p, decoding_s = _program_log_p(code, key, syn, *program)
    return BatchResult(key, true_class, log_p, sampled - started, decoding_s)


def _program_log_p(code, key: BatchKey, syn: np.ndarray, source: str, uses_log_z: bool) -> tuple[np.ndarray, float]:
    """(count, classes) log P from the program, and the seconds its calls took (inside the sandbox)."""
    from evaluators.sandbox import Call, Limits, Sandbox  # lazy: the sandbox starts a fork server

    fname = "log_Z" if uses_log_z else "Z_efficient"
    calls = [Call(fname, code.params(key.p, s, a), key.L * key.L) for s in syn for a in range(code.classes)]
    limits = Limits(timeout_s=PROGRAM_BATCH_TIMEOUT_S, cpu_s=int(PROGRAM_BATCH_TIMEOUT_S) + 5, memory_mb=2048)
    with Sandbox(limits) as box:
        report = box.run(source, calls, limits)
    where = f"at L = {key.L}, p = {key.p:g} (batch {key.index})"
    if len(report.results) < len(calls):
        raise BatchFailed(f"the program did not answer every call {where}: {report.error or 'the run ended early'}")
    values = np.empty(len(calls))
    for k, res in enumerate(report.results):
        if not res.ok:
            raise BatchFailed(f"the program raised {res.error} {where}")
        v = res.value
        if not uses_log_z:
            v = math.log(v) if v is not None and v > 0 else math.nan
        if v is None or not math.isfinite(v) or v > 1e-9:
            raise BatchFailed(f"the program returned {res.value!r} {where}: not the log of a probability")
        values[k] = v
    return values.reshape(len(syn), code.classes), float(sum(r.seconds for r in report.results))
