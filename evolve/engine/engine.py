"""The engine: plan -> propose -> deduplicate -> evaluate -> journal -> snapshot, generation by generation.

It knows no strategy and no Ray: a :class:`~search.strategies.Strategy` chooses each slot's
parent and keeps what it wants of the judged programs, a pool (:mod:`evolve.engine.pools`) runs
proposals and evaluations, the run store journals every event as it happens (fsynced) and holds
snapshots. One generation:

1. plan its slots (which proposer writes each; deterministic in seed, generation, slot);
2. ask the strategy for each slot's parent, inspirations and niche, choose the model of each LLM
   slot (:mod:`evolve.engine.models`: weights or the bandit), and propose in parallel;
3. deduplicate in slot order (normalised code hash; the strategy may ask for repeats to be judged);
4. evaluate in parallel, within the evaluation budget;
5. hand every slot's outcome to the strategy in slot order, track the best program, feed the
   negative-prompting memory of the slot's niche and the model bandit, journal the strategy's
   housekeeping events;
6. snapshot every ``checkpoint_interval`` generations.

A resumed run takes from the journal whatever the killed run had already proposed or judged
after its last snapshot, so nothing judged is lost or judged twice. Each distinct system prompt
is journaled once (proposals name it by digest). A generation whose every LLM proposal failed
at the provider for a reason no retry can fix (authentication, unknown model) ends the run.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from dataclasses import asdict, dataclass

from evolve.engine.counters import Counters, stop_reason
from evolve.engine.models import ModelChooser
from evolve.engine.plan import Replay, Slot, plan_generation
from evolve.engine.progress import Progress
from evolve.store.events import (BudgetEvent, DuplicateEvent, EvaluationEvent, ProposalEvent, PromotionEvent,
                                 SystemPromptEvent)
from evolve.store.run_store import RunStore
from search.candidate import Candidate
from search.database import normalised_hash
from search.llm.client import FATAL_KINDS, api_error_kind
from search.llm.config import LLMConfig
from search.negative import NegativeLedger, NegativePolicy
from search.prompts import text_digest
from search.records import Evaluation, JudgedProgram, ProposalRequest, Selection

STATE_SCHEMA = 2


@dataclass(frozen=True)
class EngineSettings:
    seed: int
    batch_size: int
    checkpoint_interval: int
    budgets: object                   # evolve.config.Budgets
    weights: dict                     # proposer name -> mixing weight, in config order
    negative: NegativePolicy = NegativePolicy()
    llm: LLMConfig | None = None      # the models the llm proposer may call (the engine picks one per slot)


class Engine:
    def __init__(self, settings: EngineSettings, strategy, pool, store: RunStore, progress: Progress,
                 replay: Replay | None = None):
        self.settings, self.strategy, self.pool, self.store, self.progress = settings, strategy, pool, store, progress
        self.replay = replay or Replay()
        self.counters = Counters()
        self.ledger = NegativeLedger()
        self.seen: dict[str, str] = {}           # normalised code hash -> id of the first program with it
        self.best: tuple[tuple, str] | None = None   # (score, id) of the best judged program
        self.models = (ModelChooser(settings.llm, settings.seed)
                       if settings.llm is not None and settings.weights.get("llm", 0) > 0 else None)
        self.system_prompts: set[str] = set(self.replay.system_prompts)   # digests already journaled
        self.fatal: str | None = None            # why the run cannot go on (set by a generation)
        self._started = time.monotonic()
        self._elapsed_before = 0.0

    # -- state --------------------------------------------------------------------------------
    def state(self) -> dict:
        self.counters.elapsed_s = self._elapsed()
        return {"schema": STATE_SCHEMA, "counters": asdict(self.counters), "negative": self.ledger.to_dict(),
                "seen": dict(self.seen), "best": None if self.best is None else
                {"score": list(self.best[0]), "id": self.best[1]}, "strategy": self.strategy.state(),
                "models": None if self.models is None else self.models.state(),
                "system_prompts": sorted(self.system_prompts)}

    def restore(self, state: dict) -> None:
        if state.get("schema") != STATE_SCHEMA:
            raise ValueError(f"snapshot state schema {state.get('schema')!r} is not {STATE_SCHEMA}")
        self.counters = Counters(**state["counters"])
        self._elapsed_before = self.counters.elapsed_s
        self.ledger = NegativeLedger.from_dict(state["negative"])
        self.seen = dict(state["seen"])
        best = state["best"]
        self.best = None if best is None else (tuple(float(x) for x in best["score"]), best["id"])
        if self.best is not None:
            self.progress.best = f"{self.best[1]} (found before the resume)"
        self.strategy.load(state["strategy"])
        if self.models is not None:
            self.models.load(state.get("models"))
        self.system_prompts |= set(state.get("system_prompts") or ())

    def snapshot(self) -> None:
        state = self.state()
        seq = self.store.record(BudgetEvent(asdict(self.counters)))
        self.store.save_snapshot(state, seq)

    def _elapsed(self) -> float:
        return self._elapsed_before + time.monotonic() - self._started

    # -- the loop -----------------------------------------------------------------------------
    def stop_reason(self) -> str | None:
        return (self.fatal or stop_reason(self.settings.budgets, self.counters, self._elapsed())
                or self.strategy.finished())

    def run(self) -> str:
        """Run generations until a budget says stop; returns why it stopped."""
        while (reason := self.stop_reason()) is None:
            self.generation(self.counters.generation)
            self.counters.generation += 1
            if self.counters.generation % self.settings.checkpoint_interval == 0:
                self.snapshot()
        self.snapshot()
        return reason

    def generation(self, g: int) -> None:
        s = self.settings
        remaining = s.budgets.proposals - self.counters.proposals
        slots = plan_generation(g, s.batch_size, s.weights, s.seed, remaining)
        selections = self.strategy.select(g, len(slots))
        candidates = self._propose(slots, selections)
        fresh, duplicate_of = self._deduplicate(slots, candidates)
        evaluations = self._evaluate(fresh)
        for slot, selection in zip(slots, selections):  # slot order: the strategy sees the same sequence every run
            cand = candidates[slot.id]
            if cand.ok and slot.id not in evaluations and slot.id not in duplicate_of:
                continue  # left unjudged by the evaluation budget
            self._absorb(slot, selection, JudgedProgram(cand, evaluations.get(slot.id), duplicate_of.get(slot.id)))
        for event in self.strategy.end_generation(g):
            self.store.record(event)

    def _propose(self, slots: list[Slot], selections: list[Selection]) -> dict[str, Candidate]:
        out: dict[str, Candidate] = {}
        asked: list[tuple[Slot, Selection, ProposalRequest]] = []
        # every LLM slot draws, replayed ones too, so a resumed generation chooses what the first run did
        models = self.models.choose([s for s in slots if s.proposer == "llm"]) if self.models is not None else {}
        for slot, sel in zip(slots, selections):
            event = self.replay.proposals.get(slot.id)
            if event is not None:
                out[slot.id] = event.candidate
                continue
            negative = ()
            if slot.proposer == "llm":
                negative = self.ledger.island(sel.niche).block(self.settings.negative).items
            asked.append((slot, sel, ProposalRequest(
                id=slot.id, generation=slot.generation, slot=slot.slot, proposer=slot.proposer, parent=sel.parent,
                inspirations=sel.inspirations, negative=tuple(negative), style=sel.style, model=models.get(slot.id),
                seed=self.settings.seed)))
        for i, cand in self.pool.propose([r for _, _, r in asked]):
            slot, sel, request = asked[i]
            cand = self._journal_system_prompt(cand)
            self.store.record(ProposalEvent(cand, slot.generation, slot.slot, sel.niche, dict(sel.journal),
                                            request.negative))
            out[slot.id] = cand
            self._count_proposal(cand)
        for slot in slots:
            if slot.id in self.replay.proposals:
                self._count_proposal(out[slot.id])
        self._check_fatal([out[s.id] for s in slots if s.proposer == "llm"])
        return out

    def _journal_system_prompt(self, cand: Candidate) -> Candidate:
        """Journal the candidate's system prompt if its text is new; the candidate without it."""
        if cand.system_prompt is None:
            return cand
        digest = cand.prompt_meta.get("system") or text_digest(cand.system_prompt)
        if digest not in self.system_prompts:
            self.store.record(SystemPromptEvent(digest, cand.system_prompt))
            self.system_prompts.add(digest)
        return dataclasses.replace(cand, system_prompt=None, prompt_meta={**cand.prompt_meta, "system": digest})

    def _check_fatal(self, llm_candidates: list[Candidate]) -> None:
        """End the run when every LLM proposal of the generation failed for a reason no retry fixes."""
        kinds = [api_error_kind(c) for c in llm_candidates]
        if llm_candidates and all(k in FATAL_KINDS for k in kinds):
            reason, count = Counter(c.parse_error for c in llm_candidates).most_common(1)[0]
            self.fatal = f"every LLM proposal of the generation failed ({count} of {len(kinds)}): {reason}"

    def _count_proposal(self, cand: Candidate) -> None:
        c = self.counters
        c.proposals += 1
        c.tokens += int(cand.tokens_in) + int(cand.tokens_out)
        c.usd += float(cand.cost_usd)
        if not cand.ok:
            c.failed_proposals += 1
        self.progress.update(c)

    def _deduplicate(self, slots: list[Slot], candidates: dict[str, Candidate]) -> tuple[list[Candidate], dict]:
        """(candidates to judge, {slot id: id of the earlier program with the same code})."""
        fresh, duplicate_of = [], {}
        for slot in slots:
            cand = candidates[slot.id]
            if not cand.ok:
                continue
            h = normalised_hash(cand.code)
            if slot.id in self.replay.evaluations or self.strategy.rejudge_duplicates:
                self.seen.setdefault(h, slot.id)
                fresh.append(cand)
                continue
            if slot.id in self.replay.duplicates or h in self.seen:
                if slot.id not in self.replay.duplicates:
                    self.store.record(DuplicateEvent(slot.id, self.seen.get(h)))
                duplicate_of[slot.id] = self.seen.get(h, "")
                self.counters.duplicates += 1
                continue
            self.seen[h] = slot.id
            fresh.append(cand)
        budget_left = self.settings.budgets.evaluations - self.counters.evaluations
        return fresh[:max(0, budget_left)], duplicate_of

    def _evaluate(self, cands: list[Candidate]) -> dict[str, Evaluation]:
        out: dict[str, Evaluation] = {}
        todo = []
        for cand in cands:
            event = self.replay.evaluations.get(cand.id)
            if event is not None:
                out[cand.id] = event.evaluation
                self.counters.evaluations += 1
            else:
                todo.append(cand)
        for _, evaluation in self.pool.evaluate(todo):
            self.store.record(EvaluationEvent(evaluation))
            out[evaluation.id] = evaluation
            self.counters.evaluations += 1
            self.progress.update(self.counters)
        return out

    def _absorb(self, slot: Slot, selection: Selection, program: JudgedProgram) -> None:
        self.strategy.absorb(slot.slot, selection, program)
        if self.models is not None and slot.proposer == "llm":
            self.models.record(program, selection.parent)
        ev = program.evaluation
        if ev is None:
            return
        cand = program.candidate
        self.counters.accepted += int(ev.accepted)
        self.ledger.island(selection.niche).record(cand.tractable_class, cand.code, ev.accepted, verdict=ev.verdict)
        summary = None
        if ev.score[0] > 0 and (self.best is None or tuple(ev.score) > self.best[0]):  # failed programs never lead
            self.best = (tuple(ev.score), cand.id)
            self.store.record(PromotionEvent(cand.id, ev.score))
            self.store.write_best(cand, ev.verdict)
            n = ev.verdict.numerical.largest_n_verified
            self.store.log(f"new best {cand.id}: {ev.verdict.verdict}, class {cand.tractable_class}, "
                           f"largest verified n {n}")
            summary = f"{cand.id} {ev.verdict.verdict} {cand.tractable_class} n<={n}"
        self.progress.update(self.counters, best=summary)
