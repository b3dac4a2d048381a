"""A threshold run in its directory: the journal (what was decoded, per sample), resuming from it,
the batches spread over Ray (or run in this process), progress, and the summary and report.

Run directory:

- ``journal.msgpack`` (+ ``.tip``): header with the settings, one ``batch`` record per finished
  batch (:mod:`evolve.threshold.records`), one ``session`` record per invocation that ended (its
  wall seconds, batches decoded, how it ended);
- ``summary.json``: the result (:class:`Summary`), rewritten at the end of every invocation;
- ``report.html``: the plots (:mod:`evolve.threshold.report`).

Resuming: a rerun with the same settings reads the journal, keeps every batch in it and decodes
the rest; killed with kill -9 it loses only the batches in flight (a torn last frame is dropped).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from evaluators.decoding.codes import decoding_code
from evolve.store.journal import Journal, JournalError, read_journal
from evolve.threshold import stats
from evolve.threshold.batches import BatchFailed, run_batch
from evolve.threshold.records import RECORD_SCHEMA, BatchKey, BatchResult, Settings

JOURNAL = "journal.msgpack"
SUMMARY = "summary.json"
REPORT = "report.html"
PROGRESS_EVERY_S = 5.0
#: the reference value (fermionic transfer matrix, L <= 512; arXiv 2511.02907)
P_C_REFERENCE = 0.1092212
#: under depolarizing noise: 18.9(3)%, Monte Carlo on the disordered eight-vertex model (Bombin et al.,
#: PRX 2, 021004 (2012)), the toric code's, which the planar code shares
P_C_DEPOLARIZING = 0.189
REFERENCES = {"bitflip": (P_C_REFERENCE, "fermionic transfer matrix, L <= 512, arXiv 2511.02907"),
              "depolarizing": (P_C_DEPOLARIZING, "18.9(3)%, Monte Carlo, Bombin et al., PRX 2, 021004 (2012)")}


REFUSED = {
    "T18": ("T18 (the toric code) is not supported: its four classes need the torus's periodic and antiperiodic "
            "sectors, and the exact decoder here is the planar code's column transfer with open ends; use T21"),
}


def threshold_code(task):
    """The code whose threshold can be estimated for ``task`` (one with an exact decoder), or
    ValueError with one line saying why there is none."""
    code = decoding_code(task)
    if code is not None and code.exact:
        return code
    if task.id in REFUSED:
        raise ValueError(REFUSED[task.id])
    if getattr(task, "tier", 1) == 2:
        raise ValueError(f"{task.id} is not a decoding task (its quantity, {task.quantity.name}, is not a class "
                         "probability); `evolve threshold` takes T21")
    raise ValueError(f"{task.id} is not a Tier 2 decoding task; `evolve threshold` takes T21")


class ThresholdError(Exception):
    """A run that cannot start or go on (settings that disagree with the directory's, a busy
    journal, a program that fails): one line."""


class OutDirectoryError(ThresholdError):
    """--out holds something this run cannot resume (another run's settings, another journal, a damaged one):
    the user's choice of directory, not a failure of the run."""


@dataclass(frozen=True)
class Options:
    out: Path
    use_ray: bool = True
    address: str | None = None
    workers: int | None = None           # concurrent batches; None: Ray's CPUs
    method: str = "crossing"             # "crossing" | "fss"
    nu: float | None = stats.NU_NISHIMORI
    program: tuple[str, bool] | None = None    # (code, uses_log_z)


@dataclass
class Summary:
    task: str
    p_c: float
    p_c_err: float
    method: str
    estimator: str
    sizes: list[int]
    ps: list[float]
    samples: int                       # per (L, p)
    samples_total: int
    wall_s: float                      # this invocation
    wall_total_s: float                # every invocation of the run directory
    decoder: str
    crossings: list[dict]
    fss: dict
    points: list[dict]
    costs: dict                        # L -> CPU ms per sample, sampling and decoding
    batches_run: int                   # decoded by this invocation
    batches_resumed: int               # found in the journal
    run_dir: str
    report: str
    reference_p_c: float = P_C_REFERENCE
    notes: list[str] = field(default_factory=list)
    noise: str = "bitflip"
    chi: int = 0                       # the boundary MPS's bond dimension (depolarizing), 0 otherwise
    reference_source: str = REFERENCES["bitflip"][1]


def _open_journal(out: Path, settings: Settings) -> tuple[Journal, dict[BatchKey, BatchResult], float]:
    """The run's journal, opened for appending (created with the settings when new); the batches
    it holds and the wall seconds of its earlier sessions."""
    path = out / JOURNAL
    meta = {"threshold_schema": RECORD_SCHEMA, "settings": settings.to_dict()}
    if not path.exists():
        out.mkdir(parents=True, exist_ok=True)
        return Journal.create(path, f"threshold-{settings.task}-{int(time.time())}", meta), {}, 0.0
    found: dict = {}

    def inspect(contents) -> None:
        head = contents.header
        if head.get("threshold_schema") != RECORD_SCHEMA or "settings" not in head:
            raise OutDirectoryError(f"{path} is not a threshold journal of schema {RECORD_SCHEMA}")
        differ = settings.differences(Settings.from_dict(head["settings"]))
        if differ:
            raise OutDirectoryError(f"{out} holds a run with other settings ({'; '.join(differ)}); "
                                 "use another --out, or the same settings to resume it")
        found["records"] = contents.records

    try:
        journal = Journal.open_append(path, inspect=inspect)
    except JournalError as exc:
        raise OutDirectoryError(f"cannot resume {out}: {exc}") from None
    done, earlier = {}, 0.0
    for rec in found["records"]:
        if rec.get("kind") == "batch":
            result = BatchResult.from_record(rec)
            done[result.key] = result
        elif rec.get("kind") == "session":
            earlier += float(rec.get("wall_s", 0.0))
    return journal, done, earlier


def pending_batches(settings: Settings, done) -> list[tuple[BatchKey, int]]:
    """(key, size) of every batch not in ``done``, the largest size first (the longest tasks
    start early, so the run does not end waiting on one of them)."""
    out = []
    for L in sorted(settings.sizes, reverse=True):
        for p in settings.ps:
            for index in range(settings.batches_per_point()):
                key = BatchKey(L, p, index)
                if key not in done:
                    out.append((key, min(settings.batch, settings.samples - index * settings.batch)))
    return out


def _work(key: BatchKey, size: int) -> float:
    """A batch's expected cost, in units of one sample at L = 1: decoding is O(L^4) per sample."""
    return size * float(key.L) ** 4


class _Progress:
    """Progress lines on stderr, at most every PROGRESS_EVERY_S; the time to go weighs each batch
    by its expected cost (the largest sizes run first and cost L^4)."""

    def __init__(self, todo, done_count: int, log):
        self.total, self.done, self.log = done_count + len(todo), done_count, log
        self.work_left = sum(_work(k, n) for k, n in todo)
        self.work_done = 0.0
        self.started = time.monotonic()
        self.last = 0.0
        self.run_here = 0

    def tick(self, result: BatchResult) -> None:
        self.done += 1
        self.run_here += 1
        w = _work(result.key, result.size)
        self.work_done += w
        self.work_left -= w
        now = time.monotonic()
        if now - self.last < PROGRESS_EVERY_S and self.done < self.total:
            return
        self.last = now
        elapsed = now - self.started
        eta = elapsed / self.work_done * max(self.work_left, 0.0)
        n = result.size
        self.log(f"threshold: {self.done}/{self.total} batches ({100 * self.done / self.total:.0f}%), "
                 f"last L={result.key.L} p={result.key.p:.4f}: sampling {1e3 * result.sampling_s / n:.3f} ms, "
                 f"decoding {1e3 * result.decoding_s / n:.3f} ms per sample; elapsed {elapsed:.0f} s, "
                 f"about {eta:.0f} s to go")


def _decode(settings: Settings, options: Options, todo, journal: Journal, progress: _Progress) -> None:
    def keep(result: BatchResult) -> None:
        journal.append(result.to_record())
        progress.tick(result)

    if not todo:
        return
    if not options.use_ray:
        for key, size in todo:
            keep(run_batch(settings.task, key, size, settings.seed, options.program, settings.noise, settings.chi))
        return
    import ray  # lazy

    from evolve.engine.ray_session import RaySession  # lazy

    with RaySession(options.address):
        remote = ray.remote(num_cpus=1, max_retries=2)(run_batch)
        width = options.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        queue = list(reversed(todo))
        flight = {}
        while queue or flight:
            while queue and len(flight) < 2 * width:
                key, size = queue.pop()
                flight[remote.remote(settings.task, key, size, settings.seed, options.program, settings.noise,
                                     settings.chi)] = key
            # with a timeout, so that Ctrl-C and SIGTERM reach this thread (a blocking wait holds them)
            ready, _ = ray.wait(list(flight), num_returns=1, timeout=1.0)
            for ref in ready:
                flight.pop(ref)
                try:
                    keep(ray.get(ref))
                except ray.exceptions.RayTaskError as exc:
                    cause = exc.as_instanceof_cause()
                    if isinstance(cause, BatchFailed):
                        raise ThresholdError(str(cause)) from None
                    raise


def _costs(results) -> dict:
    by = {}
    for r in results:
        c = by.setdefault(r.key.L, [0.0, 0.0, 0])
        c[0] += r.sampling_s
        c[1] += r.decoding_s
        c[2] += r.size
    return {str(L): {"sampling_ms": 1e3 * s / n, "decoding_ms": 1e3 * d / n, "samples": n}
            for L, (s, d, n) in sorted(by.items())}


def analyse(settings: Settings, results, method: str, nu: float | None) -> tuple[float, float, list, stats.ScalingFit,
                                                                                     list[stats.Point], list[str]]:
    """(p_c, p_c_err, crossings, FSS fit, points, notes) from every batch of the run."""
    pts = stats.points(results)
    cross = stats.crossings(pts, settings.seed)
    notes = []
    try:
        fss = stats.fss_fit(pts, nu)
    except (ValueError, np.linalg.LinAlgError) as exc:
        fss = stats.ScalingFit(math.nan, math.nan, nu or math.nan, math.nan, math.nan, ())
        notes.append(f"the scaling fit failed: {exc}")
    if method == "fss":
        p_c, err = fss.p_c, fss.p_c_err
    else:
        last = cross[-1] if cross else None
        p_c, err = (last.p, last.err) if last else (math.nan, math.nan)
        if last is not None and math.isnan(last.p):
            notes.append(f"the curves of L = {last.L1} and {last.L2} do not cross inside the sampled p range")
    return p_c, err, cross, fss, pts, notes


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1, default=str, allow_nan=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def run_threshold(settings: Settings, options: Options, log=lambda line: print(line, file=sys.stderr, flush=True)
                  ) -> Summary:
    """Decode what the run directory does not hold yet, then analyse and report everything."""
    started = time.monotonic()
    journal, done, earlier_s = _open_journal(options.out, settings)
    todo = pending_batches(settings, done)
    total = len(done) + len(todo)
    noise = "" if settings.noise == "bitflip" else f" under {settings.noise} noise, {settings.decoder}"
    log(f"threshold {settings.task}{noise}: sizes {list(settings.sizes)}, {len(settings.ps)} values of p, "
        f"{settings.samples} samples each; {len(done)} of {total} batches already in {options.out / JOURNAL}")
    progress = _Progress(todo, len(done), log)
    ended = "finished"
    try:
        _decode(settings, options, todo, journal, progress)
    except BaseException as exc:
        ended = f"stopped: {type(exc).__name__}"
        raise
    finally:
        if not journal.closed:
            journal.append({"kind": "session", "wall_s": time.monotonic() - started, "batches": progress.run_here,
                            "ended": ended})
            journal.close()
    results = [BatchResult.from_record(r) for r in read_journal(options.out / JOURNAL).records if r.get("kind") == "batch"]
    p_c, err, cross, fss, pts, notes = analyse(settings, results, options.method, options.nu)
    if settings.noise == "depolarizing":
        notes.append(f"the decoder is approximate (boundary MPS, chi = {settings.chi}): the Nishimori estimator has the "
                     "indicator's mean only as far as its class probabilities are exact; compare a run at 2 chi (the "
                     "same samples: the errors depend on the seed, not the decoder)")
    wall = time.monotonic() - started
    summary = Summary(
        task=settings.task, p_c=p_c, p_c_err=err, method=options.method, estimator="nishimori",
        sizes=list(settings.sizes), ps=list(settings.ps), samples=settings.samples,
        samples_total=sum(r.size for r in results), wall_s=wall, wall_total_s=earlier_s + wall,
        decoder=settings.decoder, crossings=[asdict(c) for c in cross], fss=asdict(fss),
        points=[asdict(q) for q in pts], costs=_costs(results), batches_run=progress.run_here,
        batches_resumed=len(done), run_dir=str(options.out), report=str(options.out / REPORT), notes=notes,
        noise=settings.noise, chi=settings.chi, reference_p_c=REFERENCES[settings.noise][0],
        reference_source=REFERENCES[settings.noise][1])
    from evolve.threshold.report import write_report  # lazy: plotly

    write_report(options.out / REPORT, summary, pts, fss)
    _write_json(options.out / SUMMARY, asdict(summary))
    return summary
