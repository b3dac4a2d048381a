"""The float64 executor of the tensor-network oracle: its blocked axis permutation against numpy's
transpose, its pairwise contraction against numpy's einsum, and whole contractions (rescaled and
sliced) against the log-domain route and the transfer matrix."""

import math

import networkx as nx
import numpy as np
import pytest

from evaluators.oracles.contraction import linear_contraction as lin
from evaluators.oracles import tensor_network as tn
from evaluators.oracles.contraction.binary_permute import PermuteKernel, permute_binary, permute_binary_bounds
from evaluators.oracles.contraction.log_contraction import contract_log
from evaluators.oracles.transfer_matrix import transfer_matrix_log_z
from tasks.model import IsingModel


@pytest.mark.parametrize("k", [1, 3, 7, 9, 14, 17])
def test_permute_binary_is_numpys_transpose(k):
    rng = np.random.default_rng(k)
    x = rng.random((2,) * k)
    perms = [tuple(rng.permutation(k)) for _ in range(6)] + [tuple(range(k))[::-1], tuple(range(k))]
    for perm in perms:
        got = permute_binary(x, perm)
        assert got.flags.c_contiguous and np.array_equal(got, x.transpose(perm)), perm


def test_permute_binary_with_both_outer_tables_and_small_blocks():
    """Small tables and blocks, so every part of the gather kernel (run_bits = 0, the baseline) is
    exercised at 2^15 entries."""
    rng = np.random.default_rng(5)
    x = rng.random((2,) * 15)
    for bits in (2, 3, 5, 6):
        kernel = PermuteKernel(run_bits=0, block_bits=bits, table_bits=2)
        for perm in [tuple(rng.permutation(15)) for _ in range(4)]:
            assert np.array_equal(permute_binary(x, perm, kernel=kernel), x.transpose(perm)), (bits, perm)


