"""CPU seconds of the elimination oracle (``elimination_log_z``, order search included, the plan cache
cold) on stars, hubs and other sparse models with fields, a baseline git revision's oracle against
this tree's, in one process; and the registry's whole ``exact_log_z`` (every applicability test
before it) at the largest size.

    .venv/bin/python tests/benchmarks/elimination_hubs.py [--baseline REV] [--sizes 10000,30000,100000]
                                                          [--baseline-max-n 30000]

Families (beta = 1, Gaussian couplings and fields; n spins): a star; 8 hubs in a ring, each joined
to its share of the leaves; a random recursive tree; a chain with a pendant leaf on every spin; a
wheel (a hub joined to every spin of a ring); two joined hubs both joined to every other spin
(K_2,n-2 plus an edge); and, as controls that must not slow down, a 14 x 14 grid in fields (width
14-17) and a decorated 12 x 12 grid (every bond split by a spin). "growth" is this tree's seconds
over its seconds at the previous size (x10 in n: 10 is linear). The star's log Z is also checked
against its closed form sum_{s0} exp(h0 s0) prod_k 2 cosh(J_k s0 + h_k), summed in logs.

The baseline's evaluators/oracles/elimination.py and elimination_order.py are read with
``git show REV:...`` into a temporary folder and imported from there; it is run only up to
``--baseline-max-n`` (it was quadratic on hubs: 22 s for a star of 10^5 spins).
"""

from __future__ import annotations

import argparse
import importlib
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from evaluators.oracles import elimination as current  # noqa: E402
from evaluators.oracles.registry import exact_log_z  # noqa: E402
from tasks.model import IsingModel  # noqa: E402

KEEP: list = []   # the baseline's temporary folder lives as long as the process (numba reads it)


