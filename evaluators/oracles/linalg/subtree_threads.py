"""Independent subtrees of a postordered elimination tree run in threads.

The multifrontal elimination (:mod:`evaluators.oracles.linalg.skew_pfaffian`) needs a front's children
done before the front itself, and nothing else: the subtrees under a separator are independent
until their parent. The tree is cut ``split_depth`` levels below the root: every subtree hanging
there is one task (a contiguous range of the postorder), every front above it is a task of its
own that waits for its children's tasks. A task's result (the contribution block its root hands
up) is passed to its parent's task, in the order of the postorder, so each front sees the same
inputs in the same order as in the serial run. The kernel must release the GIL (numba
``nogil=True``) for the threads to run on several cores. A running task can ask whether it is
alone (no other task submitted): the other threads then idle until it ends, so it may hand parts
of its work to helpers (the fronts near the root: :mod:`evaluators.oracles.linalg.skew_front_split`).
"""

from __future__ import annotations

import math
import os
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Callable

import numpy as np

#: below this many matrix nodes the elimination runs in one thread (P04 L = 64, 26k nodes, takes
#: 0.03-0.15 s: too little to share; L = 256, 426k nodes: 1.4-1.6x wall on two free cores)
THREADS_MIN_NODES = 50_000
#: at most this many threads (the levels above the cut run serially anyway)
MAX_THREADS = 4


def runnable_elsewhere(samples: int = 5, interval: float = 0.002, path: str = "/proc/loadavg") -> float | None:
    """Tasks runnable on the machine right now besides this thread: the 4th field of
    /proc/loadavg (running/total; the reader itself counts as one), averaged over a few samples
    (it is a snapshot). None where it cannot be read."""
    counts = []
    try:
        for i in range(samples):
            with open(path) as f:
                counts.append(int(f.read().split()[3].split("/")[0]) - 1)
            if i + 1 < samples:
                time.sleep(interval)
    except (OSError, ValueError, IndexError):
        return None
    return sum(counts) / len(counts)


def default_threads(n_nodes: int, others: float | None = -1.0) -> int:
    """Threads for an elimination of n_nodes matrix nodes: one for small matrices, else the
    cores this process may run on (its CPU affinity, at most MAX_THREADS) unless the other
    runnable tasks (:func:`runnable_elsewhere` when others is -1; None: unknown) leave less
    than about one core free: then one. Why: threads sharing a core with other work cost CPU
    and gain nothing (P04 L = 256, beta = 8, load 3.5 on 2 cores: 4.3 s wall in two threads,
    3.3 s in one); with a core free they gain (1.4-1.6x on the elimination, load 1.3-1.8)."""
    if n_nodes < THREADS_MIN_NODES:
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    cores = max(1, min(cores, MAX_THREADS))
    if cores > 1 and others == -1.0:
        others = runnable_elsewhere()
    if cores > 1 and others is not None and others >= cores - 0.5:
        return 1
    return cores


@dataclass(frozen=True)
class RangeTask:
    """Tree nodes t_lo .. t_hi - 1 (postorder; the last is the task's root), the tasks whose
    roots are its root's children (in postorder), and its parent task (-1 for the root's)."""
    t_lo: int
    t_hi: int
    children: tuple[int, ...]
    parent: int
    weight: int  # matrix nodes owned in the range: the larger tasks are started first


def split_tree(n_child: np.ndarray, own_lo: np.ndarray, own_hi: np.ndarray, split_depth: int) -> list[RangeTask]:
    """Tasks for a postordered tree (n_child[t] children, immediately before t's subtree end):
    the subtrees at depth split_depth whole, each front above them alone. Tasks are listed in
    the postorder of their roots (the last one is the tree's root)."""
    T = len(n_child)
    parent = np.full(T, -1, np.int64)
    size = np.ones(T, np.int64)
    stack: list[int] = []
    for t in range(T):
        for _ in range(n_child[t]):
            c = stack.pop()
            parent[c] = t
            size[t] += size[c]
        stack.append(t)
    depth = np.zeros(T, np.int64)
    for t in range(T - 2, -1, -1):
        depth[t] = depth[parent[t]] + 1
    roots = [t for t in range(T) if depth[t] <= split_depth]  # postorder
    task_of = {t: i for i, t in enumerate(roots)}
    children: list[list[int]] = [[] for _ in roots]
    for i, t in enumerate(roots):
        if parent[t] >= 0:
            children[task_of[int(parent[t])]].append(i)  # in postorder, as roots is
    tasks = []
    for i, t in enumerate(roots):
        t_lo = t - size[t] + 1 if depth[t] == split_depth else t
        tasks.append(RangeTask(int(t_lo), int(t + 1), tuple(children[i]), task_of.get(int(parent[t]), -1),
                               int(own_hi[t] - own_lo[t_lo])))
    return tasks


def run_tree_in_threads(tasks: list[RangeTask], run: Callable, threads: int):
    """run(t_lo, t_hi, child_results, alone) for every task, a task once its children's have
    returned, on a pool of `threads` threads; returns the root task's result. alone() tells a
    running task whether it is the only one submitted (the other threads idle until it ends)."""
    results: list = [None] * len(tasks)
    waiting = [len(task.children) for task in tasks]
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="subtree")
    running: dict = {}

    def alone() -> bool:
        return len(running) <= 1

    def submit(i):
        task = tasks[i]
        return pool.submit(run, task.t_lo, task.t_hi, [results[c] for c in task.children], alone)

    try:
        ready = sorted((i for i, task in enumerate(tasks) if not task.children), key=lambda i: -tasks[i].weight)
        running.update({submit(i): i for i in ready})
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                i = running.pop(future)
                results[i] = future.result()
                p = tasks[i].parent
                if p >= 0:
                    waiting[p] -= 1
                    if waiting[p] == 0:
                        running[submit(p)] = p
    finally:  # on an error, the queued tasks are dropped rather than run first
        pool.shutdown(wait=True, cancel_futures=True)
    return results[-1]


def split_depth_for(threads: int) -> int:
    """Levels of single fronts above the cut: enough subtrees (4 per thread) to balance them."""
    return 2 + math.ceil(math.log2(max(1, threads)))