@pytest.mark.parametrize("run_bits", [1, 2, 3, 5, 8, 13])
def test_permute_binary_in_runs_is_numpys_transpose(run_bits):
    """The tiled kernel at every run length, with small outer tables (both used), on random
    permutations and on those where the source's and destination's runs share axes (the lowest
    axis kept, rotations, the reversal) or share none."""
    kernel = PermuteKernel(run_bits=run_bits, table_bits=2)
    rng = np.random.default_rng(run_bits)
    k = 14
    x = rng.random((2,) * k)
    identity = tuple(range(k))
    perms = [tuple(rng.permutation(k)) for _ in range(4)] + [
        identity[::-1], identity[1:] + (0,), (k - 1,) + identity[:-1],
        tuple(rng.permutation(k - 1)) + (k - 1,),  # the lowest axis stays the lowest
        identity[k // 2:] + identity[:k // 2]]  # the two halves swapped: no run axis shared
    for perm in perms:
        out = np.full(x.size, np.nan)
        got = permute_binary(x, perm, out=out, kernel=kernel)
        assert got.base is out and np.array_equal(got, x.transpose(perm)), perm


def test_permute_binary_falls_back_to_numpy_off_its_domain():
    x = np.random.default_rng(0).random((2, 3, 2, 2, 2, 2, 2, 2))
    perm = (7, 1, 0, 2, 6, 5, 4, 3)
    assert np.array_equal(permute_binary(x, perm), x.transpose(perm))
    y = np.random.default_rng(1).random((2,) * 9).transpose(tuple(range(9))[::-1])  # not C-contiguous
    assert np.array_equal(permute_binary(y, tuple(range(9))[::-1]), y.transpose(tuple(range(9))[::-1]))


def _labelled(rng, labels):
    return rng.random((2,) * len(labels)) + 0.1, tuple(labels)


@pytest.mark.parametrize("ia, ib, ip", [
    ("abcdefgh", "fghijklm", "abcdeijklm"),  # summed fgh, nothing shared kept
    ("abcdefgh", "hgfedxyz", "abcxyzd"),  # summed fgh (in another order), batch d (a hyper-index kept)
    ("abcdefgh", "cbaxyz", "abcdefghxyz"),  # batch only: an elementwise product
    ("abcdefgh", "abcdefgh", ""),  # everything summed: a scalar
    ("abcdefghq", "hgzy", "abcdefyz"),  # q in one operand only and not kept: summed within it first
    ("xy", "yabcdefghij", "xabcdefghij"),  # a small operand against a large one
])
def test_contract_pair_is_numpys_einsum(ia, ib, ip):
    rng = np.random.default_rng(len(ia) * 31 + len(ib))
    (a, ia), (b, ib) = _labelled(rng, ia), _labelled(rng, ib)
    out, labels, summed = lin.contract_pair(a, ia, b, ib, tuple(ip))
    assert sorted(labels) == sorted(ip) and out.flags.c_contiguous
    ref = np.einsum(f"{''.join(ia)},{''.join(ib)}->{''.join(labels)}", a, b)
    assert np.allclose(out, ref, rtol=1e-13, atol=0.0)
    assert summed == 2 ** len((set(ia) | set(ib)) - set(ip))


def _glass(n, beta, seed, fields=False):
    rng = np.random.default_rng(seed)
    g = nx.random_regular_graph(3, n, seed=seed)
    edges = np.array(sorted(tuple(sorted(e)) for e in g.edges()))
    h = rng.normal(size=n) if fields else None
    return IsingModel.from_arrays(n, beta, edges, rng.normal(size=len(edges)), h)


def test_rescaled_sliced_contraction_against_the_log_domain_and_the_transfer_matrix(monkeypatch):
    """Cold enough (beta = 6) that the contraction's values fall far below 2^-64, so intermediates
    are rescaled by powers of two; sliced into 2^k pieces contracted in threads and one by one."""
    scales = []
    checked = lin._checked_exponent

    def spy(lo, hi, summed):
        e = checked(lo, hi, summed)
        scales.append(e)
        return e

    monkeypatch.setattr(lin, "_checked_exponent", spy)
    for fields, width in ((False, 26), (True, 6)):
        model = _glass(36, 6.0, 3 + fields, fields)
        net = tn.build_network(model)
        tree = tn.contraction_tree(net, "greedy", width)
        arrays = [np.exp(a) for a in net.arrays]
        threads, single = lin.linear_log(tree, arrays, 2), lin.linear_log(tree, arrays, 1)
        logs = contract_log(tree, net.arrays, force_log_domain=True)
        assert abs(threads - logs) <= 1e-12 * abs(logs) and abs(single - logs) <= 1e-12 * abs(logs)
        ref = transfer_matrix_log_z(model)
        assert abs(net.log_offset + threads - ref) <= 1e-9 * abs(ref), (fields, tree.nslices)
    assert any(e < 0 for e in scales)  # rescaled upwards: the values went below 2^-64


def test_the_range_check_in_the_permute_pass_rescales_and_raises_as_its_own_pass(monkeypatch):
    """With tiles of 2^2 from 2^5 entries, most products are checked in the pass of their
    permuted copy (the tiled kernel's bounds): cold (beta = 40, n = 60, sliced into 4) the
    contraction rescales there and equals the log-domain route and the check in a pass of its own
    (the gather kernel, which gives no bounds); colder (beta = 60) it raises RangeExceeded on the
    bounds of a permuted copy."""
    tiles, gather = PermuteKernel(run_bits=2, block_bits=2), PermuteKernel(run_bits=0, block_bits=2)
    fused = []
    bounds = lin.permute_binary_bounds

    def spy(x, perm, out=None, kernel=None):
        copy, lo, hi = bounds(x, perm, out, kernel)
        if lo is not None:
            assert (lo, hi) == (x.min(), x.max())
            fused.append(math.frexp(hi)[1] if not 2.0 ** -64 <= hi <= 2.0 ** 64 else 0)
        return copy, lo, hi

    monkeypatch.setattr(lin, "permute_binary_bounds", spy)
    net = tn.build_network(_glass(60, 40.0, 3))
    tree = tn.contraction_tree(net, "greedy", 8)
    arrays = [np.exp(a) for a in net.arrays]
    value = lin.linear_log(tree, arrays, 2, tiles)
    assert tree.nslices > 1 and len(fused) > 10 and any(e != 0 for e in fused)  # rescaled in the permute's pass
    logs = contract_log(tree, net.arrays, force_log_domain=True)
    assert abs(value - logs) <= 1e-12 * abs(logs)
    fused.clear()
    assert lin.linear_log(tree, arrays, 2, gather) == value and not fused  # every check in its own pass
    raised_on = []
    checked = lin._checked_exponent

    def check_spy(lo, hi, summed):
        try:
            return checked(lo, hi, summed)
        except lin.RangeExceeded:
            raised_on.append((lo, hi))
            raise

    monkeypatch.setattr(lin, "_checked_exponent", check_spy)
    spied_bounds = []

    def bounds_spy(x, perm, out=None, kernel=None):
        copy, lo, hi = bounds(x, perm, out, kernel)
        spied_bounds.append((lo, hi))
        return copy, lo, hi

    monkeypatch.setattr(lin, "permute_binary_bounds", bounds_spy)
    cold = tn.build_network(_glass(60, 60.0, 3))
    with pytest.raises(lin.RangeExceeded):
        lin.linear_log(tn.contraction_tree(cold, "greedy", 8), [np.exp(a) for a in cold.arrays], 2, tiles)
    assert raised_on and raised_on[-1] == spied_bounds[-1]  # raised on the bounds of the last permuted copy


def test_permute_binary_bounds_come_from_the_tiled_pass_only():
    rng = np.random.default_rng(3)
    x = rng.random((2,) * 14)
    perm = tuple(rng.permutation(14))
    copy, lo, hi = permute_binary_bounds(x, perm)
    assert np.array_equal(copy, x.transpose(perm)) and (lo, hi) == (x.min(), x.max())
    small = rng.random((2,) * 6)
    copy, lo, hi = permute_binary_bounds(small, (5, 4, 3, 2, 1, 0))  # numpy's copy
    assert np.array_equal(copy, small.transpose((5, 4, 3, 2, 1, 0))) and lo is None and hi is None


def test_an_entry_below_the_range_raises_and_the_oracle_goes_to_logs():
    model = _glass(20, 400.0, 5)
    net = tn.build_network(model)
    tree = tn.contraction_tree(net, "greedy", 26)
    with pytest.raises(lin.RangeExceeded):
        lin.linear_log(tree, [np.exp(a) for a in net.arrays])
    ref = transfer_matrix_log_z(model)
    assert abs(tn.tensor_network_log_z(model) - ref) <= 1e-12 * abs(ref)


def test_log_sum_does_not_overflow():
    assert lin.log_sum([1000.0, 1000.0]) == pytest.approx(1000.0 + math.log(2.0), rel=1e-15)


def test_permute_binary_writes_into_the_given_buffer():
    rng = np.random.default_rng(11)
    x = rng.random((2,) * 13)
    perm = tuple(rng.permutation(13))
    buffer = np.full(x.size, np.nan)
    got = permute_binary(x, perm, out=buffer)
    assert got.base is buffer and np.array_equal(got, x.transpose(perm))


def test_slices_reuse_their_buffers_and_give_the_same_value(monkeypatch):
    """The pooled buffers carry no state between contractions: the sliced contraction in one
    worker equals the log-domain route, and after the first slice no buffer is allocated."""
    fresh = []
    take = lin.Buffers.take

    def counting_take(self, size):
        if not self._free[size]:
            fresh.append(size)
        return take(self, size)

    monkeypatch.setattr(lin.Buffers, "take", counting_take)
    kernel = PermuteKernel(block_bits=2)  # tiled copies (into pooled buffers) from 2^5 entries
    model = _glass(60, 0.7, 8)
    net = tn.build_network(model)
    tree = tn.contraction_tree(net, "greedy", 6)
    assert tree.nslices >= 4
    arrays = [np.exp(a) for a in net.arrays]
    buffers = lin.Buffers()
    values = []
    for i in range(tree.nslices):
        values.append(lin._contract_slice(tree, arrays, i, buffers, permute=kernel))
        if i == 0:
            first = len(fresh)
    assert first > 0 and len(fresh) == first  # every later slice ran on the first one's buffers
    logs = contract_log(tree, net.arrays, force_log_domain=True)
    assert abs(lin.log_sum(values) - logs) <= 1e-12 * abs(logs)
    assert abs(lin.linear_log(tree, arrays, 3, kernel) - logs) <= 1e-12 * abs(logs)  # three workers, uneven shares
    ref = transfer_matrix_log_z(model)
    assert abs(net.log_offset + logs - ref) <= 1e-9 * abs(ref)
