"""What a flop and a written entry cost the tensor-network executor on this machine, learned from
the contractions it has done.

The path search scores a tree by flops + F x entries written and stops at a fraction of the best
tree's predicted contraction time, so both costs should be this machine's. They are not
constants: on the 2-core EPYC of earlier rounds a written entry cost about as much as 46-64 flops
(``DEFAULT_RATES``); on this round's AVX-512 Xeon a fit over seventeen P06 n = 250 contractions
gives 1.9e-11 s a flop and 3.3e-9 s a write (a write worth about 177 flops: matmuls about 3.5x
faster, memory about as fast). With the old figures the search there preferred trees with many
writes, which contract slowly, and over-predicted contraction times by 1.3-1.9x, so it searched
too long: P06 n = 250, ten pairs in one process (seeds 1, 4, 5), 448 s in all against 391 s with
the learned costs (docs/performance.md, "The tensor network").

So every contraction of the oracle that takes at least ``MIN_RECORD_S`` on its linear route (the
cold log-domain route is another executor) is recorded here, flops, writes and wall seconds, in
a small file of the oracle cache's directory (``$STATMECH_CACHE``, one file per host and CPU
model, the last ``KEEP`` contractions), and :func:`executor_rates` fits seconds = a flops +
b writes over them by non-negative least squares, in errors relative to each contraction's
time. A single record, or records whose writes per flop hardly differ, say only how fast this
machine is: the default's ratio is kept and scaled to them. No record, or costs a thousand
times off the default's: ``DEFAULT_RATES``; ``$STATMECH_EXECUTOR_RATES=default`` keeps them
always. Flops and writes are cotengra's (multiply-adds of each pairwise contraction, entries of
its output, all slices).

The rates are an input of whoever calls the oracle, never read by the path search itself: a run
learns them once (:func:`learned_rates`), writes them into its run directory
(``executor_rates.json``, :meth:`ExecutorRates.to_dict`) and hands them to its evaluators, whose
verifier opens a scope with them (:func:`using`); a resumed run reads the file back, so it searches
by the figures it started with. The tensor-network oracle takes the rates of the innermost scope
(:func:`current`), ``DEFAULT_RATES`` outside any, unless given its own.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import platform
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: the factor is kept in this range whatever a fit says
MIN_COMBO_FACTOR, MAX_COMBO_FACTOR = 8, 1024
MIN_RECORD_S = 2.0     # shorter contractions are mostly Python overhead, which the model leaves out
KEEP = 32              # records kept per machine, newest last
# a two-parameter fit needs this many records whose writes per flop span this factor: the search's own
# trees span little (P06 n = 250: 1.3x over five), yet five of them gave a write's worth as 265 flops
# against 161-238 from eleven spanning 7x, whose fit predicts each within 20%
MIN_FIT_RECORDS, MIN_RATIO_SPREAD = 4, 1.25
#: a fit or scale outside this factor of the default's costs is not believed (the default is used)
PLAUSIBLE = 1e3
#: ``STATMECH_EXECUTOR_RATES=default`` turns the learning off: neither read nor written, the
#: default costs always (the test suite sets it, so that no test's search depends on the others')
SWITCH = "STATMECH_EXECUTOR_RATES"


@dataclass(frozen=True)
class ExecutorRates:
    """Wall seconds per flop and per written entry of the executor with its slice threads;
    ``source``: "default", "scaled" (the default's ratio at this machine's speed) or "fitted"."""

    seconds_per_flop: float
    seconds_per_write: float
    source: str = "default"

    def __post_init__(self) -> None:
        if not (0 < self.seconds_per_flop < math.inf and 0 < self.seconds_per_write < math.inf):
            raise ValueError(f"executor costs must be positive and finite: {self.seconds_per_flop!r} s a flop, "
                             f"{self.seconds_per_write!r} s a write")

    @property
    def combo_factor(self) -> int:
        """Flops one written entry is worth (cotengra's ``combo-F`` score), within the range."""
        ratio = self.seconds_per_write / self.seconds_per_flop
        return int(min(MAX_COMBO_FACTOR, max(MIN_COMBO_FACTOR, round(ratio))))

    @property
    def minimize(self) -> str:
        """The cotengra objective the search scores trees by: flops + combo_factor x writes."""
        return f"combo-{self.combo_factor}"

    def predicted_seconds(self, flops: float, writes: float) -> float:
        """Wall seconds of a contraction with these totals (all slices)."""
        return flops * self.seconds_per_flop + writes * self.seconds_per_write

    @property
    def flops_per_second(self) -> float:
        """1 / seconds_per_flop (cotengra's ``max_time="rate:R"`` stops a search once it has run
        longer than its best tree's flops / R)."""
        return 1.0 / self.seconds_per_flop

    def to_dict(self) -> dict:
        """Plain data, as a run directory records the rates its evaluators used."""
        return {"seconds_per_flop": self.seconds_per_flop, "seconds_per_write": self.seconds_per_write,
                "source": self.source}

    @classmethod
    def from_dict(cls, data: dict) -> "ExecutorRates":
        """The rates :meth:`to_dict` wrote (ValueError for anything else)."""
        try:
            return cls(float(data["seconds_per_flop"]), float(data["seconds_per_write"]), str(data.get("source", "recorded")))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not executor rates: {data!r}") from exc


#: fitted on three P06 n = 250 trees on the EPYC machine of earlier rounds: 2e10 flops per second
#: with the two slice threads, a write worth 64 flops
DEFAULT_RATES = ExecutorRates(1 / 2e10, 64 / 2e10)


def fit_rates(records: list[tuple[float, float, float]], default: ExecutorRates = DEFAULT_RATES) -> ExecutorRates:
    """The rates that best explain ``records`` ((flops, writes, seconds) of whole contractions):
    see the module doc. ``default`` when there is none or the fit is degenerate. Errors are
    weighed relative to each contraction's time, so that one long contraction slowed by other
    work (the suite, a second search) does not decide the fit: on seventeen records, one of them
    slowed 2.5x, absolute least squares made a write worth 353 flops (158 without that record),
    relative ones 177 (178 without it)."""
    from scipy.optimize import nnls

    rows = np.array(records, dtype=np.float64).reshape(-1, 3)
    with np.errstate(all="ignore"):
        rows = rows[np.all(np.isfinite(rows) & (rows > 0) & (rows < 1e30), axis=1)]
    if not len(rows):
        return default

    def plausible(a: float, b: float) -> bool:
        return (default.seconds_per_flop / PLAUSIBLE < a < default.seconds_per_flop * PLAUSIBLE
                and default.seconds_per_write / PLAUSIBLE < b < default.seconds_per_write * PLAUSIBLE)

    f, w, t = rows.T
    if len(rows) >= MIN_FIT_RECORDS and (w / f).max() >= MIN_RATIO_SPREAD * (w / f).min():
        design = np.stack([f / t, w / t], axis=1)       # (a f + b w) / t should be 1
        scale = design.max(axis=0)
        coef, _ = nnls(design / scale, np.ones(len(t)))
        a, b = (float(x) for x in coef / scale)
        if plausible(a, b):
            return ExecutorRates(a, b, "fitted")
    ratio = default.predicted_seconds(f, w) / t
    s = float(ratio.sum() / np.dot(ratio, ratio))      # s x default's prediction / t should be 1
    a, b = default.seconds_per_flop * s, default.seconds_per_write * s
    return ExecutorRates(a, b, "scaled") if plausible(a, b) else default


@functools.lru_cache(maxsize=1)
def _cpu_model() -> str:
    """The CPU's model name (read once: every search and record asks for the records' path)."""
    try:
        return next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("model name")), "") or platform.processor()
    except OSError:
        return platform.processor()


