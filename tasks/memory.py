"""How much memory a task instance of n spins needs, estimated before anything of that size is
allocated, so an impossible size is refused in one line instead of meeting the kernel's OOM
killer (issue 32: `evolve oracle --task P04 --n 100000000` grew to 24 GB in 276 s and was killed).

The estimate, in bytes: the task's own sampler and ``to_model`` run at two small sizes it accepts
(its probe and ladder sizes up to MEASURE_MAX_N), the parameters and the model are measured there
(every list, float, tuple and array they hold), and the total is carried to n along the power law
through those two points (exponent between 1 and 3). That covers what exists before an exact
method starts; with the method's own working arrays (the planar elimination's fronts, the
transfer matrix's vectors, the contraction's intermediates: several copies of the model at least)
the whole is counted as WORK_FACTOR times it, a floor rather than a bound. It is compared with
what this process may use: the memory the machine has available (MemAvailable) and the
address-space limit, if any.
"""

from __future__ import annotations

import math
import os
import resource
import sys

import numpy as np

#: measure at sizes up to this (a sampler call and a model build there take milliseconds)
MEASURE_MAX_N = 4096
#: what an exact computation holds at its peak, in copies of the parameters and the model
WORK_FACTOR = 4.0
#: below this an estimate is not compared with the machine (reading /proc costs more than it saves)
SMALL_BYTES = 4e8


def _deep_bytes(x, seen: set | None = None) -> int:
    """Bytes held by ``x``: numpy arrays by their buffers, containers with what they hold."""
    seen = set() if seen is None else seen
    if id(x) in seen:
        return 0
    seen.add(id(x))
    if isinstance(x, np.ndarray):
        return int(x.nbytes) + 112
    size = sys.getsizeof(x)
    if isinstance(x, dict):
        return size + sum(_deep_bytes(k, seen) + _deep_bytes(v, seen) for k, v in x.items())
    if isinstance(x, (list, tuple, set, frozenset)):
        return size + sum(_deep_bytes(v, seen) for v in x)
    if hasattr(x, "__dict__") and not isinstance(x, type):
        return size + _deep_bytes(vars(x), seen)
    return size


def _instance_bytes(task, n: int) -> int:
    params = task.probe_params(n, 0, 0)
    return _deep_bytes(params) + _deep_bytes(task.to_model(params, n))


def _measure_sizes(task) -> list[int]:
    sizes = sorted({int(s) for s in tuple(task.probe_sizes) + tuple(task.ladder_sizes) if int(s) <= MEASURE_MAX_N})
    return sizes[-2:]


def _law(task) -> tuple[int, float, float] | None:
    """(n2, bytes at n2, exponent) of the task's measured power law, once per task object; None when
    it gives fewer than two sizes up to MEASURE_MAX_N."""
    hit = _LAWS.get(id(task))
    if hit is not None and hit[0] is task:
        return hit[1]
    sizes = _measure_sizes(task)
    law = None
    if len(sizes) == 2:
        (n1, n2) = sizes
        b1, b2 = _instance_bytes(task, n1), _instance_bytes(task, n2)
        law = (n2, float(b2), min(max(math.log(b2 / b1) / math.log(n2 / n1), 1.0), 3.0) if b2 > b1 else 1.0)
    _LAWS[id(task)] = (task, law)
    return law


_LAWS: dict[int, tuple] = {}


def estimated_bytes(task, n: int) -> float:
    """Bytes an exact computation of ``task`` at n spins needs, at least (module docstring); NaN
    when the task gives fewer than two sizes up to MEASURE_MAX_N to measure."""
    law = _law(task)
    if law is None:
        return math.nan
    n2, b2, exponent = law
    return WORK_FACTOR * b2 * (n / n2) ** exponent


def available_bytes() -> float:
    """What this process may allocate: the machine's available memory, and the address-space
    limit less what is mapped already, whichever is smaller (inf when neither is known)."""
    limit = math.inf
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    limit = float(line.split()[1]) * 1024.0
                    break
    except OSError:
        pass
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft != resource.RLIM_INFINITY:
        mapped = 0.0
        try:
            with open(f"/proc/{os.getpid()}/statm") as fh:
                mapped = float(fh.read().split()[0]) * resource.getpagesize()
        except OSError:
            pass
        limit = min(limit, soft - mapped)
    return limit


def _gb(b: float) -> str:
    return f"{b / 1e9:.3g} GB" if b >= 1e8 else f"{b / 1e6:.3g} MB"


def memory_refusal(task, n: int) -> str | None:
    """None when n fits, else one line: what it needs, what there is, and the largest n that fits
    (the estimate's power law solved for the memory available)."""
    need = estimated_bytes(task, n)
    if not need > SMALL_BYTES:
        return None
    have = available_bytes()
    if not need > have:
        return None
    n2, b2, exponent = _law(task)
    largest = n2 * (have / (WORK_FACTOR * b2)) ** (1.0 / exponent)
    return (f"{task.id} at n={n} needs about {_gb(need)} of memory ({_gb(need / WORK_FACTOR)} for its parameters and model, "
            f"measured at two sizes up to n={n2} and scaled as n^{exponent:.2g}; {WORK_FACTOR:g} times that with an "
            f"exact method's work), more than the {_gb(have)} this process can have; sizes up to about "
            f"n = {largest:.3g} fit")
