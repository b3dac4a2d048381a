"""ln |Pf A| of a sparse real skew-symmetric matrix that keeps its relative accuracy when the
entries span many orders of magnitude (a Kasteleyn matrix at low temperature).

Why not a sparse LU. ``det A = Pf(A)^2``, but an LU with a static fill-reducing ordering and
column partial pivoting (SuperLU) has to pivot on a small entry of a column whose large entries
were used up, and the resulting large numbers later cancel: on a 16 x 16 +-J glass at beta = 8
the error in ln Z was 6.6 (dense LAPACK LU: the same). Skew elimination with 2 x 2 pivots keeps
the zero diagonal exact; with pivots chosen by size it is far better (1e-11 on that instance),
but float64 still loses about eps * exp(3.5 beta |J|) (e.g. 3e-4 on a few percent of 12 x 12
glasses at beta = 8): the small weights exp(-2 beta |J|) enter sums whose leading orders cancel
exactly when the couplings are degenerate. Hence an extended mode in double-double arithmetic
(:mod:`evaluators.oracles.linalg.double_double`), which moves that loss 16 digits down.

The elimination is multifrontal:

- ordering: nested dissection (:mod:`evaluators.oracles.linalg.nested_dissection`) whose cuts never
  pass through a group of nodes (the weight-1 gadget units of the expanded dual);
- fronts: a separator (or leaf) owns its nodes; its dense front gathers them, the nodes its
  children could not eliminate ("delayed"), and every later node they touch; the children's
  Schur complements are added in (extend-add);
- pivots: a pair (i, j) of fully summed nodes is eliminated only if |S_ij| >= u * (largest entry
  of rows i and j in the whole front), the largest such S_ij first; nodes with no acceptable
  partner are delayed to the parent. The root front holds every remaining node, so it uses
  complete pivoting. Growth per step is bounded by 1 + 2/u; u = 0.01 (MA57's default) gave
  the same accuracy as u = 0.1 .. 0.9 with 2-4x less work (fewer delayed pivots).

The cold layout (``even_separators``, which the planar oracle sets once beta |J| > 2.3, and
``half_kernel``, on by default in double-double): when a cut leaves an odd number of a face group's nodes below a separator, one of
them keeps a weight-1 entry into the separator while its other entries are weights
exp(-2 beta |J|); the threshold test rejects it (ratio below u once beta |J| > 2.3) and it is
delayed to every front above, which grows them (P04 L = 256 at beta = 8: 118k delayed pivots,
root front 1018 against 399 at beta = 1). The dissection therefore gives such a group one more
separator node (:func:`evaluators.oracles.linalg.nested_dissection.nested_dissection`, even_remainder:
118k -> 44k delayed), and the fronts are eliminated on one triangle
(:mod:`evaluators.oracles.linalg.skew_front_half`: half the double-double arithmetic, 1.2x at beta = 8).
The running error bound keeps the plain layout and the full-storage kernel it was analysed for.

Threads: the subtrees under a separator are independent until it, so :func:`eliminate_fronts`
takes a range of the postorder and the contribution stack as input and output, runs without
the GIL, and :mod:`evaluators.oracles.linalg.subtree_threads` runs the subtrees three levels below the
root in threads and the seven fronts above them as their children finish (from 50k nodes, on
the cores the process may use; the dissection's lower levels are cut in threads too). Each
front gets the same blocks in the same order as in the serial run and the fronts' logs are
summed in postorder afterwards: the value is the serial one, bit for bit. The fronts on the path
to the root run one after another, and cold they are the largest (P04 L = 256, beta = 8 in
double-double: the root front 1030 nodes, 651 of them delayed from below; the nine fronts of
700 nodes and more about a third of the elimination's CPU time), so a front that runs while no
other task does shares its large dense updates with helper threads
(:mod:`evaluators.oracles.linalg.skew_front_split`, the same front bit for bit).

Measured (P04, ``evolve perf planar``; docs/performance.md for the table and the load): L = 64 0.03-0.05 s
CPU in float64, 0.1 s in double-double; L = 256 0.8 s in float64 at beta = 1, 2.1-2.5 s colder,
and about 5-6 s CPU in double-double at beta = 5 .. 8.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numba import njit

from evaluators.oracles.linalg.front_stack import assemble_front, grown_stack, push_block, stack_of, top_block
from evaluators.oracles.linalg.nested_dissection import grouped_dissection
from evaluators.oracles.linalg.skew_front import UNIT_ROUNDOFF, UNIT_ROUNDOFF_DD, eliminate_front
from evaluators.oracles.linalg.skew_front_half import eliminate_front_half
from evaluators.oracles.linalg.skew_front_split import FrontHelpers, eliminate_front_half_split
from evaluators.oracles.linalg.subtree_threads import default_threads, run_tree_in_threads, split_depth_for, split_tree

PIVOT_THRESHOLD = 0.01
LEAF_NODES = 48


@dataclass(frozen=True)
class PfaffianSettings:
    """How :func:`log_abs_pfaffian` eliminates. Only ``extended`` and ``u`` change the value's
    accuracy; the rest change how fast it comes, never the value beyond rounding (``threads`` not at all).

    extended: double-double arithmetic (about 10x slower, 16 more digits).
    u: the pivot threshold: a pair (i, j) is eliminated only if |S_ij| >= u x the largest entry of
    rows i and j in the front (module doc).
    leaf_nodes: the nested dissection stops at pieces of at most this many nodes.
    even_separators: separators that leave every cut group an even remainder (cold Kasteleyn
    matrices, module doc).
    half_kernel: fronts eliminated on one triangle (:mod:`evaluators.oracles.linalg.skew_front_half`;
    None: in double-double, where it halves the arithmetic; in float64 it is no faster).
    threads: subtrees eliminated concurrently (None: :func:`default_threads`, i.e. one thread below
    50k nodes or while other work leaves no core free, else the usable cores up to 4).
    """

    extended: bool = False
    u: float = PIVOT_THRESHOLD
    leaf_nodes: int = LEAF_NODES
    even_separators: bool = False
    half_kernel: bool | None = None
    threads: int | None = None

    @property
    def half(self) -> bool:
        """Whether fronts are eliminated on one triangle."""
        return self.extended if self.half_kernel is None else self.half_kernel

    def threads_for(self, n_nodes: int) -> int:
        return default_threads(n_nodes) if self.threads is None else int(self.threads)

    @property
    def plain(self) -> "PfaffianSettings":
        """The layout and kernel the running error bound was analysed for (no even separators,
        full storage)."""
        return replace(self, even_separators=False, half_kernel=False)


@dataclass(frozen=True)
class SkewSystem:
    """A sparse skew matrix in CSR rows (``indptr``, ``nbr``, ``val``) with the postordered
    dissection tree its elimination follows (``perm``, ``own_lo``, ``own_hi``, ``n_child``:
    :func:`evaluators.oracles.linalg.nested_dissection.grouped_dissection`): the leading arguments
    of the numba kernels (:attr:`kernel_args`), bundled for their Python callers."""

    indptr: np.ndarray
    nbr: np.ndarray
    val: np.ndarray
    perm: np.ndarray
    own_lo: np.ndarray
    own_hi: np.ndarray
    n_child: np.ndarray

    @classmethod
    def of(cls, A, group_ptr: np.ndarray | None, coords: np.ndarray | None, settings: "PfaffianSettings",
           threads: int) -> "SkewSystem":
        """The matrix A (scipy sparse, skew) and its dissection by ``settings`` (leaf_nodes,
        even_separators); group_ptr and coords as in :func:`log_abs_pfaffian`."""
        csr = A.tocsr()
        csr.sum_duplicates()
        N = csr.shape[0]
        group_ptr = np.arange(N + 1) if group_ptr is None else np.asarray(group_ptr, dtype=np.int64)
        perm, own_lo, own_hi, n_child = grouped_dissection(csr, group_ptr, coords, settings.leaf_nodes,
                                                           settings.even_separators, threads)
        return cls(csr.indptr.astype(np.int64), csr.indices.astype(np.int64), csr.data.astype(np.float64),
                   perm, own_lo, own_hi, n_child)

    @property
    def fronts(self) -> int:
        """Tree nodes (fronts) of the dissection."""
        return self.own_lo.shape[0]

    @property
    def kernel_args(self) -> tuple:
        """(indptr, nbr, val, perm, own_lo, own_hi, n_child): the kernels' first arguments."""
        return (self.indptr, self.nbr, self.val, self.perm, self.own_lo, self.own_hi, self.n_child)


