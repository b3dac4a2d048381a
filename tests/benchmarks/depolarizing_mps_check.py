"""The depolarizing planar-code decoder (evaluators/decoding/depolarizing_planar.py): its error against
chi, printed as tables, and the paired comparison of two threshold runs at different chi.

    .venv/bin/python tests/benchmarks/depolarizing_mps_check.py [--sizes 3,4,5,6] [--syndromes 4]
    .venv/bin/python tests/benchmarks/depolarizing_mps_check.py --pair RUN_DIR_CHI RUN_DIR_2CHI

Table: per (L, p), the worst |log P(a, S) - reference| over the syndromes (drawn at p = 0.19) and
the four classes, at each chi, and the worst |max_a P(a | S) - reference| (what the decoder and the
Nishimori estimator use); the reference is the coset enumeration at L <= 4 and the uncut contraction
(chi = 2^(L-1)) beyond. Then the CPU milliseconds per sample (four classes) at each chi.

--pair: the batches two runs share (the same seed, so the same errors at each (L, p, index)): the share
of samples whose ML class differs, the largest change of max_a P(a | S), and the Nishimori estimator's
paired mean difference with its standard error, per L."""

from __future__ import annotations

import argparse
import math
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from evaluators.decoding import depolarizing_planar as dp

PS = (1e-12, 1e-6, 0.05, 0.15, 0.189, 0.3)
CHIS = (1, 2, 4, 8, 16)


def posterior_max(log_p: np.ndarray) -> np.ndarray:
    top = log_p.max(axis=1, keepdims=True)
    return 1.0 / np.exp(log_p - top).sum(axis=1)


def table(sizes, count: int) -> None:
    print("| L | p | reference | " + " | ".join(f"chi = {c}" for c in CHIS) + " | max_a P(a|S), chi = 8 |")
    print("|---" * (4 + len(CHIS)) + "|")
    costs = defaultdict(dict)
    for L in sizes:
        rng = np.random.default_rng([7, L])
        x, z = dp.draw(rng, L, 0.19, count)
        syn = dp.syndromes(L, x, z)
        for p in PS:
            if L <= dp.ENUMERATION_MAX_L:
                ref = np.array([[dp.exact_class_log_probability(L, p, s, c) for c in range(4)] for s in syn])
                how = "coset enumeration"
            else:
                ref = dp.class_log_probabilities(L, p, syn, None)
                how = f"uncut (chi = {2 ** (L - 1)})"
            cells = []
            for chi in CHIS:
                started = time.process_time()
                got = dp.class_log_probabilities(L, p, syn, chi)
                costs[L][chi] = 1e3 * (time.process_time() - started) / count
                finite = np.isfinite(ref)
                err = np.abs(got - ref)[finite]
                cells.append(f"{err.max():.1e}" if np.all(np.isfinite(err)) else "inf")
                if chi == 8:
                    post = np.abs(posterior_max(got) - posterior_max(ref)).max()
            print(f"| {L} | {p:g} | {how} | " + " | ".join(cells) + f" | {post:.1e} |", flush=True)
    print()
    print("CPU ms per sample (four classes): " + "; ".join(
        f"L = {L}: " + ", ".join(f"chi {c} {ms:.2f}" for c, ms in costs[L].items()) for L in costs))


def pair(small: Path, large: Path) -> None:
    from evolve.store.journal import read_journal
    from evolve.threshold.records import BatchResult

    def batches(d: Path):
        j = read_journal(d / "journal.msgpack")
        return j.header["settings"], {(r["L"], r["p"], r["index"]): BatchResult.from_record(r)
                                      for r in j.records if r.get("kind") == "batch"}

    s1, b1 = batches(small)
    s2, b2 = batches(large)
    if s1["seed"] != s2["seed"] or s1["batch"] != s2["batch"]:
        raise SystemExit("the two runs do not share their samples (seed or batch size differ)")
    by = defaultdict(lambda: [0, 0, 0.0, [], []])
    for key in sorted(set(b1) & set(b2)):
        r1, r2 = b1[key], b2[key]
        assert np.array_equal(r1.true_class, r2.true_class)
        row = by[key[0]]
        row[0] += r1.size
        row[1] += int(np.sum(r1.log_p.argmax(1) != r2.log_p.argmax(1)))
        m1, m2 = posterior_max(r1.log_p), posterior_max(r2.log_p)
        row[2] = max(row[2], float(np.abs(m1 - m2).max()))
        row[3].append(m1 - m2)
        row[4].append(r1.log_p.argmax(1) == r1.true_class)
    print(f"chi = {s1['chi']} against chi = {s2['chi']}, the samples both runs decoded:")
    print("| L | samples | ML class differs | max change of max_a P(a|S) | Nishimori mean, chi - 2 chi (+- s.e.) |")
    print("|---|---|---|---|---|")
    for L, (n, differ, worst, diffs, _) in sorted(by.items()):
        d = np.concatenate(diffs)
        print(f"| {L} | {n} | {differ} ({100 * differ / n:.2f}%) | {worst:.1e} | "
              f"{d.mean():+.1e} +- {d.std(ddof=1) / math.sqrt(len(d)):.1e} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="3,4,5,6")
    ap.add_argument("--syndromes", type=int, default=4)
    ap.add_argument("--pair", nargs=2, type=Path, metavar="RUN_DIR")
    args = ap.parse_args()
    if args.pair:
        pair(*args.pair)
        return
    table([int(x) for x in args.sizes.split(",")], args.syndromes)


if __name__ == "__main__":
    main()
