"""CPU seconds of the derivation's elimination solver as a program runs it (its rendered text, plain
numpy, search/derivation/solvers/elimination.py) against the exact oracle's variable elimination
(numba, evaluators/oracles/elimination.py, plan cache cold) on the same models, in one process.

    .venv/bin/python tests/benchmarks/elimination_solver.py [--sizes 10000,100000]

Families, beta = 1, Gaussian weights, a field on every spin: a random recursive tree, a star, 8 hubs
in a ring sharing the leaves, a chain with a pendant leaf on every spin (all four peeled in numpy
rounds), and, summed out step by step: an open chain, the three-spin chain J_i s_i s_i+1 s_i+2, a
ladder, a cactus of triangles and squares and a wheel. "growth" is the solver's seconds over its
seconds at the previous size (x10 in n: 10 is linear); "width" the width the view would measure;
"|dlogZ|" the difference from the oracle's log Z.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from evaluators.oracles import elimination as oracle  # noqa: E402
from search.derivation.runtime import _rt_merge  # noqa: E402
from search.derivation.solvers import SOLVERS  # noqa: E402
from search.derivation.solvers.elimination import ELIM_MAX_WIDTH  # noqa: E402
from search.derivation.view import to_ising  # noqa: E402


def _model(n: int, parts) -> dict:
    return {"n": n, "beta": 1.0, "terms": _rt_merge(parts), "rank_one": [], "log_shift": 0.0, "energy_shift": 0.0,
            "positions": None, "coords": None, "statistic": "log_z"}


def _pairs(n: int, edges, rng) -> dict:
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    return _model(n, [(np.arange(n)[:, None], rng.normal(size=n)), (edges, rng.normal(size=len(edges)))])


def tree(n, rng):
    return _pairs(n, np.stack([(rng.random(n - 1) * np.arange(1, n)).astype(np.int64), np.arange(1, n)], 1), rng)


def star(n, rng):
    return _pairs(n, np.stack([np.zeros(n - 1, np.int64), np.arange(1, n)], 1), rng)


def hubs(n, rng):
    ring = np.stack([np.arange(8), (np.arange(8) + 1) % 8], 1)
    leaves = np.arange(8, n)
    return _pairs(n, np.concatenate([ring, np.stack([leaves % 8, leaves], 1)]), rng)


def chain_with_pendants(n, rng):
    m = n // 2
    return _pairs(2 * m, np.concatenate([np.stack([np.arange(m - 1), np.arange(1, m)], 1),
                                         np.stack([np.arange(m), np.arange(m, 2 * m)], 1)]), rng)


def chain(n, rng):
    return _pairs(n, np.stack([np.arange(n - 1), np.arange(1, n)], 1), rng)


def three_spin_chain(n, rng):
    i = np.arange(n - 2)
    return _model(n, [(np.arange(n)[:, None], rng.normal(size=n)),
                      (np.stack([i, i + 1, i + 2], 1), rng.normal(size=n - 2))])


def ladder(n, rng):
    L = n // 2
    i = np.arange(L)
    return _pairs(2 * L, np.concatenate([np.stack([i[:-1], i[1:]], 1), np.stack([L + i[:-1], L + i[1:]], 1),
                                         np.stack([i, L + i], 1)]), rng)


def cactus(n, rng):
    edges, m = [], 1
    while m < n:
        a, k = int(rng.integers(m)), int(rng.integers(3, 5))
        ring = [a] + list(range(m, m + k - 1))
        edges += [(ring[j], ring[(j + 1) % k]) for j in range(k)]
        m += k - 1
    return _pairs(m, edges, rng)


def wheel(n, rng):
    rim = np.arange(1, n)
    return _pairs(n, np.concatenate([np.stack([np.zeros(n - 1, np.int64), rim], 1),
                                     np.stack([rim, np.r_[rim[1:], 1]], 1)]), rng)


FAMILIES = {"random tree": tree, "star": star, "8 hubs in a ring": hubs, "chain + pendants": chain_with_pendants,
            "chain": chain, "three-spin chain": three_spin_chain, "ladder": ladder, "cactus": cactus, "wheel": wheel}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    args = parser.parse_args()
    space: dict = {}
    exec(compile(SOLVERS["elimination"].source({}), "<elimination solver>", "exec"), space)  # noqa: S102
    solve, plan = space["_sol_elim"], space["_sol_elim_plan"]
    rng = np.random.default_rng(0)
    oracle.elimination_log_z(to_ising(star(8, rng)))            # JIT (or the numba cache) first
    head = f"{'model':18} {'n':>7} {'width':>5} {'solver s':>9} {'growth':>6} {'oracle s':>9} {'ratio':>6} {'|dlogZ|':>8}"
    print("CPU seconds; the solver as rendered into programs (numpy), the oracle numba\n" + head + "\n" + "-" * len(head))
    for name, build in FAMILIES.items():
        previous = None
        for n in (int(x) for x in args.sizes.split(",")):
            model = build(n, rng)
            width = plan(model, ELIM_MAX_WIDTH)[-1]
            start = time.process_time()
            value = solve(model, {})
            secs = time.process_time() - start
            ising = to_ising(model)
            oracle._PLAN_CACHE.clear()
            start = time.process_time()
            want = oracle.elimination_log_z(ising)
            oracle_secs = time.process_time() - start
            growth = f"{secs / previous:6.1f}" if previous else f"{'':6}"
            previous = secs
            print(f"{name:18} {model['n']:7d} {width:5d} {secs:9.3f} {growth} {oracle_secs:9.3f} "
                  f"{secs / oracle_secs:6.1f} {abs(value - want):8.1e}", flush=True)


if __name__ == "__main__":
    main()
