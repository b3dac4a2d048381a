"""`evolve perf tn`: the tensor-network oracle (path search, permute kernel) against its configuration
before, in the same process (seconds, flops, ratios, and the difference in log Z between the two).

P06 (random 3-regular +-1 glass, beta = 1, one spin fixed by the global flip in both). "before": the
search scoring and stopping by the fixed executor costs of earlier rounds (``BEFORE_RATES``:
``executor_rates.DEFAULT_RATES``, a write worth 64 flops at 2e10 flops a second), and the permute
kernel of the round before (``BEFORE_PERMUTE``, ``binary_permute.GATHER``: every entry gathered
through offset tables in blocks of 2^12); "now": :mod:`evaluators.oracles.contraction.path_search` given this machine's learned rates, read once
(:mod:`evaluators.oracles.contraction.executor_rates`; the contractions of this benchmark add to the records,
so on a machine without any, "now" is the default until a later run) and
:mod:`evaluators.oracles.contraction.binary_permute` as configured. Both through
``tensor_network.contraction_tree(..., "auto", DEFAULT_MAX_WIDTH, rates, cached=False)`` and contracted by
``contract_recorded`` with the side's permute kernel
(2^24-float budget, pooled buffers, two slice threads). The search is randomised, so the trees
differ from run to run: the two configurations alternate in the order they run per seed. With
``cross_blocks``, now's tree is contracted again with the permute kernel of before
(``BEFORE_PERMUTE``): the permute kernel's ratio on one tree.
"""

from __future__ import annotations

import time
import warnings

import cotengra as ctg

from evaluators.oracles import tensor_network as tn
from evaluators.oracles.contraction import path_search as ps
from evaluators.oracles.contraction.binary_permute import GATHER, TILED, PermuteKernel
from evaluators.oracles.contraction.executor_rates import DEFAULT_RATES, ExecutorRates, learned_rates
from evaluators.oracles.contraction.log_contraction import contract_log
from tasks.registry import get_task

BEFORE_RATES = DEFAULT_RATES  # the search's executor costs before this round: the fixed default
BEFORE_PERMUTE = GATHER  # the permute kernel before: the gather in blocks of 2^12


def _timed(fn, *args, **kw):
    start = time.perf_counter()
    value = fn(*args, **kw)
    return value, time.perf_counter() - start


def _timed_cpu(fn, *args, **kw):
    """The value, wall seconds and CPU seconds of this process (all threads): on the shared cores
    here the CPU seconds vary less with the other work than the wall clock does."""
    cpu = time.process_time()
    value, wall = _timed(fn, *args, **kw)
    return value, wall, time.process_time() - cpu


def _run(net, costs: ExecutorRates, permute: PermuteKernel, row: dict, tag: str):
    row[f"{tag}_rates"] = f"{costs.combo_factor} ({costs.source})"
    tree, row[f"{tag}_path_s"] = _timed(tn.contraction_tree, net, "auto", tn.DEFAULT_MAX_WIDTH, costs, cached=False)
    row.update({f"{tag}_flops": float(tree.contraction_cost()), f"{tag}_writes": float(tree.total_write()),
                f"{tag}_slices": int(tree.nslices)})
    log_z, row[f"{tag}_contract_s"], row[f"{tag}_contract_cpu_s"] = _contract(tree, net, permute)
    row[f"{tag}_log_z"] = log_z + net.log_offset
    row[f"{tag}_total_s"] = row[f"{tag}_path_s"] + row[f"{tag}_contract_s"]
    return tree


def _contract(tree, net, permute: PermuteKernel):
    """The contraction's log (without the network's offset), wall and CPU seconds; recorded in this
    machine's executor rates only with the oracle's own kernel, as the oracle's contractions are."""
    contract = tn.contract_recorded if permute == TILED else contract_log
    return _timed_cpu(contract, tree, net.arrays, permute=permute)