@njit(cache=True, nogil=True)
def eliminate_fronts(indptr, nbr, val, perm, own_lo, own_hi, n_child, owner, t_lo, t_hi, stack, u, ext, track,
                     half, front_logs, front_errs, front_stats, pairs):
    """Eliminate the fronts of tree nodes t_lo .. t_hi - 1 of the postordered dissection tree
    (perm, own_lo, own_hi, n_child; owner[v] = tree node owning matrix node v) of the skew
    matrix A in CSR rows (nbr, val). stack (:func:`evaluators.oracles.linalg.front_stack.empty_stack`)
    holds, on top, the contribution blocks of the children of the range's first fronts that lie
    outside it; each front pops its children's blocks and pushes its own. Returns (the stack after the range,
    singular). Writes front_logs[t] = sum of ln |pivot| of front t and front_errs[t] its error
    bound (track: a running error analysis, else 0; the entries of A are taken as exact);
    front_stats[t] = (front size, fully summed, left over) when it has a row per tree node.
    pairs = (partner, pivot_hi, pivot_lo): when partner has a row per matrix node, each front's
    pivot pairs are recorded in them (:func:`record_pairs`; the signed Pfaffian of
    :mod:`evaluators.oracles.linalg.skew_signed`), else (:func:`no_pairs`) nothing is.
    ext: double-double arithmetic; half (without track): fronts eliminated on one triangle.
    singular: the root front (t = T - 1) could not eliminate everything (no acceptable pivot).

    Disjoint subtrees touch disjoint rows of the output arrays and only read the rest, and
    the function runs without the GIL, so independent subtrees can run in threads."""
    eps = UNIT_ROUNDOFF_DD if ext else UNIT_ROUNDOFF
    N = perm.shape[0]
    T = own_lo.shape[0]
    stack = grown_stack(stack, t_hi - t_lo)
    pos = np.full(N, -1, np.int64)
    idx = np.empty(N, np.int64)
    for t in range(t_lo, t_hi):
        H, L, B, f, k, stack = assemble_front(indptr, nbr, val, perm, own_lo, own_hi, n_child, owner, t, stack, ext,
                                              track, eps, pos, idx)
        if half and not track:
            lp, n, loc = eliminate_front_half(H, L, ext, k, u if f > k else 0.0)
            e = 0.0
        else:
            lp, n, loc, e = eliminate_front(H, L, ext, B, track, k, u if f > k else 0.0)
        front_logs[t] = lp
        front_errs[t] = e
        if pairs[0].shape[0] == N:
            record_pairs(H, L, ext, f, n, loc, idx, pairs)
        if n > 0 and t == T - 1:  # the root could not eliminate everything: A is singular
            return stack, True
        stack, nd = push_block(stack, H, L, B, n, loc, k, idx, f, pos, ext, track)
        if front_stats.shape[0] == T:
            front_stats[t, 0], front_stats[t, 1], front_stats[t, 2] = f, k, nd
    return stack, False


