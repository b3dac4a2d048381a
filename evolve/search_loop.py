"""The islands search, generation by generation, on Ray workers.

One generation: plan its slots (deterministic), sample each slot's parent from the database
actor, propose in parallel, deduplicate in slot order, evaluate in parallel, then add the
results to the database in slot order, migrate/reset islands, and snapshot. Every proposal
and evaluation is journaled (and fsynced) as it arrives; a resumed run takes from the journal
whatever the killed run had already done, so nothing judged is lost or judged twice.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import ray

from evolve.config import Config
from evolve.plan import Replay, Slot, plan_generation
from evolve.progress import Progress
from evolve.run_store import RunStore
from search.negative import NegativeLedger, NegativePolicy


@dataclass
class Counters:
    generation: int = 0
    proposals: int = 0
    evaluations: int = 0
    accepted: int = 0
    duplicates: int = 0
    failed_proposals: int = 0
    tokens: int = 0
    usd: float = 0.0
    elapsed_s: float = 0.0        # wall time spent by this run, across resumes


class IslandSearch:
    def __init__(self, cfg: Config, store: RunStore, db, proposers: list, evaluators: list, progress: Progress):
        self.cfg, self.store, self.db = cfg, store, db
        self.proposers, self.evaluators = proposers, evaluators
        self.progress = progress
        self.counters = Counters()
        self.ledger = NegativeLedger()
        self.policy = NegativePolicy.from_dict((cfg.prompts or {}).get("negative"))
        self.replay = Replay()
        self._started = time.monotonic()
        self._elapsed_before = 0.0

    # -- state --------------------------------------------------------------------------------
    def restore(self, state: dict, replay: Replay) -> None:
        self.counters = Counters(**state["counters"])
        self._elapsed_before = self.counters.elapsed_s
        self.ledger = NegativeLedger.from_dict(state["negative"])
        ray.get(self.db.load_state.remote(state["database"]))
        self.replay = replay

    def snapshot(self) -> None:
        self.counters.elapsed_s = self._elapsed()
        state = {"counters": asdict(self.counters), "negative": self.ledger.to_dict(),
                 "database": ray.get(self.db.state.remote())}
        seq = self.store.journal.append({"kind": "budget", **asdict(self.counters)})
        self.store.save_snapshot(state, seq)

    def _elapsed(self) -> float:
        return self._elapsed_before + time.monotonic() - self._started

    # -- the loop -----------------------------------------------------------------------------
    def stop_reason(self) -> str | None:
        b, c = self.cfg.budgets, self.counters
        if c.proposals >= b.proposals:
            return f"proposal budget reached ({b.proposals})"
        if c.evaluations >= b.evaluations:
            return f"evaluation budget reached ({b.evaluations})"
        if self._elapsed() >= b.wall_time_s:
            return f"wall-time budget reached ({b.wall_time_s:.0f} s)"
        if b.tokens is not None and c.tokens >= b.tokens:
            return f"token budget reached ({b.tokens})"
        if b.usd is not None and c.usd >= b.usd:
            return f"USD budget reached ({b.usd})"
        if b.stop_when_accepted and c.accepted > 0:
            return "an accepted program was found (stop_when_accepted)"
        return None

    def run(self) -> str:
        while (reason := self.stop_reason()) is None:
            self.generation(self.counters.generation)
            self.counters.generation += 1
            if self.counters.generation % self.cfg.run.checkpoint_interval == 0:
                self.snapshot()
        self.snapshot()
        return reason

    def generation(self, g: int) -> None:
        cfg = self.cfg
        weights = {"structural": cfg.proposers.structural, "llm": cfg.proposers.llm}
        remaining = cfg.budgets.proposals - self.counters.proposals
        slots = plan_generation(g, cfg.ray.batch_size, cfg.database.islands, weights, cfg.seed, remaining)
        candidates = self._propose(slots)
        to_judge = self._deduplicate(slots, candidates)
        verdicts = self._evaluate(to_judge)
        for slot in slots:  # slot order: the database sees the same sequence on every run
            cand = candidates[slot.id]
            result = verdicts.get(slot.id)
            if result is None:
                continue
            self._absorb(slot, cand, result)
        for event in ray.get(self.db.maintain.remote([cfg.seed, g])):
            self.store.journal.append(event)

    def _propose(self, slots: list[Slot]) -> dict[str, dict]:
        out: dict[str, dict] = {}
        pending = {}
        for i, slot in enumerate(slots):
            rec = self.replay.proposals.get(slot.id)
            if rec is not None:
                out[slot.id] = rec["candidate"]
                continue
            request = self._parent_request(slot)
            request.update(kind=slot.kind, id=slot.id, generation=slot.generation, slot=slot.slot)
            if slot.kind == "llm":
                request["negative"] = list(self.ledger.island(slot.island).block(self.policy).items)
            worker = self.proposers[i % len(self.proposers)]
            pending[worker.propose.remote(request)] = slot
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            slot = pending.pop(done[0])
            cand = ray.get(done[0])
            cand.update(generation=slot.generation, slot=slot.slot, island=slot.island, **self._proposal_extra(slot))
            self.store.journal.append({"kind": "proposal", "candidate": cand})
            out[slot.id] = cand
            self._count_proposal(cand)
        for slot in slots:
            if slot.id in self.replay.proposals:
                self._count_proposal(out[slot.id])
        return out

    def _parent_request(self, slot: Slot) -> dict:
        """{"parent": program dict or None, "inspirations": [...]} for one slot (strategies override)."""
        return ray.get(self.db.request_for.remote(slot.island, [self.cfg.seed, slot.generation, slot.slot],
                                                  self.cfg.database.num_inspirations))

    def _proposal_extra(self, slot: Slot) -> dict:
        """Strategy-specific fields journaled with each proposal."""
        return {}

    def _count_proposal(self, cand: dict) -> None:
        c = self.counters
        c.proposals += 1
        c.tokens += int(cand.get("tokens_in", 0)) + int(cand.get("tokens_out", 0))
        c.usd += float(cand.get("cost_usd", 0.0))
        if not cand.get("code"):
            c.failed_proposals += 1
        self.progress.update(self.counters)

    def _deduplicate(self, slots: list[Slot], candidates: dict[str, dict]) -> list[dict]:
        fresh = []
        for slot in slots:
            cand = candidates[slot.id]
            if not cand.get("code"):
                continue
            if slot.id in self.replay.evaluations:
                fresh.append(cand)
                ray.get(self.db.mark_seen.remote(cand["code"]))
                continue
            if slot.id in self.replay.duplicates or ray.get(self.db.seen.remote(cand["code"])):
                if slot.id not in self.replay.duplicates:
                    self.store.journal.append({"kind": "duplicate", "id": slot.id})
                self.counters.duplicates += 1
                continue
            ray.get(self.db.mark_seen.remote(cand["code"]))
            fresh.append(cand)
        budget_left = self.cfg.budgets.evaluations - self.counters.evaluations
        return fresh[:max(0, budget_left)]

    def _evaluate(self, cands: list[dict]) -> dict[str, dict]:
        out: dict[str, dict] = {}
        pending = {}
        for i, cand in enumerate(cands):
            rec = self.replay.evaluations.get(cand["id"])
            if rec is not None:
                out[cand["id"]] = rec
                continue
            worker = self.evaluators[i % len(self.evaluators)]
            pending[worker.evaluate.remote(cand)] = cand
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            pending.pop(done[0])
            result = ray.get(done[0])
            rec = {"kind": "evaluation", **result}
            self.store.journal.append(rec)
            out[result["id"]] = rec
            self.counters.evaluations += 1
            self.progress.update(self.counters)
        self.counters.evaluations += sum(1 for c in cands if c["id"] in self.replay.evaluations)
        return out

    def _absorb(self, slot: Slot, cand: dict, result: dict) -> None:
        verdict = result["verdict"]
        accepted = verdict["verdict"] == "accept"
        self.counters.accepted += int(accepted)
        self.ledger.island(slot.island).record(cand.get("tractable_class"), cand.get("code"), accepted,
                                               verdict.get("feedback"))
        added = ray.get(self.db.add.remote(cand, verdict, slot.island))
        if added.get("new_global_best"):
            self.store.journal.append({"kind": "promotion", "id": cand["id"], "score": added["score"]})
            self.store.write_best(cand, verdict)
            self.store.log(f"new best {cand['id']}: {verdict['verdict']}, class {cand.get('tractable_class')}, "
                           f"largest verified n {verdict['numerical']['largest_n_verified']}")
        self.progress.update(self.counters, best=added.get("best_summary"))