def _records_path() -> Path:
    from evaluators.oracle_cache import cache_dir

    machine = hashlib.sha256(f"{platform.node()}|{_cpu_model()}|{os.cpu_count()}".encode())
    return cache_dir() / f"executor-rates-{machine.hexdigest()[:16]}.json"


def recorded() -> list[tuple[float, float, float]]:
    """This machine's records, oldest first ([] when there is no readable file)."""
    try:
        rows = json.loads(_records_path().read_text())["contractions"]
        return [(float(f), float(w), float(t)) for f, w, t in rows]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def record_contraction(flops: float, writes: float, seconds: float) -> None:
    """Add one contraction of the oracle's linear route to this machine's records (when it took
    at least ``MIN_RECORD_S``); the file is replaced whole, so a crash leaves the old one. Never
    raises: a cache that cannot be written costs only the calibration."""
    if os.environ.get(SWITCH) == "default" or not (seconds >= MIN_RECORD_S and flops > 0 and writes > 0):
        return
    tmp = None
    try:
        path = _records_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        # read, add, replace: two processes recording at once may lose one record, never the file
        rows = (recorded() + [(float(flops), float(writes), float(seconds))])[-KEEP:]
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".rates-")
        with os.fdopen(fd, "w") as out:
            json.dump({"schema": 1, "contractions": rows}, out)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def learned_rates() -> ExecutorRates:
    """The rates fitted to this machine's records (:func:`fit_rates`), read afresh: a run (or
    `evolve oracle`, or a benchmark) calls this once and passes the value on. ``DEFAULT_RATES``
    when ``$STATMECH_EXECUTOR_RATES`` is "default"."""
    if os.environ.get(SWITCH) == "default":
        return DEFAULT_RATES
    return fit_rates(recorded())


#: the rates of the innermost :func:`using` scope, per process (one oracle call at a time per process, as the
#: time budget of :mod:`evaluators.oracles.budget`); the bottom entry is the default, never popped
_scopes: list[ExecutorRates] = [DEFAULT_RATES]


@contextmanager
def using(rates: ExecutorRates | None):
    """Within the block, the tensor-network oracle searches by ``rates`` (None: the enclosing scope's)."""
    if rates is None:
        yield
        return
    _scopes.append(rates)
    try:
        yield
    finally:
        _scopes.pop()


def current() -> ExecutorRates:
    """The rates of the innermost :func:`using` scope; ``DEFAULT_RATES`` outside every scope."""
    return _scopes[-1]