@njit(cache=True, nogil=True)
def record_pairs(H, L, ext, f, na, loc, idx, pairs):
    """After a front's elimination: pair (r, r - 1) of front positions, r = f - 1, f - 3, ..., na + 1,
    is the pivot (p, q) = (node idx[loc[r]], node idx[loc[r - 1]]) with value H[r, r - 1] (+ L[r, r - 1]
    in double-double): the front kernels leave each eliminated pair there (later swaps touch only the
    positions below it). Writes partner[p] = q, partner[q] = -1 - p (q is second) and the pivot at p,
    (partner, pivot_hi, pivot_lo) = pairs."""
    partner, pivot_hi, pivot_lo = pairs
    for r in range(f - 1, na, -2):
        p = idx[loc[r]]
        q = idx[loc[r - 1]]
        partner[p] = q
        partner[q] = -1 - p
        pivot_hi[p] = H[r, r - 1]
        pivot_lo[p] = L[r, r - 1] if ext else 0.0


def no_pairs() -> tuple:
    """The ``pairs`` argument of :func:`eliminate_fronts` that records nothing."""
    return np.zeros(0, np.int64), np.zeros(0), np.zeros(0)


@njit(cache=True)
def front_owner(perm, own_lo, own_hi):
    """owner[v]: the tree node whose front owns matrix node v."""
    owner = np.empty(perm.shape[0], np.int64)
    for t in range(own_lo.shape[0]):
        for i in range(own_lo[t], own_hi[t]):
            owner[perm[i]] = t
    return owner


