"""The ERA-style tree search on Ray workers (``strategy: tree``).

Same machinery as :class:`evolve.search_loop.IslandSearch` (budgets, journal, deduplication,
parallel evaluation, snapshots, replay on resume, best program, lineage); only how parents are
chosen and how results are absorbed differ. One generation: pick the top K nodes of the tree
(:class:`search.tree.Tree`, flat PUCT, K = the generation's slots) as parents, ask proposers to
rewrite each parent's program given its verdict, back-propagate one visit per expansion (also
when the child is a duplicate or its proposal failed, so a node that only yields duplicates
loses priority), judge the fresh children in parallel, and add each judged child as a node
under its parent, in slot order. An empty tree is seeded by proposals without a parent; with
``tree.fresh_drafts`` the root keeps competing for slots, so dead-end first programs do not
hold the whole budget.

The tree (with every node's candidate record and verdict, which later prompts need) goes into
the snapshot, so a resumed run selects exactly the parents the uninterrupted run selected.
The database actor still deduplicates and tracks the best program; its islands are unused.
"""

from __future__ import annotations

import ray

from evolve.plan import Slot, plan_generation
from evolve.search_loop import IslandSearch
from search.tree import ROOT, Tree


class TreeSearch(IslandSearch):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tree = Tree(self.cfg.tree.exploration_c, self.cfg.tree.fresh_drafts)
        self.programs: dict[str, dict] = {}     # node id -> candidate record with its "verdict"
        self._parents: dict[str, str | None] = {}  # slot id -> parent node id (this generation)

    # -- state --------------------------------------------------------------------------------
    def restore(self, state: dict, replay) -> None:
        super().restore(state, replay)
        self.tree = Tree.from_state_dict(state["tree"]["tree"])
        self.programs = dict(state["tree"]["programs"])

    def snapshot(self) -> None:
        from dataclasses import asdict

        self.counters.elapsed_s = self._elapsed()
        state = {"counters": asdict(self.counters), "negative": self.ledger.to_dict(),
                 "database": ray.get(self.db.state.remote()),
                 "tree": {"tree": self.tree.state_dict(), "programs": self.programs}}
        seq = self.store.journal.append({"kind": "budget", **asdict(self.counters)})
        self.store.save_snapshot(state, seq)

    # -- one generation -----------------------------------------------------------------------
    def generation(self, g: int) -> None:
        cfg = self.cfg
        weights = {"structural": cfg.proposers.structural, "llm": cfg.proposers.llm}
        remaining = cfg.budgets.proposals - self.counters.proposals
        slots = plan_generation(g, cfg.ray.batch_size, 1, weights, cfg.seed, remaining)
        chosen = self.tree.select(len(slots))
        self._parents = {slot.id: (chosen[i] if chosen and chosen[i] != ROOT else None) for i, slot in enumerate(slots)}
        candidates = self._propose(slots)
        for i, slot in enumerate(slots):  # back-propagation of this generation's expansions, in slot order
            if chosen:
                self.tree.visit(chosen[i])
        to_judge = self._deduplicate(slots, candidates)
        verdicts = self._evaluate(to_judge)
        for slot in slots:
            result = verdicts.get(slot.id)
            if result is not None:
                self._absorb(slot, candidates[slot.id], result)

    def _parent_request(self, slot: Slot) -> dict:
        parent = self._parents[slot.id]
        return {"parent": self.programs[parent] if parent is not None else None, "inspirations": []}

    def _proposal_extra(self, slot: Slot) -> dict:
        return {"tree_parent": self._parents[slot.id]}

    def _absorb(self, slot: Slot, cand: dict, result: dict) -> None:
        verdict = result["verdict"]
        accepted = verdict["verdict"] == "accept"
        self.counters.accepted += int(accepted)
        self.ledger.island(0).record(cand.get("tractable_class"), cand.get("code"), accepted, verdict.get("feedback"))
        self.tree.add(cand["id"], self._parents[slot.id], result["score"])
        self.programs[cand["id"]] = {**cand, "verdict": verdict}
        added = ray.get(self.db.add.remote(cand, verdict, 0))
        if added.get("new_global_best"):
            self.store.journal.append({"kind": "promotion", "id": cand["id"], "score": added["score"]})
            self.store.write_best(cand, verdict)
            self.store.log(f"new best {cand['id']}: {verdict['verdict']}, class {cand.get('tractable_class')}, "
                           f"largest verified n {verdict['numerical']['largest_n_verified']}, "
                           f"tree depth {self.tree.depth(cand['id'])}")
        self.progress.update(self.counters, best=added.get("best_summary"))
