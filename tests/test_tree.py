"""The pure tree of ERA-style search: PUCT values, ranks, selection order, back-propagation,
and a checkpoint round trip, on hand-built trees whose values are worked out by hand."""

import math

import numpy as np
import pytest

from search.strategies.tree import Tree

ACCEPT = (2.0, 1.0, 3.0)
REJECT = (1.0, 0.0, 1.0)
FAILED_SHORT = (0.0, 0.0, -10.0)
FAILED_LONG = (0.0, 0.0, -500.0)


def small_tree(c=1.0) -> Tree:
    """root (rejected) -> a (accepted) -> b (failed); root -> d (failed)."""
    t = Tree(c)
    t.add("root", None, REJECT)
    t.add("a", "root", ACCEPT)
    t.add("b", "a", FAILED_SHORT)
    t.add("d", "root", FAILED_LONG)
    return t


def test_back_propagation_visits_the_node_and_every_ancestor():
    t = small_tree()
    t.visit("b")
    t.visit("a")
    t.visit("d")
    assert {k: n.visits for k, n in t.nodes.items()} == {"root": 3, "a": 2, "b": 1, "d": 1}
    assert t.total_visits == 3
    assert t.ancestors("b") == ["a", "root"] and t.depth("root") == 0


def test_ranks_failed_nodes_share_the_worst_rank_and_ties_share_a_rank():
    t = small_tree()
    assert t.ranks() == {"b": 0, "d": 0, "root": 2, "a": 3}
    t.add("a2", "root", ACCEPT)  # ties with a
    assert t.ranks()["a2"] == t.ranks()["a"] == 3


def test_puct_values_match_the_formula_by_hand():
    c = 1.3
    t = small_tree(c)
    t.visit("b")
    t.visit("b")
    t.visit("d")
    size, total = 4, 3
    ranks = {"b": 0, "d": 0, "root": 2, "a": 3}
    visits = {"root": 3, "a": 2, "b": 2, "d": 1}
    values = t.puct()
    for nid in ranks:
        expect = ranks[nid] / (size - 1) + c * math.sqrt(total) / (size * (1 + visits[nid]))
        assert values[nid] == pytest.approx(expect, rel=1e-15, abs=0)


def test_no_visits_means_pure_exploitation_and_one_node_scores_one():
    t = small_tree(5.0)
    assert t.select(4) == ["a", "root", "b", "d"]  # b and d tie: the earlier first
    one = Tree()
    one.add("x", None, FAILED_SHORT)
    assert one.puct() == {"x": 1.0}
    assert Tree().select(3) == [] and Tree().best() is None


def test_exploration_overtakes_a_heavily_visited_best_node():
    t = Tree(2.0)
    t.add("good", None, ACCEPT)
    t.add("bad", None, REJECT)
    assert t.select(1) == ["good"]
    for _ in range(12):
        t.visit("good")
    # good: 1 + 2 sqrt(12) / (2 * 13) = 1.266; bad: 0 + 2 sqrt(12) / 2 = 3.46
    assert t.select(1) == ["bad"]
    assert Tree(0.0).c == 0.0
    with pytest.raises(ValueError):
        Tree(-1.0)


def test_select_repeats_the_ranking_when_the_tree_is_smaller_than_k():
    t = Tree()
    t.add("r", None, REJECT)
    t.add("s", "r", ACCEPT)
    assert t.select(5) == ["s", "r", "s", "r", "s"]


def test_add_refuses_unknown_parents_and_repeated_ids():
    t = small_tree()
    with pytest.raises(KeyError):
        t.add("z", "nope", ACCEPT)
    with pytest.raises(ValueError):
        t.add("a", None, ACCEPT)


def test_random_trees_select_the_argmax_and_survive_a_checkpoint():
    for seed in range(20):
        rng = np.random.default_rng(seed)
        t = Tree(float(rng.uniform(0, 3)))
        for i in range(int(rng.integers(1, 40))):
            parent = None if i == 0 or rng.random() < 0.1 else f"n{int(rng.integers(i))}"
            status = float(rng.integers(0, 3))
            t.add(f"n{i}", parent, (status, float(rng.integers(0, 3)), -float(rng.integers(1, 50))))
            for _ in range(int(rng.integers(0, 3))):
                t.visit(f"n{int(rng.integers(i + 1))}")
        values = t.puct()
        top = t.select(1)[0]
        assert values[top] == max(values.values())
        # a node's visits are at least the sum of its children's
        for nid, node in t.nodes.items():
            kids = sum(n.visits for n in t.nodes.values() if n.parent == nid)
            assert node.visits >= kids
        assert sum(n.visits for n in t.nodes.values() if n.parent is None) == t.total_visits
        copy = Tree.from_state_dict(t.state_dict())
        assert copy.puct() == values and copy.select(7) == t.select(7)


def test_fresh_drafts_let_the_root_win_once_a_dead_end_is_visited_enough():
    """One node that only ever yields dead ends: without the root the tree rewrites it forever;
    with fresh drafts the root's bonus overtakes it after a few visits."""
    from search.strategies.tree import ROOT

    closed, open_ = Tree(1.2), Tree(1.2, fresh_drafts=True)
    for t in (closed, open_):
        t.add("hybrid", None, (0.5, 1.0))
    picks = []
    for _ in range(6):
        picks.append(open_.select(1)[0])
        open_.visit(picks[-1])
        closed.visit(closed.select(1)[0])
    assert picks[0] == "hybrid" and ROOT in picks            # the node first, a fresh draft later
    assert closed.select(4) == ["hybrid"] * 4
    # by hand at N_total = 6: node 1 + 1.2 sqrt(6) / (1 + visits); root 1.2 sqrt(6) / (1 + drafts)
    values = open_.puct()
    drafts = picks.count(ROOT)
    assert values[ROOT] == pytest.approx(1.2 * math.sqrt(6) / (1 + drafts))
    assert values["hybrid"] == pytest.approx(1.0 + 1.2 * math.sqrt(6) / (1 + 6 - drafts))
    copy = Tree.from_state_dict(open_.state_dict())
    assert copy.drafts == drafts and copy.puct() == values
