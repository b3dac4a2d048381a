"""What negative prompting does to the diversity of proposals: the same stochastic model, with and
without the block.

Run it with ``make bench-negative`` (or ``.venv/bin/python -m benchmarks.negative_diversity --seeds
0,1,2,3,4 --proposals 100`` from ``tests/``). The model is :class:`doubles.chain_routes.RouteModel`
on P01: it knows eight routes (closed form with and without logs, chain transfer matrix, message
passing, tensor network, brute force, and two wrong ones) across six method families, drawn by a
skewed prior (``--prior skewed``: its favourite family, the closed form, 65% including the wrong
periodic formula; ``--prior long-tail``: 80%, and three routes at 1% each); when a prompt carries the negative-prompting
block it avoids, with probability 0.8, the families the block names, as a model following the
instruction would. Every other setting is shared: islands (2), batches of 4, the real verifier
(one sample per probe size, the promotion ladder, no judge), ``prompts.negative.enabled`` on or
off with the block active from the first remembered approach (at most 8 items).

For each run (``proposals`` LLM calls) it counts, per 100 proposals: distinct routes (method
families, :func:`search.negative.classify_method` of the code), distinct behaviour signatures
(:func:`search.database.behaviour_signature` of the Verdicts: per-rung outcomes, verdict, growth)
and distinct programs (normalised code hash); and, because a model that knows six families shows
all of them within 100 proposals either way, how the proposals are spread: distinct routes per 20
consecutive proposals, the share of the most frequent route, and the proposals until every route
of the run had appeared. The means over seeds (with min-max) are the figures in docs/llm.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from doubles.chain_routes import PRIORS, RouteModel
from doubles.local_run import local_run
from doubles.scripted_server import Rule, ScriptedServer
from evolve.store.lineage import RunIndex
from search.database import behaviour_signature, normalised_hash
from search.negative import classify_method

KEY_ENV = "STATMECH_NEGATIVE_BENCH_KEY"


def config(server, seed: int, proposals: int, negative: bool) -> dict:
    return {"task": "P01", "seed": seed, "strategy": "islands",
            "budgets": {"proposals": proposals, "evaluations": proposals, "wall_time_s": 3600},
            "evaluator": {"samples": 1, "timeout_s": 5, "ladder": True, "rung_timeout_s": 2, "ladder_total_s": 6,
                          "judge": False},
            "proposers": {"structural": 0.0, "llm": 1.0},
            "strategies": {"islands": {"islands": 2}},
            "ray": {"batch_size": 4},
            "prompts": {"negative": {"enabled": negative, "start_after_accepted": None, "start_after_failures": None,
                                     "max_items": 8}},
            "llm": {"retries": 0, "request_timeout_s": 30,
                    "models": [{"name": "openai/routes", "api_base": server.base_url, "api_key_env": KEY_ENV}]}}


WINDOW = 20


def measure(run_path: Path) -> dict:
    """Distinct routes, behaviour signatures and programs of one run, per 100 proposals; distinct
    routes per window of 20 consecutive proposals (mean); the share of the most frequent route."""
    idx = RunIndex(run_path)
    cands = list(idx.proposals.values())
    k = len(cands)
    families = [classify_method(c.code) for c in cands if c.code]
    routes = set(families)
    windows = [families[i:i + WINDOW] for i in range(0, len(families) - WINDOW + 1, WINDOW)]
    favourite = max((families.count(f) for f in routes), default=0)
    # proposals (counting those without code) until every route of the run had appeared
    seen, to_all = set(), None
    for i, c in enumerate(cands, 1):
        if c.code:
            seen.add(classify_method(c.code))
        if to_all is None and seen == routes:
            to_all = i
    signatures = {behaviour_signature(ev.verdict) for ev in idx.evaluations.values()}
    programs = {normalised_hash(c.code) for c in cands if c.code}
    with_block = sum(bool(c.prompt_meta.get("negative")) for c in cands)
    return {"proposals": k, "routes_per_100": 100 * len(routes) / k, "signatures_per_100": 100 * len(signatures) / k,
            "programs_per_100": 100 * len(programs) / k, "prompts_with_block": with_block,
            "routes_per_window": statistics.mean(len(set(w)) for w in windows) if windows else float("nan"),
            "favourite_share": favourite / len(families) if families else 0.0, "proposals_to_all_routes": to_all,
            "accepted": sum(ev.accepted for ev in idx.evaluations.values())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--proposals", type=int, default=100)
    parser.add_argument("--prior", choices=sorted(PRIORS), default="skewed",
                        help="the model's routes unprompted: skewed (favourite family 65%%, the rarest 4%%) or "
                             "long-tail (favourite 80%%, three routes at 1%%)")
    parser.add_argument("--out", default=None, help="directory for the runs and metrics.json (default: a temp dir)")
    args = parser.parse_args(argv)
    os.environ.setdefault(KEY_ENV, "sk-negative-bench")
    seeds = [int(s) for s in args.seeds.split(",")]
    out = Path(args.out or tempfile.mkdtemp(prefix="negative-bench-"))
    rows = []
    for seed in seeds:
        for negative in (False, True):
            model = RouteModel(seed, prior=PRIORS[args.prior])
            t0 = time.perf_counter()
            with ScriptedServer([Rule(".", [], respond=model)]) as srv:
                run = local_run(config(srv, seed, args.proposals, negative), out / f"{'with' if negative else 'without'}"
                                / f"seed-{seed}")
            row = {"seed": seed, "negative": negative, **measure(run.path), "seconds": time.perf_counter() - t0}
            rows.append(row)
            print(json.dumps(row), flush=True)
    keys = ("routes_per_100", "signatures_per_100", "programs_per_100", "routes_per_window", "favourite_share",
            "proposals_to_all_routes", "prompts_with_block")
    print(f"\n| negative prompting | runs | proposals per run | routes per 100 | behaviour signatures per 100 "
          f"| distinct programs per 100 | routes per {WINDOW} consecutive | share of the favourite route "
          f"| proposals until every route appeared | prompts with the block |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for negative in (False, True):
        rs = [r for r in rows if r["negative"] is negative]
        cells = []
        for k in keys:
            values = [r[k] for r in rs]
            cells.append(f"{statistics.mean(values):.2f} ({min(values):.2f}-{max(values):.2f})")
        print(f"| {'on' if negative else 'off'} | {len(rs)} | {args.proposals} | " + " | ".join(cells) + " |")
    (out / "metrics.json").write_text(json.dumps(rows, indent=1))
    print(f"\nruns and metrics.json in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