def baseline_oracle(revision: str):
    """The ``elimination`` module of git ``revision``, importing that revision's order search."""
    tmp = tempfile.TemporaryDirectory()
    KEEP.append(tmp)
    for name in ("elimination", "elimination_order"):
        text = subprocess.run(["git", "show", f"{revision}:evaluators/oracles/{name}.py"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout
        text = text.replace("from evaluators.oracles.elimination_order import",
                            "from baseline_elimination_order import")
        (Path(tmp.name) / f"baseline_{name}.py").write_text(text)
    sys.path.insert(0, tmp.name)
    return importlib.import_module("baseline_elimination")


def _model(n: int, edges, seed: int) -> IsingModel:
    rng = np.random.default_rng(seed)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    return IsingModel.from_arrays(n, 1.0, edges, rng.normal(size=len(edges)), rng.normal(size=n))


def star(n: int):
    return np.stack([np.zeros(n - 1, np.int64), np.arange(1, n)], 1)


def hubs(n: int, n_hubs: int = 8):
    ring = np.stack([np.arange(n_hubs), (np.arange(n_hubs) + 1) % n_hubs], 1)
    leaves = np.arange(n_hubs, n)
    return np.concatenate([ring, np.stack([leaves % n_hubs, leaves], 1)])


def recursive_tree(n: int, seed: int = 1):
    parent = (np.random.default_rng(seed).random(n - 1) * np.arange(1, n)).astype(np.int64)
    return np.stack([parent, np.arange(1, n)], 1)


def chain_with_pendants(n: int):
    m = n // 2
    spine = np.stack([np.arange(m - 1), np.arange(1, m)], 1)
    return np.concatenate([spine, np.stack([np.arange(m), np.arange(m, 2 * m)], 1)])


def wheel(n: int):
    rim = np.arange(1, n)
    return np.concatenate([np.stack([np.zeros(n - 1, np.int64), rim], 1), np.stack([rim, np.r_[rim[1:], 1]], 1)])


def double_hub(n: int):
    rest = np.arange(2, n)
    return np.concatenate([[[0, 1]], np.stack([np.zeros(n - 2, np.int64), rest], 1),
                           np.stack([np.ones(n - 2, np.int64), rest], 1)])


def grid(L: int):
    r, c = np.divmod(np.arange(L * L), L)
    return np.concatenate([np.stack([r * L + c, r * L + c + 1], 1)[c < L - 1],
                           np.stack([r * L + c, (r + 1) * L + c], 1)[r < L - 1]])


def decorated(L: int):
    e = grid(L)
    mid = np.arange(L * L, L * L + len(e))
    return L * L + len(e), np.concatenate([np.stack([e[:, 0], mid], 1), np.stack([mid, e[:, 1]], 1)])


FAMILIES = {"star": star, "8 hubs in a ring": hubs, "random tree": recursive_tree,
            "chain + pendants": chain_with_pendants, "wheel": wheel, "two joined hubs": double_hub}


def star_closed_form(model: IsingModel) -> float:
    """log Z of a star (hub 0) with fields: sum over the hub of prod_k 2 cosh(beta(J_k s0 + h_k))."""
    edges, J = model.couplings
    h = model.fields
    leaf = edges[:, 1]
    out = []
    for s0 in (1.0, -1.0):
        x = model.beta * (J * s0 + h[leaf])
        out.append(model.beta * h[0] * s0 + float(np.sum(np.abs(x) + np.log1p(np.exp(-2.0 * np.abs(x))))))
    return float(np.logaddexp(*out))


def timed(oracle, model: IsingModel) -> tuple[float, float]:
    """(CPU seconds, log Z): CPU time, so that other work on a shared machine counts less; the
    least of three runs on small models (a tenth of a second is noise there)."""
    best = None
    for _ in range(3 if model.n <= 2000 else 1):
        oracle._PLAN_CACHE.clear()
        start = time.process_time()
        value = oracle.elimination_log_z(model)
        best = min(best or math.inf, time.process_time() - start)
    return best, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="main")
    parser.add_argument("--sizes", default="10000,30000,100000")
    parser.add_argument("--baseline-max-n", type=int, default=30000)
    args = parser.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    base = baseline_oracle(args.baseline)
    warm = _model(8, star(8), 0)
    base.elimination_log_z(warm), current.elimination_log_z(warm)   # JIT (or the numba cache) first
    cases = [(name, n, build(n)) for name, build in FAMILIES.items() for n in sizes]
    cases += [("grid 14 x 14 (control)", 196, grid(14)), ("decorated 12 x 12 (control)", *decorated(12))]
    print(f"baseline {args.baseline}; CPU seconds of elimination_log_z, plan cache cold")
    head = f"{'model':28} {'n':>7} {'baseline s':>10} {'this tree s':>11} {'ratio':>7} {'growth':>6} {'|dlogZ|':>8}"
    print(head + "\n" + "-" * len(head))
    previous: dict = {}
    for name, n, edges in cases:
        model = _model(n, edges, seed=n)
        secs, value = timed(current, model)
        if n <= args.baseline_max_n:
            base_secs, base_value = timed(base, model)
            cells = f"{base_secs:10.3f} {secs:11.3f} {base_secs / secs:7.1f}"
            diff = abs(base_value - value)
        else:
            cells = f"{'skipped':>10} {secs:11.3f} {'-':>7}"
            diff = abs(star_closed_form(model) - value) if name == "star" else None
        growth = f"{secs / previous[name]:6.1f}" if name in previous else f"{'':6}"
        previous[name] = secs
        print(f"{name:28} {n:7d} {cells} {growth} {'-' if diff is None else format(diff, '.1e'):>8}", flush=True)
    n = sizes[-1]
    exact_log_z(_model(8, star(8), 0))                # the registry's modules imported first
    model = _model(n, star(n), seed=n)
    start, cpu = time.perf_counter(), time.process_time()
    result = exact_log_z(model)
    print(f"\nregistry exact_log_z on the star of {n} spins: method {result.method}, {result.seconds:.3f} s in it, "
          f"{time.perf_counter() - start:.3f} s wall / {time.process_time() - cpu:.3f} s CPU with the applicability "
          f"tests before it; |dlogZ| against the closed form {abs(result.log_z - star_closed_form(model)):.1e}")


if __name__ == "__main__":
    main()
