"""ERA-style tree search (``strategy: tree``): a tree of judged programs, flat PUCT selection.

Every judged program is a node whose parent is the program it was rewritten from (``None`` for
a program written from scratch). Selection is a flat PUCT over all nodes, not a descent:

    score(u) = rank(u) / (|T| - 1) + c * sqrt(N_total) / (|T| * (1 + n(u)))

``rank(u)`` is u's position when nodes are ordered by their lexicographic program score
(:func:`search.database.score_of`), 0 for the worst; programs with equal scores share the
lower rank, and failed programs (status 0) all share rank 0 whatever their length. With one
node the rank term is 1. ``n(u)`` counts the expansions of u and of its descendants
(back-propagation: expanding u visits u and every ancestor), ``N_total`` counts expansions.
Ties in the PUCT score go to the better program, then to the earlier one, so selection is a
pure function of the tree.

With ``fresh_drafts`` the root (no program: "write one from scratch") competes too, as a node of
rank value 0 whose visits are the drafts written from it: a tree whose first programs are all
dead ends still asks for new first attempts once their visits pile up (a tree that only rewrites
its nodes can spend its whole budget polishing one wrong idea).

One generation of :class:`TreeStrategy`: the top K nodes (K = the generation's slots) are the
parents, each expansion is back-propagated when it is chosen (so a node that only yields
duplicates or failed proposals loses priority), and each judged child joins the tree under its
parent. The tree and every node's record (later prompts need them) go into snapshots.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from search.database import score_judged
from search.records import JudgedProgram, Selection
from search.strategies import StrategyContext, register


@dataclass
class Node:
    id: str
    parent: str | None
    score: tuple            # the lexicographic program score (bigger is better)
    seq: int                # order of arrival
    visits: int = 0         # n(u): expansions of u and its descendants

    @property
    def failed(self) -> bool:
        return not score_judged(self.score)


#: the id :meth:`Tree.select` returns for "draft a program from scratch"
ROOT = "<root>"


class Tree:
    def __init__(self, exploration_c: float = 1.2, fresh_drafts: bool = False):
        if exploration_c < 0:
            raise ValueError("exploration_c must be >= 0")
        self.c = float(exploration_c)
        self.fresh_drafts = bool(fresh_drafts)
        self.nodes: dict[str, Node] = {}
        self.total_visits = 0   # N_total
        self.drafts = 0         # expansions of the root (fresh drafts)

    def __len__(self) -> int:
        return len(self.nodes)

    # -- growth -------------------------------------------------------------------------------
    def add(self, node_id: str, parent: str | None, score) -> Node:
        """A judged program; ``parent`` must be a node already in the tree (or None)."""
        if node_id in self.nodes:
            raise ValueError(f"node {node_id} is already in the tree")
        if parent is not None and parent not in self.nodes:
            raise KeyError(f"parent {parent} of {node_id} is not in the tree")
        node = Node(node_id, parent, tuple(float(x) for x in score), len(self.nodes))
        self.nodes[node_id] = node
        return node

    def visit(self, node_id: str) -> None:
        """Back-propagate one expansion of ``node_id``: it and each ancestor gain a visit
        (``ROOT``: one more fresh draft)."""
        self.total_visits += 1
        if node_id == ROOT:
            self.drafts += 1
            return
        cur: str | None = node_id
        while cur is not None:
            node = self.nodes[cur]
            node.visits += 1
            cur = node.parent

    def ancestors(self, node_id: str) -> list[str]:
        out, cur = [], self.nodes[node_id].parent
        while cur is not None:
            out.append(cur)
            cur = self.nodes[cur].parent
        return out

    def depth(self, node_id: str) -> int:
        return len(self.ancestors(node_id))

    # -- selection ----------------------------------------------------------------------------
    def ranks(self) -> dict[str, int]:
        """rank(u) in [0, |T| - 1]: equal scores share the lower rank, failed nodes rank 0."""
        def key(n: Node):
            return (0,) if n.failed else (1, *n.score)

        ordered = sorted(self.nodes.values(), key=key)
        out: dict[str, int] = {}
        prev, rank = None, 0
        for pos, node in enumerate(ordered):
            k = key(node)
            if k != prev:
                rank, prev = pos, k
            out[node.id] = rank
        return out

    def puct(self) -> dict[str, float]:
        """score(u) of every node (and of ``ROOT`` with fresh drafts)."""
        size = len(self.nodes)
        if size == 0:
            return {}
        ranks = self.ranks()
        explore = self.c * math.sqrt(self.total_visits) / size
        values = {nid: (ranks[nid] / (size - 1) if size > 1 else 1.0) + explore / (1 + node.visits)
                  for nid, node in self.nodes.items()}
        if self.fresh_drafts:
            values[ROOT] = explore / (1 + self.drafts)
        return values

    def select(self, k: int) -> list[str]:
        """The top ``k`` by PUCT (ties: better program, then earlier; the root after every node);
        when fewer than ``k`` compete the ranking is repeated from the top. Empty tree: []."""
        if not self.nodes or k <= 0:
            return []
        values = self.puct()
        ranks = self.ranks()

        def key(nid: str):
            if nid == ROOT:
                return (-values[nid], 1, 0, 0)
            return (-values[nid], 0, -ranks[nid], self.nodes[nid].seq)
        order = sorted(values, key=key)
        return [order[i % len(order)] for i in range(k)]

    def best(self) -> str | None:
        if not self.nodes:
            return None
        ranks = self.ranks()
        return max(self.nodes, key=lambda nid: (ranks[nid], -self.nodes[nid].seq))

    # -- checkpoints --------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"exploration_c": self.c, "total_visits": self.total_visits,
                "fresh_drafts": self.fresh_drafts, "drafts": self.drafts,
                "nodes": [{**asdict(n), "score": list(n.score)} for n in self.nodes.values()]}

    @classmethod
    def from_state_dict(cls, state: dict) -> "Tree":
        tree = cls(state["exploration_c"], bool(state.get("fresh_drafts", False)))  # older snapshots: off
        tree.total_visits = int(state["total_visits"])
        tree.drafts = int(state.get("drafts", 0))
        for d in sorted(state["nodes"], key=lambda d: d["seq"]):
            node = tree.add(d["id"], d["parent"], d["score"])
            node.visits = int(d["visits"])
        return tree


@dataclass(frozen=True)
class TreeOptions:
    exploration_c: float = 1.2           # c of the flat PUCT rule
    fresh_drafts: bool = True            # the root competes in PUCT: slots may still draft programs from scratch

    def __post_init__(self):
        if self.exploration_c < 0:
            raise ValueError("exploration_c must be >= 0")


@register
class TreeStrategy:
    name = "tree"
    Options = TreeOptions
    rejudge_duplicates = False
    overlaps_generations = True  # a lagging tree is parallel PUCT: expansions of a generation not yet scored

    def __init__(self, options: TreeOptions, context: StrategyContext):
        self.tree = Tree(options.exploration_c, options.fresh_drafts)
        self.programs: dict[str, JudgedProgram] = {}

    def select(self, generation: int, slots: int) -> list[Selection]:
        chosen = self.tree.select(slots)
        for node in chosen:  # back-propagation of this generation's expansions, in slot order
            self.tree.visit(node)
        out = []
        for s in range(slots):
            parent = chosen[s] if chosen and chosen[s] != ROOT else None
            out.append(Selection(self.programs[parent] if parent is not None else None, journal={"tree_parent": parent}))
        return out

    def absorb(self, slot: int, selection: Selection, program: JudgedProgram) -> None:
        if program.evaluation is None:
            return
        parent = selection.parent.id if selection.parent is not None else None
        self.tree.add(program.id, parent, program.evaluation.score)
        self.programs[program.id] = program

    def finished(self) -> str | None:
        return None

    def end_generation(self, generation: int) -> list:
        return []

    def state(self) -> dict:
        return {"tree": self.tree.state_dict(), "programs": {k: p.to_dict() for k, p in self.programs.items()}}

    def load(self, state: dict) -> None:
        self.tree = Tree.from_state_dict(state["tree"])
        self.programs = {k: JudgedProgram.from_dict(p) for k, p in state["programs"].items()}
