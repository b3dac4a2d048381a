"""Per-run overhead of the sandbox against the paper's design (a fresh interpreter per probe set).

``measure_overhead`` times a trivial candidate on 3 calls both ways; all times in seconds.
The "fresh" baseline reproduces StatMechBench-v0 Appendix C: the candidate pasted into a
script template that imports json/sys/math/itertools/functools/numpy, run with
``subprocess.run`` (30 s timeout, allowlisted environment), calls as JSON on stdin, results
on the last ``__VERIFIER_RESULT__`` line of stdout.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from .host import Sandbox
from .records import Call, Limits

TRIVIAL = "def Z_efficient(params, n):\n    return 2.0 ** n\n"
CALLS = [Call("Z_efficient", {"beta": 0.5}, n) for n in (3, 4, 5)]

_TEMPLATE = '''import json, sys, math, itertools, functools
import numpy as np

def _to_float(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        arr = np.asarray(x)
        if arr.size == 1:
            return float(arr.reshape(()).item())
        raise TypeError(f"Z_efficient returned non-scalar of shape {arr.shape}")

# ---------- candidate code starts ----------
__CANDIDATE_CODE__
# ---------- candidate code ends ----------

if 'Z_efficient' not in dir():
    print("__VERIFIER_RESULT__" + json.dumps({"error": "missing Z_efficient"}))
    sys.exit(0)
req = json.loads(sys.stdin.read())
out = []
for call in req["calls"]:
    try:
        z = Z_efficient(call["params"], call["n"])
        out.append({"ok": True, "z": _to_float(z)})
    except Exception as e:
        out.append({"ok": False, "error": f"{type(e).__name__}: {e}"})
print("__VERIFIER_RESULT__" + json.dumps({"results": out}))
'''
_PAPER_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TEMP", "TMP",
              "PYTHONPATH", "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH")


def run_fresh(code: str, calls: list[Call], script_dir: str, timeout_s: float = 30.0) -> dict:
    """One probe set the paper's way; returns the parsed sentinel payload."""
    path = os.path.join(script_dir, "probe.py")
    with open(path, "w") as f:
        f.write(_TEMPLATE.replace("__CANDIDATE_CODE__", code))
    env = {k: os.environ[k] for k in _PAPER_ENV if k in os.environ}
    payload = json.dumps({"calls": [{"params": c.params, "n": c.n} for c in calls]})
    proc = subprocess.run([sys.executable, path], input=payload, capture_output=True,
                          text=True, timeout=timeout_s, env=env)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("__VERIFIER_RESULT__"):
            return json.loads(line[len("__VERIFIER_RESULT__"):])
    return {"error": f"no result line (exit {proc.returncode})"}


def _stats(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]
    return statistics.median(ordered), p90


def measure_overhead(repeats: int = 30) -> dict:
    """Median and p90 wall time per run: warm sandbox vs fresh interpreter (seconds).

    Sandbox runs are timed back to back (the zygote forks its next spare child right after
    each reply, so this includes that work); ``sandbox_idle_*`` times runs that find the
    spare child ready (a 50 ms pause before each, as when the caller does other work
    between runs). ``ratio`` = fresh_median_s / sandbox_median_s (the back-to-back figure).
    """
    repeats = max(3, int(repeats))
    with Sandbox(Limits(timeout_s=30.0)) as sandbox:
        first = sandbox.run(TRIVIAL, CALLS)
        if first.error or [r.value for r in first.results] != [8.0, 16.0, 32.0]:
            raise RuntimeError(f"sandbox sanity run failed: {first}")
        busy, idle = [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            sandbox.run(TRIVIAL, CALLS)
            busy.append(time.perf_counter() - t0)
        for _ in range(max(3, repeats // 2)):
            time.sleep(0.05)
            t0 = time.perf_counter()
            sandbox.run(TRIVIAL, CALLS)
            idle.append(time.perf_counter() - t0)
    fresh = []
    with tempfile.TemporaryDirectory(prefix="fresh-probe-") as script_dir:
        got = run_fresh(TRIVIAL, CALLS, script_dir)
        if [r.get("z") for r in got.get("results", [])] != [8.0, 16.0, 32.0]:
            raise RuntimeError(f"fresh baseline sanity run failed: {got}")
        for _ in range(repeats):
            t0 = time.perf_counter()
            run_fresh(TRIVIAL, CALLS, script_dir)
            fresh.append(time.perf_counter() - t0)
    s_med, s_p90 = _stats(busy)
    i_med, i_p90 = _stats(idle)
    f_med, f_p90 = _stats(fresh)
    return {
        "repeats": repeats, "calls_per_run": len(CALLS),
        "sandbox_median_s": s_med, "sandbox_p90_s": s_p90,
        "sandbox_idle_median_s": i_med, "sandbox_idle_p90_s": i_p90,
        "fresh_median_s": f_med, "fresh_p90_s": f_p90,
        "ratio": f_med / s_med if s_med > 0 else float("inf"),
    }


if __name__ == "__main__":
    print(json.dumps(measure_overhead(), indent=2))
