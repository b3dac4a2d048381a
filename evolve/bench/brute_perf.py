"""How fast brute force is on this machine: the numbers behind `evolve perf brute`.

Times both enumeration routes of :mod:`evaluators.oracles.brute` on P06 instances (random
3-regular +-1 glass, no fields, so half the states are enumerated) after warming the JIT.
"""

from __future__ import annotations

import time

import numba

from evaluators.oracles.brute import brute_log_z
from tasks.registry import get_task


def _p06_model(n: int, seed: int):
    task = get_task("P06")
    return task.to_model(task.probe_params(n, seed, 0), n)


def measure_brute(sizes=(24, 26, 28), seed: int = 0) -> dict:
    """Seconds and configurations per second of the float (exp per state) and histogram (integer
    density of states) routes for P06 at each n in ``sizes``.

    Returns {"threads", "compile_seconds", "sizes": {n: {"float_seconds", "histogram_seconds",
    "float_configs_per_second", "histogram_configs_per_second", "enumerated_states",
    "log_z"}}}. Configurations per second count all 2^n configurations (the enumeration visits
    2^(n-1) of them thanks to the flip symmetry); ``compile_seconds`` is the first call on a tiny
    model (JIT compilation, or loading the on-disk cache when it is warm).
    """
    t0 = time.perf_counter()
    warm = _p06_model(8, seed)
    brute_log_z(warm, route="float")
    brute_log_z(warm, route="histogram")
    compile_seconds = time.perf_counter() - t0
    out: dict = {"threads": numba.get_num_threads(), "compile_seconds": compile_seconds, "sizes": {}}
    for n in sizes:
        model = _p06_model(int(n), seed)
        row = {"enumerated_states": 2 ** (int(n) - 1)}
        for route in ("float", "histogram"):
            t = time.perf_counter()
            log_z = brute_log_z(model, route=route)
            seconds = time.perf_counter() - t
            row[f"{route}_seconds"] = seconds
            row[f"{route}_configs_per_second"] = 2.0 ** int(n) / seconds
            row["log_z"] = log_z
        out["sizes"][int(n)] = row
    return out


if __name__ == "__main__":
    import json  # only when run as a script

    print(json.dumps(measure_brute(), indent=2))
