"""The planar-code decoder (evaluators/decoding/planar_code.py) against its independent references,
printed as a table: the worst |log P(a, S) - reference| over both classes and a few syndromes drawn
at p = 0.15, per reference, size and p, with the decoder's CPU milliseconds per class.

    .venv/bin/python tests/benchmarks/planar_decoder_check.py [--sizes 3,4,5,8,16,32] [--syndromes 2]

References: enumeration of every error (ConstrainedSum.log_value, L = 3), the constrained sum
eliminated with its conditions (L <= 5) and the planar Pfaffian oracle on T21's face-dual model
(L >= 4; at L = 32 and p = 1e-12 it runs its certified cold elimination, minutes per value)."""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from evaluators.decoding.planar_code import class_log_probability
from evaluators.decoding.sampling import draw_errors, syndromes
from evaluators.oracles.constrained_sum import constrained_log_value
from evaluators.oracles.planar import planar_log_z
from tasks.catalog.t21_surface_code import TASK as T21
from tasks.formula_reader import compile_reader

PS = (1e-12, 1e-3, 0.05, 0.1092, 0.2, 0.4999, 0.5)


def references(L: int):
    if L == 3:
        yield "enumeration", lambda params: T21.formula.log_value(params, L * L)
    if L <= 5:
        read = compile_reader(T21.formula).load()
        yield "elimination", lambda params: constrained_log_value(read(params, L * L))
    if L >= 4:
        yield "planar_oracle", lambda params: planar_log_z(T21.to_model(params, L * L))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="3,4,5,8,16,32")
    parser.add_argument("--syndromes", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print(f"{'reference':<14} {'L':>3} {'p':>8} {'worst |diff|':>13} {'decoder ms':>11} {'ref s':>8}")
    overall = 0.0
    for L in (int(x) for x in args.sizes.split(",")):
        rng = np.random.default_rng([args.seed, L])
        syn = syndromes(L, draw_errors(rng, L, 0.15, args.syndromes))
        for name, ref_fn in references(L):
            for p in PS:
                worst, dec_s, ref_s, calls = 0.0, 0.0, 0.0, 0
                for S in syn:
                    for a in (0, 1):
                        params = {"p": p, "syndrome": S.tolist(), "cls": a}
                        t0 = time.perf_counter()
                        ref = ref_fn(params)
                        ref_s += time.perf_counter() - t0
                        t1 = time.process_time()
                        got = class_log_probability(L, p, S, a)
                        dec_s += time.process_time() - t1
                        worst = max(worst, abs(got - ref))
                        calls += 1
                overall = max(overall, worst)
                print(f"{name:<14} {L:>3} {p:>8.4g} {worst:>13.2e} {1e3 * dec_s / calls:>11.3f} {ref_s / calls:>8.2f}",
                      flush=True)
    print(f"worst disagreement overall: {overall:.2e}")


if __name__ == "__main__":
    main()
