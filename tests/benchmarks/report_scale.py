"""How the run report scales: a synthetic run of N programs, its report's size and build time, and
how long a headless Chromium takes to open it and draw every figure.

    cd tests && ../.venv/bin/python -m benchmarks.report_scale --programs 10000

The synthetic run is made of real records (Candidates, Verdicts with rungs and physics checks,
scores from ``score_of``) written through the run store's codec: 8 programs per generation, each
written by one of three models from a random earlier judged parent, with prompts, responses,
token counts, costs, latencies and negative-prompting items; 5% of proposals yield no code, 10%
are duplicates; the newest snapshot holds a real islands database of every judged program. The
journal frames are written without an fsync each (the live journal fsyncs every record), so the
run is built in seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from evaluators.verdict import (ClassCheck, Complexity, Numerical, Physics, PhysicsCheck, Rung,
                                SandboxFindings, Verdict)
from browser import chromium_missing
from evolve.config import config_from_dict
from evolve.engine.engine import STATE_SCHEMA
from evolve.report.page import page
from evolve.report.run_report import write_run_report
from evolve.store.events import DuplicateEvent, EvaluationEvent, FinishEvent, ProposalEvent, PromotionEvent, encode
from evolve.store.journal import encode_frame
from evolve.store.run_store import RunStore
from search.candidate import Candidate
from search.database import DatabaseConfig, score_of
from search.records import Evaluation, JudgedProgram
from search.strategies.islands import IslandDatabase

MODELS = ("openai/model-a", "openai/model-b", "anthropic/model-c")
PHYSICS = ("beta_zero", "spin_flip", "gauge", "convexity", "energy", "low_temperature")
ROUTES = ("transfer_matrix / chain transfer matrix", "pfaffian / pfaffian/kac-ward", "tensor_network / tensor network",
          "gauge / gauge + magnetisation sum", "closed_form / closed form", "brute_force / enumeration")
BATCH = 8
ISLANDS = 4


def _code(i: int, rng) -> str:
    extra = "".join(f"    # step {k}: accumulate the log weight of bond {k}\n    acc += {rng.normal():.6f} * 0.0\n"
                    for k in range(int(rng.integers(2, 12))))
    return (f"import math\n\n\ndef log_Z(params, n):\n    # variant {i}\n    K = abs(params['beta'] * params['J'])\n"
            f"    acc = 0.0\n{extra}    return math.log(2.0) + (n - 1) * (K + math.log1p(math.exp(-2.0 * K))) + acc\n\n\n"
            "def Z_efficient(params, n):\n    return math.exp(log_Z(params, n))\n")


def _verdict(rng, progress: float) -> Verdict:
    accepted = rng.random() < 0.15 + 0.5 * progress
    wrong_probe = not accepted and rng.random() < 0.5
    sizes = [6, 10, 14] + ([100, 1000, 10000, 100000][:int(rng.integers(0, 5))] if not wrong_probe else [])
    rungs = [Rung(n, float(rng.exponential(0.01)), float(10 ** rng.uniform(-15, -9)), True,
                  "probe" if n <= 14 else "ladder") for n in sizes]
    if wrong_probe:
        rungs[-1] = Rung(14, 0.01, float(10 ** rng.uniform(-3, 0)), False, "probe")
    largest = max((r.n for r in rungs if r.passed and r.stage == "ladder"), default=14 if not wrong_probe else 0)
    checks = [PhysicsCheck(name, bool(accepted or rng.random() < 0.8), "synthetic check detail") for name in PHYSICS]
    honest = True if accepted else bool(rng.random() < 0.7)
    consistent = True if accepted else bool(rng.random() < 0.8)
    rate = rng.choice([0.5, 1.0, 1.5, 2.0])
    return Verdict("P01", "accept" if accepted else "reject",
                   Numerical(not wrong_probe, max((r.rel_err for r in rungs)), 3, int(wrong_probe), largest, rungs),
                   Complexity("O(n)", f"polynomial, about n^{rate} (from timings over n = 100..{max(100, largest)})",
                              honest),
                   ClassCheck("transfer_matrix", consistent, [] if consistent else ["synthetic class reason"]),
                   Physics(all(c.passed for c in checks), checks), SandboxFindings(),
                   feedback="Synthetic feedback: " + " ".join(f"{c.name} {'ok' if c.passed else 'FAILED'}" for c in checks))


def synthetic_run(root: Path, programs: int, seed: int = 0) -> Path:
    """Write a finished islands run of ``programs`` proposals under ``root``; its directory."""
    cfg = config_from_dict({"task": "P01", "seed": seed, "strategy": "islands",
                            "strategies": {"islands": {"islands": ISLANDS}},
                            "budgets": {"proposals": programs, "evaluations": programs},
                            "ray": {"batch_size": BATCH}})
    store = RunStore.create(root, cfg.to_dict(), "P01", run_id=f"synthetic-{programs}-{seed}")
    path, t0 = store.path, float(store.journal.header["t"])
    store.close()
    rng = np.random.default_rng(seed)
    db = IslandDatabase(DatabaseConfig(islands=ISLANDS), seed)
    judged: list[str] = []
    codes: dict[str, str] = {}
    best = None
    records = []
    for i in range(programs):
        g, s = divmod(i, BATCH)
        pid = f"g{g:04d}s{s:02d}"
        parent = judged[int(rng.integers(max(0, len(judged) - 400), len(judged)))] if judged and i >= BATCH else None
        model = MODELS[int(rng.integers(len(MODELS)))]
        negative = tuple(f"{ROUTES[k]}: tried, rejected" for k in range(int(rng.integers(0, 7)))) if i > 50 else ()
        kind = rng.random()
        code = codes[parent] if kind < 0.10 and parent else (None if kind < 0.15 else _code(i, rng))
        response = f'{{"tractable_class": "transfer_matrix", "complexity_O": "O(n)", "code": {code!r}}}'
        prompt = ("You are given a one-dimensional Ising chain ... (synthetic prompt)\n" * 30
                  + (f"--- parent program {parent} ---\n{codes.get(parent, '')}\n" if parent else ""))
        cand = Candidate(id=pid, task="P01", code=code, tractable_class="transfer_matrix", complexity_O="O(n)",
                         confidence=0.8, proposer="llm", model=model, parent_ids=[parent] if parent else [],
                         tokens_in=int(rng.integers(1500, 4000)), tokens_out=int(rng.integers(300, 1200)),
                         cost_usd=float(rng.uniform(0.001, 0.01)), prompt=prompt, response=response,
                         latency_s=float(rng.lognormal(1.0, 0.5)),
                         parse_error=None if code is not None else "no JSON object in the answer",
                         error_kind=None if code is not None else "parse")
        t = t0 + 0.5 * i
        records.append((encode(ProposalEvent(cand, g, s, s % ISLANDS, {}, negative)), t))
        if code is None:
            continue
        if kind < 0.10 and parent:
            records.append((encode(DuplicateEvent(pid, parent)), t))
            continue
        v = _verdict(rng, i / programs)
        ev = Evaluation(pid, v, score_of(v, code), float(rng.exponential(5.0)), "synthetic:1")
        records.append((encode(EvaluationEvent(ev)), t + 0.2))
        codes[pid] = code
        judged.append(pid)
        db.add(JudgedProgram(cand, ev), s % ISLANDS)
        if ev.score[0] > 0 and (best is None or ev.score > best):
            best = ev.score
            records.append((encode(PromotionEvent(pid, ev.score)), t + 0.2))
    records.append((encode(FinishEvent("proposal budget reached")), t0 + 0.5 * programs))
    with open(path / "journal.msgpack", "ab") as fh:
        for seq, (rec, t) in enumerate(records, 1):
            fh.write(encode_frame({**rec, "seq": seq, "t": t}))
    with RunStore.open(path) as store:
        store.save_snapshot({"schema": STATE_SCHEMA, "counters": {}, "negative": {}, "seen": {}, "best": None,
                             "strategy": db.state()}, len(records))
        store.set_status("finished", proposals=programs)
    return path


def open_times(path: Path) -> tuple[float, float, list[str]]:
    """(seconds to open and draw in a fresh browser, seconds to open it again, script errors)."""
    from browser import Browser   # the benchmark runs from tests/, like the test suite

    with Browser() as b:
        cold = b.open(path)
        warm = b.open(path)
        return cold, warm, b.errors()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=10_000)
    parser.add_argument("--out", default="../runs/report-scale")
    parser.add_argument("--no-browser", action="store_true", help="skip opening the report in Chromium")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    run_dir = synthetic_run(out, args.programs)
    print(f"synthetic run of {args.programs} programs: {run_dir} "
          f"(journal {(run_dir / 'journal.msgpack').stat().st_size / 1e6:.1f} MB, built in {time.perf_counter() - t:.1f} s)")
    written = write_run_report(run_dir)
    print(f"report: {written.path}, {written.bytes / 1e6:.2f} MB ({written.contents}), built in {written.seconds:.2f} s")
    if args.no_browser:
        return 0
    reason = chromium_missing()
    if reason:
        print(f"browser: skipped ({reason})")
        return 0
    baseline = out / "baseline.html"          # the same page with no sections: plotly.js and nothing else
    baseline.write_text(page("baseline", "", [], {}), encoding="utf-8")
    base_cold, base_warm, _ = open_times(baseline)
    cold, warm, errors = open_times(written.path)
    print(f"headless Chromium, open and draw every figure: fresh browser {cold:.2f} s, again {warm:.2f} s; "
          f"baseline (plotly.js alone, {baseline.stat().st_size / 1e6:.2f} MB): {base_cold:.2f} s, {base_warm:.2f} s; "
          f"ratio {cold / base_cold:.1f}x, {warm / base_warm:.1f}x; script errors: {len(errors)}")
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