@njit(cache=True)
def sum_front_logs(front_logs, front_errs):
    """(Kahan-compensated sum of the fronts' ln |pivots| in postorder, sum of their error bounds):
    the order of the serial elimination, whatever order the fronts ran in."""
    total = 0.0
    comp = 0.0
    err = 0.0
    for t in range(front_logs.shape[0]):
        y = front_logs[t] - comp
        tt = total + y
        comp = (tt - total) - y
        total = tt
        err += front_errs[t]
    return total, err


def multifrontal_log_pf(system: SkewSystem, settings: PfaffianSettings, threads: int, track: bool = False,
                        front_stats: np.ndarray | None = None, share_fronts: bool = False,
                        pairs: tuple | None = None) -> tuple[float, float]:
    """(ln |Pf A|, error bound) for the skew matrix and dissection tree of ``system``, eliminated by
    :func:`eliminate_fronts` as ``settings`` say (track: the running error analysis, on the plain
    layout); with threads > 1 the subtrees below the top levels of the tree run concurrently
    (:mod:`evaluators.oracles.linalg.subtree_threads`), and with share_fronts a front running alone
    shares its dense updates with helper threads (:mod:`evaluators.oracles.linalg.skew_front_split`;
    off in the oracle, which measured it slower: ``evolve perf planar`` compares). Every front gets
    the same inputs in the same order either way, and the fronts' logs are summed in postorder
    afterwards, so the result does not depend on threads. front_stats: an array of one row per front
    receives (front size, fully summed, left over); pairs: (partner, pivot_hi, pivot_lo), one row
    per matrix node, receive the pivot pairs (:func:`record_pairs`). (-inf, inf) when A is
    (numerically) singular."""
    T = system.fronts
    pairs = no_pairs() if pairs is None else pairs
    u, ext, half = float(settings.u), bool(settings.extended), settings.half and not track
    front_stats = np.zeros((0, 3), np.int64) if front_stats is None else front_stats
    owner = front_owner(system.perm, system.own_lo, system.own_hi)
    front_logs = np.zeros(T)
    front_errs = np.zeros(T)

    def run(t_lo: int, t_hi: int, child_blocks: list, alone=None):
        """The block the range's last front hands up; None when that front is the root and
        found A singular. A single front shares its large dense updates with the helpers while
        alone() (no other task running)."""
        stack = stack_of(child_blocks, ext, track)
        if helpers is not None and t_hi == t_lo + 1 and half:
            stack, singular = _shared_front(system, owner, t_lo, stack, u, ext, front_logs, front_stats, pairs,
                                            helpers, alone)
        else:
            stack, singular = eliminate_fronts(*system.kernel_args, owner, t_lo, t_hi, stack, u, ext, track, half,
                                               front_logs, front_errs, front_stats, pairs)
        return None if singular else top_block(stack)

    helpers = FrontHelpers(threads - 1) if threads > 1 and share_fronts else None
    try:
        if threads > 1:
            tasks = split_tree(system.n_child, system.own_lo, system.own_hi, split_depth_for(threads))
            root_block = run_tree_in_threads(tasks, run, threads)
        else:
            root_block = run(0, T, [])
    finally:
        if helpers is not None:
            helpers.close()
    if root_block is None:
        return -np.inf, np.inf
    return sum_front_logs(front_logs, front_errs)


