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
(:mod:`evaluators.oracles.double_double`), which moves that loss 16 digits down.

The elimination is multifrontal:

- ordering: nested dissection (:mod:`evaluators.oracles.nested_dissection`) whose cuts never
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
separator node (:func:`evaluators.oracles.nested_dissection.nested_dissection`, even_remainder:
118k -> 44k delayed), and the fronts are eliminated on one triangle
(:mod:`evaluators.oracles.skew_front_half`: half the double-double arithmetic, 1.2x at beta = 8).
The running error bound keeps the plain layout and the full-storage kernel it was analysed for.

Threads: the subtrees under a separator are independent until it, so :func:`eliminate_fronts`
takes a range of the postorder and the contribution stack as input and output, runs without
the GIL, and :mod:`evaluators.oracles.subtree_threads` runs the subtrees three levels below the
root in threads and the seven fronts above them as their children finish (from 50k nodes, on
the cores the process may use; the dissection's lower levels are cut in threads too). Each
front gets the same blocks in the same order as in the serial run and the fronts' logs are
summed in postorder afterwards: the value is the serial one, bit for bit. What the threads
cannot share: the fronts on the path to the root run one after another, and cold they are the
largest (P04 L = 256, beta = 8 in double-double: the root front 1030 nodes, 651 of them delayed
from below, 0.42 s; its larger child 1004 nodes, 0.6 s; the top seven fronts a third of the
elimination's 7 s of thread time, the eight subtrees two thirds).

Measured (P04, ``evolve perf planar``; README for the table): L = 64 0.03-0.05 s CPU in float64,
0.1 s in double-double; L = 256 0.8 s in float64 at beta = 1, 2.1-2.5 s colder, and 5.4-6 s CPU
in double-double at beta = 5 .. 8; at beta = 8 5.4-5.9 s wall in one thread, 3.7-3.8 s in two
(load average 1.3-1.8 on the 2 cores; the work grows about 10% when both threads run, and with
another process on a core the threads gain little or nothing).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from evaluators.oracles.double_double import dd_add
from evaluators.oracles.nested_dissection import grouped_dissection
from evaluators.oracles.skew_front import UNIT_ROUNDOFF, UNIT_ROUNDOFF_DD, eliminate_front
from evaluators.oracles.skew_front_half import eliminate_front_half
from evaluators.oracles.skew_front_split import FrontHelpers, eliminate_front_half_split
from evaluators.oracles.subtree_threads import default_threads, run_tree_in_threads, split_depth_for, split_tree

PIVOT_THRESHOLD = 0.01
LEAF_NODES = 48


@njit(cache=True)
def _grow(a, need):
    if need <= a.shape[0]:
        return a
    b = np.empty(2 * need, a.dtype)
    b[: a.shape[0]] = a
    return b


def empty_stack(ext: bool, track: bool):
    """A contribution stack with no block: (hi, lo, bound, node ids, and per block: offset of its
    values, offset of its ids, size n, delayed count nd; number of blocks). Block c holds an
    n x n dense Schur complement (row-major at hi[b_v[c]:], lo / bound alike when ext / track)
    over the nodes s_idx[b_i[c]:b_i[c] + n], the nd delayed (fully summed) ones first."""
    return (np.empty(1 << 16), np.empty(1 << 16 if ext else 0), np.empty(1 << 16 if track else 0),
            np.empty(1 << 12, np.int64), np.empty(8, np.int64), np.empty(8, np.int64), np.empty(8, np.int64),
            np.empty(8, np.int64), 0)


@njit(cache=True, nogil=True)
def assemble_front(indptr, nbr, val, perm, own_lo, own_hi, n_child, owner, t, stack, ext, track, eps, pos, idx):
    """Front t's dense matrix from its own rows of A and its children's blocks on top of the
    stack (popped). Returns (H, L, B, f, k, stack without the children's blocks): f positions,
    idx[:f] their matrix nodes (pos[idx[a]] = a), the first k fully summed (own, then delayed)."""
    s_hi, s_lo, s_bd, s_idx, b_v, b_i, b_n, b_nd, nb = stack
    first = nb - n_child[t]
    f = 0
    for i in range(own_lo[t], own_hi[t]):
        pos[perm[i]] = f
        idx[f] = perm[i]
        f += 1
    for c in range(first, nb):
        for a in range(b_nd[c]):
            v = s_idx[b_i[c] + a]
            pos[v] = f
            idx[f] = v
            f += 1
    k = f
    for c in range(first, nb):
        for a in range(b_nd[c], b_n[c]):
            v = s_idx[b_i[c] + a]
            if pos[v] < 0:
                pos[v] = f
                idx[f] = v
                f += 1
    for i in range(own_lo[t], own_hi[t]):
        for q in range(indptr[perm[i]], indptr[perm[i] + 1]):
            w = nbr[q]
            if owner[w] > t and pos[w] < 0:
                pos[w] = f
                idx[f] = w
                f += 1
    H = np.zeros((f, f))
    L = np.zeros((f, f) if ext else (1, 1))
    B = np.zeros((f, f) if track else (1, 1))
    for i in range(own_lo[t], own_hi[t]):
        pv = pos[perm[i]]
        for q in range(indptr[perm[i]], indptr[perm[i] + 1]):
            w = nbr[q]
            if owner[w] == t:  # the entries of A are exact (its bound starts at 0)
                H[pv, pos[w]] += val[q]
            elif owner[w] > t:  # w's own row is never assembled here: mirror the entry
                H[pv, pos[w]] += val[q]
                H[pos[w], pv] -= val[q]
    for c in range(first, nb):
        n = b_n[c]
        for a in range(n):
            pa = pos[s_idx[b_i[c] + a]]
            for b in range(n):
                pb = pos[s_idx[b_i[c] + b]]
                o = b_v[c] + a * n + b
                if ext:
                    H[pa, pb], L[pa, pb] = dd_add(H[pa, pb], L[pa, pb], s_hi[o], s_lo[o])
                else:
                    H[pa, pb] += s_hi[o]
                if track:
                    B[pa, pb] += s_bd[o] + eps * abs(H[pa, pb])
    return H, L, B, f, k, (s_hi, s_lo, s_bd, s_idx, b_v, b_i, b_n, b_nd, first)  # children popped; storage reused


@njit(cache=True, nogil=True)
def push_block(stack, H, L, B, n, loc, k, idx, f, pos, ext, track):
    """Push the n x n block H[:n, :n] (+ L, B) left of a front (loc[:n] its positions in the
    front; the delayed ones, loc < k, first) onto the stack, and clear pos of the front's nodes."""
    s_hi, s_lo, s_bd, s_idx, b_v, b_i, b_n, b_nd, nb = stack
    vtop = b_v[nb - 1] + b_n[nb - 1] ** 2 if nb > 0 else 0
    itop = b_i[nb - 1] + b_n[nb - 1] if nb > 0 else 0
    s_hi = _grow(s_hi, vtop + n * n)
    if ext:
        s_lo = _grow(s_lo, vtop + n * n)
    if track:
        s_bd = _grow(s_bd, vtop + n * n)
    s_idx = _grow(s_idx, itop + n)
    order = np.argsort(loc[:n] >= k, kind="mergesort")  # delayed (fully summed) first
    nd = 0
    for a in range(n):
        pa = order[a]
        nd += loc[pa] < k
        s_idx[itop + a] = idx[loc[pa]]
        for b in range(n):
            s_hi[vtop + a * n + b] = H[pa, order[b]]
            if track:
                s_bd[vtop + a * n + b] = B[pa, order[b]]
            if ext:
                s_lo[vtop + a * n + b] = L[pa, order[b]]
    b_v[nb], b_i[nb], b_n[nb], b_nd[nb] = vtop, itop, n, nd
    for a in range(f):
        pos[idx[a]] = -1
    return (s_hi, s_lo, s_bd, s_idx, b_v, b_i, b_n, b_nd, nb + 1), nd


@njit(cache=True)
def grown_stack(stack, fronts):
    """The stack with room for the blocks of `fronts` more fronts."""
    s_hi, s_lo, s_bd, s_idx, b_v, b_i, b_n, b_nd, nb = stack
    need = nb + fronts + 1
    return (s_hi, s_lo, s_bd, s_idx, _grow(b_v, need), _grow(b_i, need), _grow(b_n, need), _grow(b_nd, need), nb)


@njit(cache=True, nogil=True)
def eliminate_fronts(indptr, nbr, val, perm, own_lo, own_hi, n_child, owner, t_lo, t_hi, stack, u, ext, track,
                     half, front_logs, front_errs, front_stats):
    """Eliminate the fronts of tree nodes t_lo .. t_hi - 1 of the postordered dissection tree
    (perm, own_lo, own_hi, n_child; owner[v] = tree node owning matrix node v) of the skew
    matrix A in CSR rows (nbr, val). stack (see :func:`empty_stack`) holds, on top, the
    contribution blocks of the children of the range's first fronts that lie outside it; each
    front pops its children's blocks and pushes its own. Returns (the stack after the range,
    singular). Writes front_logs[t] = sum of ln |pivot| of front t and front_errs[t] its error
    bound (track: a running error analysis, else 0; the entries of A are taken as exact);
    front_stats[t] = (front size, fully summed, left over) when it has a row per tree node.
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
        if n > 0 and t == T - 1:  # the root could not eliminate everything: A is singular
            return stack, True
        stack, nd = push_block(stack, H, L, B, n, loc, k, idx, f, pos, ext, track)
        if front_stats.shape[0] == T:
            front_stats[t, 0], front_stats[t, 1], front_stats[t, 2] = f, k, nd
    return stack, False


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


def _stack_of(blocks: list, ext: bool, track: bool):
    """A contribution stack holding the given blocks (bottom first), as :func:`empty_stack` lays it out."""
    if not blocks:
        return empty_stack(ext, track)
    n = np.array([len(ids) for ids, _, _, _, _ in blocks], np.int64)
    b_i = np.concatenate(([0], np.cumsum(n)[:-1])).astype(np.int64)
    b_v = np.concatenate(([0], np.cumsum(n * n)[:-1])).astype(np.int64)
    nd = np.array([d for _, d, _, _, _ in blocks], np.int64)

    def flat(part, used):
        return np.concatenate([blk[part] for blk in blocks]) if used else np.empty(0)

    return (flat(2, True), flat(3, ext), flat(4, track), np.concatenate([blk[0] for blk in blocks]),
            b_v, b_i, n, nd, len(blocks))


def _top_block(stack):
    """The top block of a stack: (node ids, delayed count, hi, lo, bound) with flat values."""
    s_hi, s_lo, s_bd, s_idx, b_v, b_i, b_n, b_nd, nb = stack
    c = nb - 1
    n, v = int(b_n[c]), int(b_v[c])

    def part(a):
        return a[v:v + n * n].copy() if a.shape[0] else a

    return s_idx[b_i[c]:b_i[c] + n].copy(), int(b_nd[c]), part(s_hi), part(s_lo), part(s_bd)


def multifrontal_log_pf(indptr, nbr, val, perm, own_lo, own_hi, n_child, u: float, ext: bool, track: bool,
                        front_stats: np.ndarray, half: bool, threads: int = 1) -> tuple[float, float]:
    """(ln |Pf A|, error bound) for the skew matrix A in CSR rows (nbr, val), eliminated along the
    postordered dissection tree (perm, own_lo, own_hi, n_child) by :func:`eliminate_fronts`
    (arguments as there); with threads > 1 the subtrees below the top levels of the tree run
    concurrently (:mod:`evaluators.oracles.subtree_threads`). Every front gets the same inputs in
    the same order either way, and the fronts' logs are summed in postorder afterwards, so the
    result does not depend on threads. (-inf, inf) when A is (numerically) singular."""
    T = own_lo.shape[0]
    owner = front_owner(perm, own_lo, own_hi)
    front_logs = np.zeros(T)
    front_errs = np.zeros(T)

    def run(t_lo: int, t_hi: int, child_blocks: list, alone=None):
        """The block the range's last front hands up; None when that front is the root and
        found A singular. A single front shares its large dense updates with the helpers while
        alone() (no other task running)."""
        stack = _stack_of(child_blocks, ext, track)
        if helpers is not None and t_hi == t_lo + 1 and half and not track:
            stack, singular = _shared_front(indptr, nbr, val, perm, own_lo, own_hi, n_child, owner, t_lo, stack, u,
                                            ext, front_logs, front_stats, helpers, alone)
        else:
            stack, singular = eliminate_fronts(indptr, nbr, val, perm, own_lo, own_hi, n_child, owner, t_lo, t_hi,
                                               stack, u, ext, track, half, front_logs, front_errs, front_stats)
        return None if singular else _top_block(stack)

    helpers = FrontHelpers(threads - 1) if threads > 1 else None
    try:
        if threads > 1:
            tasks = split_tree(n_child, own_lo, own_hi, split_depth_for(threads))
            root_block = run_tree_in_threads(tasks, run, threads)
        else:
            root_block = run(0, T, [])
    finally:
        if helpers is not None:
            helpers.close()
    if root_block is None:
        return -np.inf, np.inf
    return sum_front_logs(front_logs, front_errs)


def _shared_front(indptr, nbr, val, perm, own_lo, own_hi, n_child, owner, t, stack, u, ext, front_logs, front_stats,
                  helpers: FrontHelpers, alone):
    """:func:`eliminate_fronts` for the single front t (one-triangle kernel, no bound), its dense
    updates shared with the helpers while alone() (:mod:`evaluators.oracles.skew_front_split`);
    the same front, bit for bit. Returns (stack, singular)."""
    N = perm.shape[0]
    T = own_lo.shape[0]
    stack = grown_stack(stack, 1)
    pos = np.full(N, -1, np.int64)
    idx = np.empty(N, np.int64)
    eps = UNIT_ROUNDOFF_DD if ext else UNIT_ROUNDOFF
    H, L, B, f, k, stack = assemble_front(indptr, nbr, val, perm, own_lo, own_hi, n_child, owner, t, stack, ext,
                                          False, eps, pos, idx)
    front_logs[t], n, loc = eliminate_front_half_split(H, L, ext, k, u if f > k else 0.0, helpers, alone)
    if n > 0 and t == T - 1:
        return stack, True
    stack, nd = push_block(stack, H, L, B, n, loc, k, idx, f, pos, ext, False)
    if front_stats.shape[0] == T:
        front_stats[t] = (f, k, nd)
    return stack, False


def log_abs_pfaffian(A, group_ptr: np.ndarray | None = None, coords: np.ndarray | None = None,
                     extended: bool = False, u: float = PIVOT_THRESHOLD,
                     leaf_nodes: int = LEAF_NODES, front_stats: list | None = None,
                     even_separators: bool = False, half_kernel: bool | None = None,
                     threads: int | None = None) -> float:
    """ln |Pf A| of a sparse real skew-symmetric matrix (scipy sparse).

    group_ptr: nodes come in contiguous groups group_ptr[g]:group_ptr[g+1] that the dissection
    keeps together (default: single nodes); coords: one (x, y) per group to steer the dissection
    (BFS distances when None); extended: double-double arithmetic (about 10x slower, 16 more
    digits). front_stats: a list that receives an array of (front size, fully summed nodes,
    delayed nodes) per front. even_separators: separators that leave every cut group an even
    remainder (for cold Kasteleyn matrices, see above); half_kernel: fronts eliminated on one
    triangle (:mod:`evaluators.oracles.skew_front_half`; default: in double-double, where it
    halves the arithmetic; in float64 it is no faster). Both False: the elimination of the
    bounded run. threads: subtrees eliminated concurrently (None: :func:`default_threads`, i.e.
    one thread below 50k nodes, else the usable cores up to 4); the value does not depend on it.
    Returns -inf when A is singular.
    """
    half = extended if half_kernel is None else half_kernel
    return _log_abs_pfaffian(A, group_ptr, coords, extended, False, u, leaf_nodes, front_stats,
                             even_separators, half, threads)[0]


def log_abs_pfaffian_bounded(A, group_ptr: np.ndarray | None = None, coords: np.ndarray | None = None,
                             extended: bool = False, u: float = PIVOT_THRESHOLD,
                             leaf_nodes: int = LEAF_NODES, threads: int | None = None) -> tuple[float, float]:
    """(ln |Pf A|, a bound on its absolute error) by the same elimination with a running error
    analysis (Wilkinson): every entry carries a bound on its error, propagated through each
    update with the rounding of each operation (unit roundoff 2^-53, or 2^-102 in double-double)
    and an absolute allowance for results below the normal range; the bound on ln |Pf| is the
    sum over pivots of |error| / |pivot| (first order). About twice the work of the plain run.
    threads as in :func:`log_abs_pfaffian`. (-inf, inf) when A is (numerically) singular."""
    value, bound = _log_abs_pfaffian(A, group_ptr, coords, extended, True, u, leaf_nodes, None, False, False, threads)
    return value, bound + 4.0 * UNIT_ROUNDOFF * abs(value)


def _log_abs_pfaffian(A, group_ptr, coords, extended, track, u, leaf_nodes, front_stats, even, half, threads):
    N = A.shape[0]
    if N == 0:
        return 0.0, 0.0
    if N % 2 == 1:
        return -np.inf, np.inf
    csr = A.tocsr()
    csr.sum_duplicates()
    group_ptr = np.arange(N + 1) if group_ptr is None else np.asarray(group_ptr, dtype=np.int64)
    threads = default_threads(N) if threads is None else int(threads)
    perm, own_lo, own_hi, n_child = grouped_dissection(csr, group_ptr, coords, leaf_nodes, even, threads)
    stats = np.zeros((len(own_lo) if front_stats is not None else 0, 3), np.int64)
    value, bound = multifrontal_log_pf(csr.indptr.astype(np.int64), csr.indices.astype(np.int64),
                                       csr.data.astype(np.float64), perm, own_lo, own_hi, n_child,
                                       float(u), bool(extended), bool(track), stats, half and not track, threads)
    if front_stats is not None:
        front_stats.append(stats)
    return float(value), float(bound)
