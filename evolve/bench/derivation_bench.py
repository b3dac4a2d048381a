"""The derivation benchmark: generated task files by family, each derived from its formula alone and
the program verified by the full cascade (evolve/bench/derivation_families.py has the families).

A task counts as solved when its derivation reaches a polynomial program that the verifier accepts
beyond its probe sizes (an exact oracle at a ladder size); a control (a dense glass) counts as solved
when it ends ``no_efficient_known`` and nothing tractable is claimed for it. Every task leaves a
record (``records/<id>.json``) and its file (``tasks/<id>.py``) in the output directory; a rerun with
the same directory reads the records it has and derives only what is missing.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from evolve.bench.derivation_families import FAMILIES, generate

#: lines of a derivation's diagnosis or a verdict's feedback kept as the reason
REASON_LINES = 2


@dataclass
class BenchRecord:
    family: str
    seed: int
    task: str
    expect: str                       # "polynomial" | "none"
    chain: str = ""
    tractable_class: str | None = None
    complexity: str | None = None
    polynomial: bool = False          # the derived plan's cost is polynomial
    verdict: str | None = None        # "accept" | "reject" | None (not verified)
    largest_n: int = 0
    probe_max: int = 0
    solved: bool = False
    reason: str = ""                  # why not solved (or what the control ended as)
    derive_s: float = 0.0
    verify_s: float = 0.0
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def bench_one(family: str, seed: int, out: Path, verify_program: bool = True) -> BenchRecord:
    """Generate, register, derive and verify one task; its record (also written to ``out``)."""
    from evaluators.verify import verify  # lazy: the verifier, numba and the sandbox load only when a task is run
    from search.derivation import derive  # lazy
    from search.derivation.proposer import to_candidate  # lazy
    from tasks.registry import TaskFileError, register_task_file  # lazy

    tid, text = generate(family, seed)
    rec = BenchRecord(family, seed, tid, FAMILIES[family].expect)
    path = out / "tasks" / f"{tid}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    try:
        task = register_task_file(path)
    except TaskFileError as exc:
        rec.reason = f"the generated task file was refused: {exc}"
        return _saved(rec, out)
    rec.probe_max = max(task.probe_sizes)
    started = time.perf_counter()
    d = derive(task, seed=seed)
    rec.derive_s = time.perf_counter() - started
    rec.chain, rec.tractable_class, rec.complexity = d.chain, d.tractable_class, d.complexity_O
    rec.polynomial = d.plan is not None and d.plan.cost[0] == 0
    if d.program is None:
        rec.reason = "no program: " + str(d.error) + _lines(d.diagnosis)
        return _saved(rec, out)
    if verify_program:
        started = time.perf_counter()
        verdict = verify(task, to_candidate(d, "bench", task.id).to_submission())
        rec.verify_s = time.perf_counter() - started
        rec.verdict, rec.largest_n = verdict.verdict, int(verdict.numerical.largest_n_verified)
        feedback = verdict.feedback
    else:
        feedback = ""
    if rec.expect == "none":
        rec.solved = rec.tractable_class == "no_efficient_known" and not rec.polynomial
        rec.reason = (f"ended {rec.tractable_class}, {rec.complexity}" if rec.solved else
                      f"a control claimed {rec.tractable_class}, {rec.complexity}")
    elif not verify_program:
        rec.solved = rec.polynomial
        rec.reason = "" if rec.polynomial else f"no polynomial chain (best {rec.chain}, {rec.complexity})" + \
            _lines(d.diagnosis)
    else:
        beyond = rec.largest_n > rec.probe_max
        rec.solved = rec.polynomial and rec.verdict == "accept" and beyond
        if not rec.polynomial:
            rec.reason = f"no polynomial chain (best {rec.chain}, {rec.complexity})" + _lines(d.diagnosis)
        elif rec.verdict != "accept":
            rec.reason = "rejected: " + " ".join(feedback.split())[:300]
        elif not beyond:
            rec.reason = f"accepted but verified only to n = {rec.largest_n} (probes to {rec.probe_max})"
    return _saved(rec, out)


def _lines(diagnosis: list[str]) -> str:
    return ("; " + " | ".join(d.strip() for d in diagnosis[:REASON_LINES])) if diagnosis else ""


def _saved(rec: BenchRecord, out: Path) -> BenchRecord:
    path = out / "records" / f"{rec.task}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec.to_dict(), indent=1))
    tmp.replace(path)
    return rec


def load_record(out: Path, family: str, seed: int) -> BenchRecord | None:
    tid, _ = generate(family, seed)
    path = out / "records" / f"{tid}.json"
    try:
        return BenchRecord(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def summary(records: list[BenchRecord]) -> list[dict]:
    """One row per family: tasks, solved, share, mean derive and verify seconds, distinct reasons."""
    rows = []
    for name in FAMILIES:
        mine = [r for r in records if r.family == name]
        if not mine:
            continue
        solved = sum(r.solved for r in mine)
        rows.append({"family": name, "expect": FAMILIES[name].expect, "tasks": len(mine), "solved": solved,
                     "share": solved / len(mine), "chains": sorted({r.chain for r in mine if r.chain}),
                     "derive_s": sum(r.derive_s for r in mine) / len(mine),
                     "verify_s": sum(r.verify_s for r in mine) / len(mine),
                     "largest_n": max(r.largest_n for r in mine),
                     "reasons": sorted({r.reason for r in mine if r.reason and not r.solved})})
    return rows


def table(rows: list[dict]) -> str:
    """The summary as a markdown table."""
    lines = ["| family | expect | solved | chains | largest n verified | derive s | verify s |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['family']} | {r['expect']} | {r['solved']}/{r['tasks']} | {'; '.join(r['chains'])} | "
                     f"{r['largest_n']} | {r['derive_s']:.1f} | {r['verify_s']:.1f} |")
    return "\n".join(lines)