def bench_tn(sizes=(100, 150, 200, 250), seeds=(0,), cross_blocks: bool = True,
             now_permute: PermuteKernel = TILED, before_permute: PermuteKernel = BEFORE_PERMUTE) -> list[dict]:
    """One row per (n, seed): the greedy path (cotengra's Rust finder), the oracle with the search
    before and now (path search and contraction timed apart; before first on even seeds, now
    first on odd ones), and with ``cross_blocks`` now's tree contracted with the permute kernel
    of before. ``now_permute`` / ``before_permute``: the two sides' permute kernels."""
    task = get_task("P06")
    warm = tn.build_network(task.to_model(task.probe_params(20, 0, 0), 20).with_beta(1.0))
    contract_log(tn.contraction_tree(warm, "greedy", 26, cached=False), warm.arrays)  # JIT warm-up
    now = learned_rates()   # this machine's, read once for every row
    rows = []
    for n in sizes:
        for seed in seeds:
            net = tn.build_network(task.to_model(task.probe_params(n, seed, 0), n).with_beta(1.0))
            shapes = [a.shape for a in net.arrays]
            row = {"n": n, "seed": seed, "now_run_bits": now_permute.run_bits}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                greedy, row["greedy_path_s"] = _timed(ctg.array_contract_tree, net.inputs, output=(), shapes=shapes,
                                                      optimize="greedy")
            row["greedy_flops"] = float(greedy.contraction_cost())
            order = [("before", BEFORE_RATES, before_permute), ("now", now, now_permute)]
            trees = {tag: _run(net, costs, permute, row, tag)
                     for tag, costs, permute in (order if seed % 2 == 0 else order[::-1])}
            row["abs_diff"] = abs(row["now_log_z"] - row["before_log_z"])
            row["old_blocks_s"] = None
            if cross_blocks:
                value, row["old_blocks_s"], row["old_blocks_cpu_s"] = _contract(trees["now"], net, before_permute)
                row["abs_diff"] = max(row["abs_diff"], abs(value + net.log_offset - row["now_log_z"]))
            rows.append(row)
    return rows


def format_tn(rows: list[dict]) -> str:
    def side(r, tag):
        return (f"{r[f'{tag}_path_s']:>6.1f} s {r[f'{tag}_flops']:>8.1e} {r[f'{tag}_slices']:>6} "
                f"{r[f'{tag}_contract_s']:>6.1f} s {r[f'{tag}_contract_cpu_s']:>6.1f} s {r[f'{tag}_total_s']:>6.1f} s")

    cols = f"{'flops':>8} {'slices':>6} {'contract':>8} {'CPU':>8} {'total':>8}"
    head = (f"{'n':>4} {'seed':>4}  {'greedy':>14}  {'before: search':>14} {cols}  {'now: search':>11} {cols}  "
            f"{'before/now':>10}  {'now: write =':>16}  {'permute before, same tree':>25}  {'|dlogZ|':>7}")
    lines = ["P06, random 3-regular +-1 glass, beta = 1; before = the search scored and stopped by the fixed "
             f"executor costs (a write worth {DEFAULT_RATES.combo_factor} flops at "
             f"{DEFAULT_RATES.flops_per_second:.0e} flops a second); now = by this machine's learned costs "
             "(evaluators/oracles/contraction/executor_rates.py; per row: a write's worth in flops and where that came from); "
             f"both stopped at {ps.SEARCH_FRACTION:g} of the best tree's predicted contraction time, permute in "
             f"runs of 2^{rows[0]['now_run_bits'] if rows else TILED.run_bits}; CPU = CPU seconds of the contraction;",
             "permute before = now's tree contracted with the permute kernel of before, wall (CPU) seconds and the "
             "ratio of CPU seconds to now's",
             head, "-" * len(head)]
    for r in rows:
        cross = "-"
        if r["old_blocks_s"] is not None:
            cross = (f"{r['old_blocks_s']:.1f} ({r['old_blocks_cpu_s']:.1f}) s "
                     f"{r['old_blocks_cpu_s'] / r['now_contract_cpu_s']:.2f}x")
        lines.append(f"{r['n']:>4} {r['seed']:>4}  {r['greedy_path_s']:>6.3f} s {r['greedy_flops']:>5.0e}  "
                     f"{'':>4}{side(r, 'before')}  {'':>1}{side(r, 'now')}  "
                     f"{r['before_total_s'] / r['now_total_s']:>9.2f}x  {r['now_rates'] + ' flops':>16}  {cross:>25}  "
                     f"{r['abs_diff']:>7.0e}")
    return "\n".join(lines)