def _shared_front(system: SkewSystem, owner, t, stack, u, ext, front_logs, front_stats, pairs, helpers: FrontHelpers,
                  alone):
    """:func:`eliminate_fronts` for the single front t (one-triangle kernel, no bound), its dense
    updates shared with the helpers while alone() (:mod:`evaluators.oracles.linalg.skew_front_split`);
    the same front, bit for bit. Returns (stack, singular)."""
    N = system.perm.shape[0]
    T = system.fronts
    stack = grown_stack(stack, 1)
    pos = np.full(N, -1, np.int64)
    idx = np.empty(N, np.int64)
    eps = UNIT_ROUNDOFF_DD if ext else UNIT_ROUNDOFF
    H, L, B, f, k, stack = assemble_front(*system.kernel_args, owner, t, stack, ext, False, eps, pos, idx)
    front_logs[t], n, loc = eliminate_front_half_split(H, L, ext, k, u if f > k else 0.0, helpers, alone)
    if pairs[0].shape[0] == N:
        record_pairs(H, L, ext, f, n, loc, idx, pairs)
    if n > 0 and t == T - 1:
        return stack, True
    stack, nd = push_block(stack, H, L, B, n, loc, k, idx, f, pos, ext, False)
    if front_stats.shape[0] == T:
        front_stats[t] = (f, k, nd)
    return stack, False


def log_abs_pfaffian(A, group_ptr: np.ndarray | None = None, coords: np.ndarray | None = None,
                     settings: PfaffianSettings = PfaffianSettings(), front_stats: list | None = None) -> float:
    """ln |Pf A| of a sparse real skew-symmetric matrix (scipy sparse), eliminated as ``settings``
    say (:class:`PfaffianSettings`).

    group_ptr: nodes come in contiguous groups group_ptr[g]:group_ptr[g+1] that the dissection
    keeps together (default: single nodes); coords: one (x, y) per group to steer the dissection
    (BFS distances when None). front_stats: a list that receives an array of (front size, fully
    summed nodes, delayed nodes) per front. Returns -inf when A is singular.
    """
    return _log_abs_pfaffian(A, group_ptr, coords, settings, False, front_stats)[0]


def log_abs_pfaffian_bounded(A, group_ptr: np.ndarray | None = None, coords: np.ndarray | None = None,
                             settings: PfaffianSettings = PfaffianSettings()) -> tuple[float, float]:
    """(ln |Pf A|, a bound on its absolute error) by the same elimination with a running error
    analysis (Wilkinson): every entry carries a bound on its error, propagated through each
    update with the rounding of each operation (unit roundoff 2^-53, or 2^-102 in double-double)
    and an absolute allowance for results below the normal range; the bound on ln |Pf| is the
    sum over pivots of |error| / |pivot| (first order). About twice the work of the plain run.
    ``settings`` as for :func:`log_abs_pfaffian`, on the plain layout and kernel the bound was
    analysed for (:attr:`PfaffianSettings.plain`). (-inf, inf) when A is (numerically) singular."""
    value, bound = _log_abs_pfaffian(A, group_ptr, coords, settings.plain, True, None)
    return value, bound + 4.0 * UNIT_ROUNDOFF * abs(value)


def _log_abs_pfaffian(A, group_ptr, coords, settings: PfaffianSettings, track: bool, front_stats: list | None):
    N = A.shape[0]
    if N == 0:
        return 0.0, 0.0
    if N % 2 == 1:
        return -np.inf, np.inf
    threads = settings.threads_for(N)
    system = SkewSystem.of(A, group_ptr, coords, settings, threads)
    stats = np.zeros((system.fronts if front_stats is not None else 0, 3), np.int64)
    value, bound = multifrontal_log_pf(system, settings, threads, track, stats)
    if front_stats is not None:
        front_stats.append(stats)
    return float(value), float(bound)
