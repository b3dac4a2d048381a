"""The sparse skew Pfaffian with independent subtrees in threads: the task split covers the
dissection tree exactly, and the threaded elimination gives the serial one's value bit for bit
(every front sees the same inputs in the same order; the fronts' logs are summed in postorder),
in float64, double-double, the cold layout and the bounded run, also where A is singular and in
a forked process or one with NUMBA_NUM_THREADS=1."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import coo_array

from evaluators.oracles.dual_pfaffian import dual_pfaffian_matrix
from evaluators.oracles.linalg.nested_dissection import THREADED_TOP_LEVELS, grouped_dissection
from evaluators.oracles.planar import planar_inputs
from evaluators.oracles.linalg.skew_pfaffian import (
    LEAF_NODES,
    PfaffianSettings,
    eliminate_fronts,
    log_abs_pfaffian,
    log_abs_pfaffian_bounded,
)
from evaluators.oracles.linalg.subtree_threads import (
    MAX_THREADS,
    THREADS_MIN_NODES,
    default_threads,
    run_tree_in_threads,
    runnable_elsewhere,
    split_tree,
)
from tasks.registry import get_task

ROOT = Path(__file__).resolve().parents[1]


def p04_matrix(L: int, beta: float, seed: int = 0):
    task = get_task("P04")
    model = task.to_model(task.probe_params(L * L, seed, 0), L * L).with_beta(beta)
    emb, K, _, _ = planar_inputs(model, "low_t")
    return dual_pfaffian_matrix(emb, K)


@pytest.mark.parametrize("split_depth", [0, 1, 2, 3, 5])
def test_split_covers_the_tree_once_and_follows_its_edges(split_depth):
    A, _, group_ptr, coords = p04_matrix(32, 1.0)
    perm, own_lo, own_hi, n_child = grouped_dissection(A.tocsr(), group_ptr, coords, LEAF_NODES)
    T = len(n_child)
    tasks = split_tree(n_child, own_lo, own_hi, split_depth)
    covered = np.zeros(T, np.int64)
    for task in tasks:
        covered[task.t_lo:task.t_hi] += 1
    assert np.all(covered == 1)
    assert tasks[-1].t_hi == T and tasks[-1].parent == -1
    assert len(tasks) == sum(2 ** d for d in range(split_depth + 1))  # a full binary top (32 x 32 is deep enough)
    # a task's root's tree children are exactly the roots of its child tasks, in postorder, and
    # the n_child blocks its first front pops are there: either inside the range or handed in
    child_count = 0
    for i, task in enumerate(tasks):
        roots = [tasks[c].t_hi - 1 for c in task.children]
        assert roots == sorted(roots)
        if task.children:
            assert task.t_lo == task.t_hi - 1 and len(roots) == n_child[task.t_hi - 1]
        for c in task.children:
            assert tasks[c].parent == i
        child_count += len(task.children)
        assert task.weight == own_hi[task.t_hi - 1] - own_lo[task.t_lo] > 0
    assert child_count == len(tasks) - 1


@pytest.mark.parametrize("beta, extended, cold", [(1.0, False, False), (3.0, False, True), (8.0, True, True),
                                                  (8.0, True, False)])
def test_threads_give_the_serial_value_bit_for_bit(beta, extended, cold):
    """P04 64 x 64 and 96 x 96 (below the size where threads are on by default, so asked for)."""
    for L in (64, 96):
        A, _, group_ptr, coords = p04_matrix(L, beta)
        stats = {}
        values = {}
        for threads in (1, 2, 3):
            stats[threads] = []
            settings = PfaffianSettings(extended=extended, even_separators=cold, threads=threads)
            values[threads] = log_abs_pfaffian(A, group_ptr, coords, settings, front_stats=stats[threads])
        assert np.isfinite(values[1])
        assert values[2] == values[1] and values[3] == values[1], (L, values)
        assert np.array_equal(stats[2][0], stats[1][0]) and np.array_equal(stats[3][0], stats[1][0])


def test_threads_give_the_bounded_run_bit_for_bit():
    A, _, group_ptr, coords = p04_matrix(48, 6.0)
    serial = log_abs_pfaffian_bounded(A, group_ptr, coords, settings=PfaffianSettings(threads=1))
    assert np.isfinite(serial[0]) and serial[1] > 0.0
    assert log_abs_pfaffian_bounded(A, group_ptr, coords, settings=PfaffianSettings(threads=2)) == serial


def test_singular_matrix_is_minus_infinity_in_threads():
    """A 40 x 40 grid with random skew weights has a nonzero Pfaffian; cut two nodes loose and it
    is zero (their rows are delayed to the root, which cannot pivot them)."""
    rng = np.random.default_rng(3)
    side = 40
    node = np.arange(side * side).reshape(side, side)
    xy = np.stack(np.divmod(np.arange(side * side), side), axis=1).astype(float)
    i = np.concatenate([node[:, :-1].ravel(), node[:-1, :].ravel()])
    j = np.concatenate([node[:, 1:].ravel(), node[1:, :].ravel()])
    v = rng.normal(size=len(i))
    for isolated, singular in (((), False), ((7, 901), True)):
        keep = ~np.isin(i, isolated) & ~np.isin(j, isolated)
        A = coo_array((np.concatenate([v[keep], -v[keep]]), (np.concatenate([i[keep], j[keep]]),
                                                            np.concatenate([j[keep], i[keep]]))),
                      shape=(side * side, side * side))
        for extended in (False, True):
            serial = log_abs_pfaffian(A, coords=xy, settings=PfaffianSettings(extended=extended, leaf_nodes=8, threads=1))
            threaded = log_abs_pfaffian(A, coords=xy,
                                        settings=PfaffianSettings(extended=extended, leaf_nodes=8, threads=2))
            assert threaded == serial
            assert (serial == -np.inf) == singular, (isolated, extended, serial)


def test_kernel_releases_the_gil_and_default_threads():
    """The threads only run on two cores if the numba kernel is compiled without the GIL."""
    assert eliminate_fronts.targetoptions.get("nogil") is True
    assert default_threads(THREADS_MIN_NODES - 1) == 1
    assert 1 <= default_threads(THREADS_MIN_NODES) <= max(1, len(os.sched_getaffinity(0)))


def test_default_threads_take_one_while_other_work_leaves_no_core_free(tmp_path):
    cores = min(len(os.sched_getaffinity(0)), MAX_THREADS)
    assert default_threads(THREADS_MIN_NODES, others=None) == cores  # load unknown: every usable core
    assert default_threads(THREADS_MIN_NODES, others=0.0) == cores
    assert default_threads(THREADS_MIN_NODES, others=cores - 0.5) == 1
    assert default_threads(THREADS_MIN_NODES - 1, others=0.0) == 1
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("3.52 3.34 4.32 4/250 12345\n")  # 4 runnable, the reader one of them
    assert runnable_elsewhere(samples=3, interval=0.0, path=str(loadavg)) == 3.0
    assert runnable_elsewhere(path=str(tmp_path / "missing")) is None
    loadavg.write_text("garbled\n")
    assert runnable_elsewhere(samples=1, path=str(loadavg)) is None


def _threaded_log_pf(L: int) -> float:
    A, _, group_ptr, coords = p04_matrix(L, 8.0)
    return log_abs_pfaffian(A, group_ptr, coords, PfaffianSettings(extended=True, even_separators=True, threads=2))


def test_threads_inside_a_forked_process_and_with_one_numba_thread():
    A, _, group_ptr, coords = p04_matrix(32, 8.0)
    serial = log_abs_pfaffian(A, group_ptr, coords, PfaffianSettings(extended=True, even_separators=True, threads=1))
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply(_threaded_log_pf, (32,)) == serial
    code = ("from tests.test_subtree_threads import _threaded_log_pf; "
            "import numba; assert numba.config.NUMBA_NUM_THREADS == 1; print(repr(_threaded_log_pf(32)))")
    env = dict(os.environ, NUMBA_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout.strip()) == serial


@pytest.mark.parametrize("even", [False, True])
def test_dissection_in_threads_gives_the_serial_tree(even):
    """The segments below the top levels bisected in threads and grafted in: the same order and
    tree as one bisection of everything (P04 64 x 64, and a leaf size that stops above the graft)."""
    A, _, group_ptr, coords = p04_matrix(64, 8.0)
    csr = A.tocsr()
    for leaf_nodes in (LEAF_NODES, 5000, A.shape[0]):
        serial = grouped_dissection(csr, group_ptr, coords, leaf_nodes, even, threads=1)
        for threads in (2, 3):
            threaded = grouped_dissection(csr, group_ptr, coords, leaf_nodes, even, threads=threads)
            for a, b in zip(serial, threaded):
                assert np.array_equal(a, b), (leaf_nodes, threads)
        if leaf_nodes == LEAF_NODES:  # deep enough that segments were grafted
            assert len(serial[1]) > 2 ** (THREADED_TOP_LEVELS + 1)


def test_tasks_run_after_their_children_and_get_their_results_in_postorder():
    A, _, group_ptr, coords = p04_matrix(32, 1.0)
    _, own_lo, own_hi, n_child = grouped_dissection(A.tocsr(), group_ptr, coords, LEAF_NODES)
    tasks = split_tree(n_child, own_lo, own_hi, 3)
    finished = set()
    lock = threading.Lock()

    alone_at = {}

    def run(t_lo, t_hi, child_results, alone):
        root = t_hi - 1
        children = [tasks[c].t_hi - 1 for c in next(t for t in tasks if t.t_hi == t_hi).children]
        assert child_results == children  # the children's own results, in postorder
        with lock:
            assert all(c in finished for c in children)
            finished.add(root)
        alone_at[root] = alone()
        return root

    assert run_tree_in_threads(tasks, run, 2) == len(n_child) - 1
    assert len(finished) == len(tasks)
    assert alone_at[len(n_child) - 1]  # the root task runs alone: nothing else is left
    assert not all(alone_at.values())  # the first leaves are submitted together


def test_an_error_in_a_task_is_raised_and_the_queued_tasks_are_dropped():
    A, _, group_ptr, coords = p04_matrix(32, 1.0)
    _, own_lo, own_hi, n_child = grouped_dissection(A.tocsr(), group_ptr, coords, LEAF_NODES)
    tasks = split_tree(n_child, own_lo, own_hi, 3)
    leaves = [i for i, task in enumerate(tasks) if not task.children]
    started = []

    def run(t_lo, t_hi, child_results, alone):
        started.append(t_hi)
        if len(started) == 1:
            raise ValueError("the first task fails")
        time.sleep(0.5)  # the others are slow: the failure is seen while they are still queued
        return None

    with pytest.raises(ValueError, match="first task fails"):
        run_tree_in_threads(tasks, run, 2)
    assert len(leaves) == 8 and len(started) <= 4
