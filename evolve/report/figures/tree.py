"""The tree search (``strategy: tree``) from its newest snapshot: every node's visits and PUCT value.

Nodes are drawn by arrival (x) and depth (y), joined to the node they were expanded from; a
marker's area grows with the node's visits n(u) (expansions of it and its descendants) and its
colour is the node's PUCT value at the snapshot (:meth:`search.strategies.tree.Tree.puct`), i.e.
how strongly the next generation would pick it. Large trees keep their most visited nodes and
those nodes' ancestors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

import plotly.graph_objects as go

from search.database import named_score
from search.strategies.tree import ROOT, Tree

MAX_NODES = 1500


@dataclass(frozen=True)
class TreeNode:
    id: str
    parent: str | None
    seq: int
    depth: int
    visits: int
    rank: int
    value: float
    text: str            # named score


@dataclass(frozen=True)
class TreeSummary:
    nodes: list[TreeNode]          # most visited first
    total_visits: int
    drafts: int                    # expansions of the root (programs drafted from scratch)
    root_value: float | None       # the root's PUCT value (with fresh drafts)
    exploration_c: float


def tree_summary(strategy_state: dict | None) -> TreeSummary | None:
    """The tree of a tree strategy's snapshot state (``{"tree": ..., "programs": ...}``), or None."""
    if not strategy_state or "tree" not in strategy_state:
        return None
    tree = Tree.from_state_dict(strategy_state["tree"])
    values, ranks = tree.puct(), tree.ranks()
    nodes, depth = [], {}
    for nid, node in sorted(tree.nodes.items(), key=lambda kv: kv[1].seq):   # parents arrive before children
        depth[nid] = depth[node.parent] + 1 if node.parent is not None else 0
        named = named_score(node.score)
        nodes.append(TreeNode(nid, node.parent, node.seq, depth[nid], node.visits, ranks[nid], values[nid],
                              named.text() if named is not None else "-"))
    nodes.sort(key=lambda n: (-n.visits, -n.value, n.seq))
    return TreeSummary(nodes, tree.total_visits, tree.drafts, values.get(ROOT), tree.c)


def tree_figure(summary: TreeSummary | None) -> go.Figure | None:
    if summary is None or not summary.nodes:
        return None
    by_id = {n.id: n for n in summary.nodes}
    keep: set[str] = set()
    for n in summary.nodes[:MAX_NODES]:
        cur = n
        while cur is not None and cur.id not in keep:
            keep.add(cur.id)
            cur = by_id.get(cur.parent) if cur.parent else None
    shown = sorted((by_id[k] for k in keep), key=lambda n: n.seq)
    ex, ey = [], []
    for n in shown:
        if n.parent in keep:
            p = by_id[n.parent]
            ex += [p.seq, n.seq, None]
            ey += [p.depth, n.depth, None]
    biggest = max(1, max(n.visits for n in shown))
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=ex, y=ey, mode="lines", line={"color": "#bbbbbb", "width": 1}, hoverinfo="skip",
                             showlegend=False))
    fig.add_trace(go.Scatter(
        x=[n.seq for n in shown], y=[n.depth for n in shown], mode="markers", showlegend=False,
        marker={"size": [6 + 24 * math.sqrt(n.visits / biggest) for n in shown], "color": [n.value for n in shown],
                "colorscale": "Plasma", "showscale": True, "colorbar": {"title": "PUCT value"},
                "line": {"width": 0.5, "color": "#333"}},
        customdata=[[escape(n.id), n.visits, n.rank, f"{n.value:.4f}", escape(n.text)] for n in shown],
        hovertemplate=("%{customdata[0]}: visits %{customdata[1]}, rank %{customdata[2]}, PUCT %{customdata[3]}"
                       "<br>%{customdata[4]}<extra></extra>")))
    fig.update_layout(height=420, margin={"t": 20, "b": 40}, xaxis_title="node (order of arrival)",
                      yaxis={"title": "depth", "autorange": "reversed", "dtick": 1})
    return fig
