"""The engine: plan -> propose -> deduplicate -> evaluate -> journal -> snapshot, generation by generation.

It knows no strategy and no Ray: a :class:`~search.strategies.Strategy` chooses each slot's
parent and keeps what it wants of the judged programs, a pool runs proposals and evaluations (a
:class:`~evolve.engine.protocols.Pool`: Ray actors or this process, one dispatcher,
:mod:`evolve.engine.dispatch`), the run store (a :class:`~evolve.engine.protocols.Store`) journals
every event as it happens (fsynced) and holds snapshots. One generation:

1. plan its slots (which proposer writes each; deterministic in seed, generation, slot);
2. select: ask the strategy for each slot's parent, inspirations and niche, choose the model of
   each LLM slot (:mod:`evolve.engine.models`: weights or the bandit) and take the negative-prompting
   block of its niche;
3. launch: propose in parallel, deduplicate in slot order (normalised code hash; the strategy may
   ask for repeats to be judged), queue the evaluations within the evaluation budget: at once
   while an evaluator is idle, else together, the longest claimed cost first
   (:mod:`evolve.engine.schedule`);
4. finish: collect the evaluations (each journaled as it arrives), hand every slot's outcome to the
   strategy in slot order, track the best program, feed the negative-prompting memory of the
   slot's niche and the model bandit, journal the strategy's housekeeping events;
5. snapshot every ``checkpoint_interval`` generations.

Overlap. A generation ends with its slowest evaluation; waiting for it left half of the
evaluators idle (``evolve perf search``: busy 54%). So, when the strategy allows it
(``overlaps_generations``: islands and tree, not the paper's refine chains) and the config does
(``run.overlap_generations``), generation g + 1 is launched before generation g is finished, and
its evaluations queue behind g's: an evaluator that is free takes the next one. The price is one
generation of lag: generation g's parents are chosen from what was judged up to g - 2 (generation 1
waits for generation 0, so nothing is chosen blind). The order of every strategy call is fixed by
the generation numbers, not by timing, so a run is the same whichever evaluation ends first. A
generation is selected before the budget is known to allow it and launched only when it does, so
a run stopped by a budget and resumed with a larger one (``evolve resume --extra-evaluations ...``) makes the
choices an uninterrupted run would have. Snapshots carry the open generations
(:mod:`evolve.engine.generation`).

The wall-time budget is a deadline, not only a rule between generations: the pool is given it,
and when it passes with work still in flight (on Ray: an evaluator no node can place, a provider
that never answers) the run ends there; that work was never journaled, so a resume with more
wall time redoes it. status.json's counts follow the run (every few seconds), so ``evolve runs``
shows a live run's progress.

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

from evolve.config import Budgets
from evolve.engine.counters import Counters, conclusive, stop_reason
from evolve.engine.generation import Generation
from evolve.engine.models import ModelChooser
from evolve.engine.plan import Replay, Slot, plan_generation
from evolve.engine.progress import Progress
from evolve.engine.protocols import Pool, Store
from evolve.engine.schedule import longest_first
from evolve.engine.termination import WallTimeReached
from evolve.store.events import (BudgetEvent, DuplicateEvent, EvaluationEvent, ProposalEvent, PromotionEvent,
                                 SystemPromptEvent)
from search.candidate import Candidate
from search.database import normalised_hash, score_judged
from search.llm.client import FATAL_KINDS, api_error_kind
from search.llm.config import LLMConfig
from search.negative import NegativeLedger, NegativePolicy
from search.proposers import proposer_class
from search.prompts import text_digest
from search.records import Evaluation, JudgedProgram, ProposalRequest, Selection

STATE_SCHEMA = 3   # 3: the open generations (evolve.engine.generation.Generation.to_state)
STATUS_INTERVAL_S = 5.0   # how often status.json's counts follow a running run


@dataclass(frozen=True)
class EngineSettings:
    seed: int
    batch_size: int
    checkpoint_interval: int
    budgets: Budgets
    weights: dict                     # proposer name -> mixing weight, in config order
    negative: NegativePolicy = NegativePolicy()
    llm: LLMConfig | None = None      # the models the llm proposer may call (the engine picks one per slot)
    overlap: bool = True              # launch the next generation while this one's evaluations finish
    lattice: bool = False             # the task is an L x L lattice (how claims in L are read when ordering)


class Engine:
    def __init__(self, settings: EngineSettings, strategy, pool: Pool, store: Store, progress: Progress,
                 replay: Replay | None = None):
        self.settings, self.strategy, self.pool, self.store, self.progress = settings, strategy, pool, store, progress
        self.replay = replay or Replay()
        self.counters = Counters()
        self.ledger = NegativeLedger()
        self.seen: dict[str, str] = {}           # normalised code hash -> id of the first program with it
        self.best: tuple[tuple, str] | None = None   # (score, id) of the best judged program
        self.models = (ModelChooser(settings.llm, settings.seed)
                       if settings.llm is not None and any(w > 0 and _calls_models(p) for p, w in settings.weights.items())
                       else None)
        self.system_prompts: set[str] = set(self.replay.system_prompts)   # digests already journaled
        self.fatal: str | None = None            # why the run cannot go on (set by a generation)
        self.open: list[Generation] = []         # selected or launched, not yet finished, oldest first
        self._started = time.monotonic()
        self._elapsed_before = 0.0
        self._status_at = -STATUS_INTERVAL_S     # when status.json's counts were last written

    # -- state --------------------------------------------------------------------------------
    def state(self) -> dict:
        self.counters.elapsed_s = self._elapsed()
        return {"schema": STATE_SCHEMA, "counters": asdict(self.counters), "negative": self.ledger.to_dict(),
                "seen": dict(self.seen), "best": None if self.best is None else
                {"score": list(self.best[0]), "id": self.best[1]}, "strategy": self.strategy.state(),
                "models": None if self.models is None else self.models.state(),
                "system_prompts": sorted(self.system_prompts), "open": [g.to_state() for g in self.open]}

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
        self.open = [Generation.from_state(g) for g in state["open"]]

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

    @property
    def overlap(self) -> bool:
        """Whether generations overlap: the settings allow it, the strategy tolerates one generation
        of lag in its parents, and no accept is meant to end the run at once."""
        return (self.settings.overlap and self.strategy.overlaps_generations
                and not self.settings.budgets.stop_when_accepted)

    def run(self) -> str:
        """Run generations until a budget says stop; returns why it stopped."""
        self.pool.set_deadline(time.monotonic() + max(0.0, self.settings.budgets.wall_time_s - self._elapsed()))
        try:
            while True:
                self._select_ahead()
                self._launch_selected()
                if not self.open or not self.open[0].launched:
                    break
                self._finish(self.open.pop(0))
                self.counters.generation += 1
                if self.counters.generation % self.settings.checkpoint_interval == 0:
                    self.snapshot()
        except WallTimeReached as stop:
            # no snapshot here: the open generations are half done, and a resume takes what arrived from
            # the journal (as after a kill) and redoes the rest
            self._show()
            return (f"wall-time budget reached ({self.settings.budgets.wall_time_s:.0f} s) with {stop.in_flight} "
                    "request(s) still waiting (not journaled: `evolve resume --extra-wall-time S` redoes them)")
        self.snapshot()
        return self.stop_reason() or "nothing left to do"

    def _show(self, best: str | None = None) -> None:
        """The progress line, and status.json's counts every ``STATUS_INTERVAL_S``."""
        self.progress.update(self.counters, best=best)
        now = time.monotonic()
        if now - self._status_at >= STATUS_INTERVAL_S:
            self._status_at = now
            self.counters.elapsed_s = self._elapsed()
            self.store.set_status("running", **asdict(self.counters))

    def _select_ahead(self) -> None:
        """Select every generation the lag rule allows now. Without overlap: the next one, once the
        previous is finished and while the budgets allow. With overlap: generation g once g - 2 is
        finished (g = 1 once g = 0 is, so that no generation is chosen blind), even when a budget
        is spent, so that a run stopped by its budget and resumed with more selects exactly what
        an uninterrupted run would have (it launches them only if the budgets allow)."""
        while True:
            g = self.counters.generation + len(self.open)
            if self.overlap:
                if self.fatal or self.strategy.finished() or g - self.counters.generation > (1 if g > 1 else 0):
                    return
            elif self.open or self.stop_reason() is not None:
                return
            self.open.append(self._select(g))

    def _select(self, g: int) -> Generation:
        s = self.settings
        # overlapping generations are selected before their budget is known: plan the full batch, and
        # launch only the slots the proposal budget allows
        remaining = s.batch_size if self.overlap else s.budgets.proposals - self.counters.proposals
        slots = plan_generation(g, s.batch_size, s.weights, s.seed, remaining)
        selections = self.strategy.select(g, len(slots))
        llm = [slot for slot in slots if _calls_models(slot.proposer)]
        # every LLM slot draws, replayed ones too, so a resumed generation chooses what the first run did
        models = self.models.choose(llm) if self.models is not None else {}
        negative = {slot.id: tuple(self.ledger.island(sel.niche).block(s.negative).items)
                    for slot, sel in zip(slots, selections) if _calls_models(slot.proposer)}
        return Generation(g, slots, selections, negative, {k: v for k, v in models.items() if v is not None})

    def _launch_selected(self) -> None:
        """Launch the selected generations in order while the budgets allow; queue what launched
        generations restored from a snapshot still have to judge."""
        for gen in self.open:
            if gen.launched:
                if not gen.tickets:
                    self._resubmit(gen)
                continue
            if self.stop_reason() is not None or self._evaluations_left() <= 0:
                return
            self._launch(gen)

    def _evaluations_left(self) -> int:
        """The evaluation budget less what is judged and what is queued or running."""
        return self.settings.budgets.evaluations - self.counters.evaluations - sum(g.waiting for g in self.open)

    def _launch(self, gen: Generation) -> None:
        """Propose, deduplicate, and queue the evaluations of a selected generation.

        Proposals are deduplicated in slot order as the prefix of arrived slots grows. While an
        evaluator is idle, what is ready is queued at once; the rest is queued together at the
        end, longest first (:mod:`evolve.engine.schedule`). Which programs are judged does not
        depend on this timing, only when."""
        remaining = self.settings.budgets.proposals - self.counters.proposals
        slots = gen.slots[:max(0, remaining)]
        # proposers that can use it are told what the run has proposed (launch order fixes it: deterministic)
        users = {s.proposer for s in slots if proposer_class(s.proposer).uses_known}
        told = dict.fromkeys(users, frozenset(self.seen)) if users else {}   # no copy of seen for LLM-only runs
        gen.launched = True
        ready, waiting = 0, []            # slots deduplicated so far (a prefix); fresh ones not queued yet
        for slot_id, cand in self._propose(slots, gen.selections, gen.requests(self.settings.seed, len(slots), told)):
            gen.candidates[slot_id] = cand
            while ready < len(slots) and slots[ready].id in gen.candidates:
                waiting += self._deduplicate(slots[ready], gen)
                ready += 1
            if waiting and self.pool.idle_evaluators() > 0:
                self._submit(gen, waiting)
                waiting = []
        self._check_fatal([gen.candidates[s.id] for s in slots if _calls_models(s.proposer)])
        self._submit(gen, waiting)

    def _submit(self, gen: Generation, candidates: list[Candidate]) -> None:
        """Queue ``candidates`` (fresh programs of ``gen`` in slot order) within the evaluation budget."""
        candidates = candidates[:max(0, self._evaluations_left())]
        gen.fresh += candidates
        self._queue(gen, candidates)

    def _resubmit(self, gen: Generation) -> None:
        """Queue what a launched generation restored from a snapshot still has to judge."""
        self._queue(gen, gen.fresh)

    def _queue(self, gen: Generation, candidates: list[Candidate]) -> None:
        """One batch of the pool for those of ``candidates`` not judged yet, longest first; those in
        the journal are taken, not judged again."""
        todo = []
        for cand in candidates:
            event = self.replay.evaluations.get(cand.id)
            if cand.id in gen.arrived:
                continue
            if event is not None:
                gen.arrived[cand.id] = event.evaluation
                self.counters.evaluations += 1
            else:
                todo.append(cand)
        gen.tickets.append(self.pool.submit_evaluations(longest_first(todo, self.settings.lattice),
                                                        self._arrival(gen)))

    def _arrival(self, gen: Generation):
        def arrived(_: int, evaluation: Evaluation) -> None:  # journaled the moment it arrives
            self.store.record(EvaluationEvent(evaluation))
            gen.arrived[evaluation.id] = evaluation
            self.counters.evaluations += 1
            self._show()
        return arrived

    def _finish(self, gen: Generation) -> None:
        """Wait for ``gen``'s evaluations, then hand every slot's outcome to the strategy in slot order
        (the strategy sees the same sequence in every run of a seed)."""
        for ticket in gen.tickets:
            for _ in self.pool.collect(ticket):
                pass
        for slot, selection, program in gen.outcomes():
            self._absorb(slot, selection, program)
        for event in self.strategy.end_generation(gen.number):
            self.store.record(event)

    def _propose(self, slots: list[Slot], selections: list[Selection], requests: list[ProposalRequest]):
        """(slot id, candidate) of every slot: those in the journal first, then the rest as the
        pool returns them (journaled and counted as they arrive)."""
        asked: list[tuple[Slot, Selection, ProposalRequest]] = []
        replayed = []
        for slot, sel, request in zip(slots, selections, requests):
            event = self.replay.proposals.get(slot.id)
            if event is not None:
                self._count_proposal(event.candidate, show=False)   # all counted before the line is shown
                replayed.append((slot.id, event.candidate))
            else:
                asked.append((slot, sel, request))
        if replayed:
            self._show()
        yield from replayed
        for i, cand in self.pool.propose([r for _, _, r in asked]):
            slot, sel, request = asked[i]
            cand = self._journal_system_prompt(cand)
            self.store.record(ProposalEvent(cand, slot.generation, slot.slot, sel.niche, dict(sel.journal),
                                            request.negative))
            self._count_proposal(cand)
            yield slot.id, cand

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

    def _count_proposal(self, cand: Candidate, show: bool = True) -> None:
        c = self.counters
        c.proposals += 1
        c.tokens += int(cand.tokens_in) + int(cand.tokens_out)
        c.usd += float(cand.cost_usd)
        if not cand.ok:
            c.failed_proposals += 1
        if show:
            self._show()

    def _deduplicate(self, slot: Slot, gen: Generation) -> list[Candidate]:
        """``[candidate]`` of ``slot`` when it is to be judged, else ``[]`` (a failed proposal, or a
        repeat of an earlier program's code, recorded in ``gen.duplicate_of``). Slots are taken in
        slot order, so the first of two equal programs is the one judged."""
        cand = gen.candidates[slot.id]
        if not cand.ok:
            return []
        h = normalised_hash(cand.code)
        if slot.id in self.replay.evaluations or self.strategy.rejudge_duplicates:
            self.seen.setdefault(h, slot.id)
            return [cand]
        if slot.id in self.replay.duplicates or h in self.seen:
            if slot.id not in self.replay.duplicates:
                self.store.record(DuplicateEvent(slot.id, self.seen.get(h)))
            gen.duplicate_of[slot.id] = self.seen.get(h, "")
            self.counters.duplicates += 1
            return []
        self.seen[h] = slot.id
        return [cand]

    def _absorb(self, slot: Slot, selection: Selection, program: JudgedProgram) -> None:
        self.strategy.absorb(slot.slot, selection, program)
        if self.models is not None and _calls_models(slot.proposer):
            self.models.record(program, selection.parent)
        ev = program.evaluation
        if ev is None:
            return
        cand = program.candidate
        self.counters.accepted += int(ev.accepted)
        self.counters.conclusive += int(ev.accepted and conclusive(cand.tractable_class, cand.complexity_O,
                                                                   self.settings.lattice))
        self.ledger.island(selection.niche).record(cand.tractable_class, cand.code, ev.accepted, verdict=ev.verdict)
        summary = None
        if score_judged(ev.score) and (self.best is None or tuple(ev.score) > self.best[0]):  # failed programs never lead
            self.best = (tuple(ev.score), cand.id)
            self.store.record(PromotionEvent(cand.id, ev.score))
            self.store.write_best(cand, ev.verdict)
            n = ev.verdict.numerical.largest_n_verified
            self.store.log(f"new best {cand.id}: {ev.verdict.verdict}, class {cand.tractable_class}, "
                           f"largest verified n {n}")
            summary = f"{cand.id} {ev.verdict.verdict} {cand.tractable_class} n<={n}"
        self._show(best=summary)


def _calls_models(proposer: str) -> bool:
    """Whether the proposer registered as ``proposer`` calls language models (its declared capability)."""
    return proposer_class(proposer).calls_models
