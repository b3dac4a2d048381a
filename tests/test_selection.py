"""Selection strategies: exact probabilities, and seeded draws that follow them."""

import math

import numpy as np
import pytest

from search.database.program import Program
from search.database.selection import (ParentMix, PowerLawRankSelection, SelectionStrategy, SoftmaxSelection,
                                       UniformSelection, WeightedSelection, choose_inspirations, choose_parent,
                                       make_strategy)

DRAWS = 6000
TOL = 0.03  # about 5 standard deviations of a frequency estimated from DRAWS draws (seeded)


def prog(i, status=2.0, n=64, length=100.0, sig=None, children=0, cell=None):
    score = (status, 1.0, math.log2(1 + n), 0.0, -2.0, 1.0, 1.0, 1.0, -float(length))
    return Program(id=f"p{i}", code="x", score=score, signature=sig or f"s{i}", seq=i, children=children,
                   descriptors={"method": cell or f"c{i}"})


def frequencies(strategy, programs, seed=0, step=0, draws=DRAWS):
    rng = np.random.default_rng(seed)
    counts = {p.id: 0 for p in programs}
    for _ in range(draws):
        counts[strategy.pick(programs, rng, step).id] += 1
    return np.array([counts[p.id] / draws for p in programs])


def test_uniform_selection_is_uniform():
    programs = [prog(i, n=2 ** (i + 2)) for i in range(5)]
    np.testing.assert_allclose(UniformSelection().probabilities(programs), 0.2)
    np.testing.assert_allclose(frequencies(UniformSelection(), programs), 0.2, atol=TOL)


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0])
def test_power_law_rank_probabilities_follow_rank_to_the_minus_alpha(alpha):
    programs = [prog(i, n=2 ** (i + 2)) for i in range(6)]  # p5 is the best, p0 the worst
    rng = np.random.default_rng(1)
    programs = [programs[int(i)] for i in rng.permutation(6)]  # input order must not matter
    p = PowerLawRankSelection(alpha).probabilities(programs)
    rank = {f"p{i}": 6 - i for i in range(6)}
    expected = np.array([rank[q.id] ** -alpha for q in programs])
    np.testing.assert_allclose(p, expected / expected.sum())
    np.testing.assert_allclose(frequencies(PowerLawRankSelection(alpha), programs), p, atol=TOL)


def test_softmax_over_clusters_follows_fitness_over_temperature():
    good, bad = prog(0, status=2.0), prog(1, status=1.0)
    t = 0.2
    p = SoftmaxSelection(temperature=t).probabilities([good, bad])
    ratio = math.exp((good.fitness - bad.fitness) / t)
    assert p[0] / p[1] == pytest.approx(ratio, rel=1e-9)
    np.testing.assert_allclose(frequencies(SoftmaxSelection(temperature=t), [good, bad]), p, atol=TOL)


def test_softmax_samples_clusters_not_programs_and_prefers_short_code_inside_one():
    # three programs share one signature, one is alone; equal fitness except length
    a, b, c = (prog(i, length=length, sig="same") for i, length in ((0, 100), (1, 300), (2, 500)))
    alone = prog(3, length=100, sig="other")
    p = SoftmaxSelection(temperature=10.0).probabilities([a, b, c, alone])
    # clusters of (almost) equal fitness get (almost) half each, however many members they have
    assert p[3] == pytest.approx(0.5, abs=0.01)
    assert p[0] > p[1] > p[2] > 0
    np.testing.assert_allclose(frequencies(SoftmaxSelection(temperature=10.0), [a, b, c, alone]), p, atol=TOL)


def test_softmax_temperature_schedule_decays_towards_the_best():
    s = SoftmaxSelection(temperature=0.1, period=100)
    assert s.current_temperature(0) == pytest.approx(0.1)
    assert s.current_temperature(50) == pytest.approx(0.05)
    assert s.current_temperature(150) == pytest.approx(0.05)  # the schedule restarts every period
    programs = [prog(0, n=64), prog(1, n=128)]
    early, late = s.probabilities(programs, step=0), s.probabilities(programs, step=99)
    assert late[1] > early[1] > 0.5
    assert late[1] > 0.99


def test_weighted_selection_sigmoid_of_median_distance_over_children():
    programs = [prog(i, n=2 ** (i + 2)) for i in range(5)]
    w = WeightedSelection()
    p = w.probabilities(programs)
    f = np.array([q.fitness for q in programs])
    med, mad = np.median(f), np.median(np.abs(f - np.median(f)))
    expected = 1 / (1 + np.exp(-10 * (f - med) / mad))
    np.testing.assert_allclose(p, expected / expected.sum())
    assert np.all(np.diff(p) > 0)  # better programs weigh more
    # a child halves the weight (1 / (1 + children))
    busy = [prog(i, n=2 ** (i + 2), children=1 if i == 4 else 0) for i in range(5)]
    q = w.probabilities(busy)
    assert (q[4] / q[3]) == pytest.approx((p[4] / p[3]) / 2)
    np.testing.assert_allclose(frequencies(w, busy), q, atol=TOL)


def test_weighted_selection_with_equal_fitness_is_uniform_up_to_children():
    programs = [prog(i, children=i) for i in range(4)]
    p = WeightedSelection().probabilities(programs)
    expected = 1.0 / (1 + np.arange(4))
    np.testing.assert_allclose(p, expected / expected.sum())


class _Last(SelectionStrategy):
    """Always the last (worst) program: separates the strategy from the mix."""

    def probabilities(self, programs, step=0):
        p = np.zeros(len(programs))
        p[-1] = 1.0
        return p


def test_parent_mix_ratios():
    ranked = [prog(i, n=2 ** (10 - i)) for i in range(4)]  # best first
    rng = np.random.default_rng(3)
    picks = [choose_parent(ranked, _Last(), ParentMix(), rng).id for _ in range(DRAWS)]
    freq = {pid: picks.count(pid) / DRAWS for pid in ("p0", "p1", "p3")}
    assert freq["p0"] == pytest.approx(0.1 + 0.2 / 4, abs=TOL)   # elite + exploration
    assert freq["p3"] == pytest.approx(0.7 + 0.2 / 4, abs=TOL)   # exploitation + exploration
    assert freq["p1"] == pytest.approx(0.2 / 4, abs=TOL)         # exploration only
    only_elite = ParentMix(0.0, 0.0, 1.0)
    assert {choose_parent(ranked, _Last(), only_elite, rng).id for _ in range(200)} == {"p0"}
    with pytest.raises(ValueError):
        ParentMix(-0.1, 1.0, 0.1)


def test_inspirations_are_top_elites_then_other_cells_never_the_parent():
    ranked = [prog(i, n=2 ** (12 - i), cell="a" if i in (0, 1) else f"c{i}") for i in range(8)]
    parent = ranked[2]
    cell_of = lambda p: p.descriptors["method"]  # noqa: E731
    seen_second = set()
    for seed in range(50):
        got = choose_inspirations(ranked, parent, k=3, top=1, cell_of=cell_of, rng=np.random.default_rng(seed))
        ids = [p.id for p in got]
        assert len(ids) == 3 == len(set(ids)) and parent.id not in ids
        assert ids[0] == "p0"                                  # the best other than the parent
        assert "p1" not in ids                                 # p1 shares p0's cell: never diverse
        assert len({cell_of(p) for p in got} | {cell_of(parent)}) == 4  # all cells distinct
        seen_second.add(ids[1])
    assert len(seen_second) >= 4  # the diverse picks really are random
    assert choose_inspirations(ranked[:1], ranked[0], 3, 1, cell_of, np.random.default_rng(0)) == []
    # fewer distinct cells than slots: fill from the rest
    same_cell = [prog(i, cell="a") for i in range(4)]
    got = choose_inspirations(same_cell, same_cell[0], 3, 1, cell_of, np.random.default_rng(0))
    assert sorted(p.id for p in got) == ["p1", "p2", "p3"]


def test_draws_are_deterministic_given_the_generator_seed():
    programs = [prog(i, n=2 ** (i + 2), sig=f"s{i % 3}") for i in range(9)]
    for name in ("softmax", "power_law", "weighted", "uniform"):
        s = make_strategy(name)
        a = [s.pick(programs, np.random.default_rng(42)).id for _ in range(1)]
        rng1, rng2 = np.random.default_rng(5), np.random.default_rng(5)
        assert [s.pick(programs, rng1).id for _ in range(50)] == [s.pick(programs, rng2).id for _ in range(50)]
        assert a == [s.pick(programs, np.random.default_rng(42)).id]
    with pytest.raises(ValueError):
        make_strategy("tournament")
