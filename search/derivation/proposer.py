"""The derivation proposer: candidates whose programs are checked chains of transformations.

``DerivationProposer(seed).propose(task)`` derives the task from its formula alone
(search/derivation/engine.py) and returns the best chain's program as a Candidate, with the chain in
``Candidate.derivation`` and the plan in ``prompt_meta["derivation_plan"]``. With a parent whose plan
is recorded, it proposes an alternative: another chain the search found (the next one in cost order),
or the same chain with one solver option changed; every step of it is checked again. Derivations are
cached per task and formula, so repeated proposals cost nothing. Deterministic for a given seed.
"""

from __future__ import annotations

import numpy as np

from evaluators.sandbox import Sandbox
from search.candidate import Candidate
from search.database.dedup import normalised_hash
from search.derivation.engine import derive, derive_plan
from search.derivation.record import Derivation, Plan
from search.derivation.solvers import get_solver
from tasks.base import Task

PROPOSER = "derivation"
#: probability that a mutation changes a solver option rather than the chain
OPTION_MUTATION_P = 0.3
#: chains derived at most, past the best, to find a program the run does not have yet
FRESH_TRIES = 3


class DerivationProposer:
    """Offline proposer: a search over chains of checked transformations, from the task's formula."""

    name = PROPOSER

    def __init__(self, seed: int = 0, sandbox: Sandbox | None = None, formulas: dict | None = None):
        """``formulas`` maps a task id to (formula, source text) to derive from instead of the task's own
        formula (a generated paraphrase, say)."""
        self.seed = int(seed)
        self.rng = np.random.default_rng(self.seed)
        self.sandbox = sandbox
        self.formulas = dict(formulas or {})
        self._derivations: dict[tuple, Derivation] = {}

    def derivation(self, task: Task, plan: Plan | None = None) -> Derivation:
        """The (cached) derivation of ``task``: the search's best, or the given plan checked."""
        formula, source = self.formulas.get(task.id, (task.formula, "the task's formula"))
        key = (task.id, id(formula), None if plan is None else (
            tuple((a, repr(sorted(o.items()))) for a, o in plan.actions), plan.solver,
            repr(sorted(plan.solver_options.items()))))
        if key not in self._derivations:
            if plan is None:
                self._derivations[key] = derive(task, formula, source, seed=self.seed, sandbox=self.sandbox)
            else:
                self._derivations[key] = derive_plan(task, plan, formula, source, seed=self.seed, sandbox=self.sandbox)
        return self._derivations[key]

    def propose(self, task: Task, parent: Candidate | None = None, rng: np.random.Generator | None = None,
                known: frozenset = frozenset()) -> Candidate:
        """The best derivation of ``task``, or an alternative to ``parent``'s. ``known``: normalised
        hashes of the programs the run already has; without a parent, a chain whose program is among
        them is passed over for the next one in cost order (at most :data:`FRESH_TRIES` are derived)."""
        rng = self.rng if rng is None else rng
        cid = f"{int(rng.integers(1 << 48)):012x}"
        best = self.derivation(task)
        operation = "initial: the cheapest checked chain found by the search"
        chosen = best
        parent_plan = _parent_plan(parent)
        answer = self._answer(best, parent, known)
        if answer is not None:
            return to_answer_candidate(best, answer, cid, task.id, parent)
        if parent_plan is not None and best.plans:
            plan, operation = self.mutate(best, parent_plan, rng)
            chosen = self.derivation(task, plan)
        elif known and best.program is not None and normalised_hash(best.program) in known:
            for k, plan in enumerate(best.plans[1:FRESH_TRIES + 1], 1):
                other = self.derivation(task, plan)
                if other.program is not None and normalised_hash(other.program) not in known:
                    chosen, operation = other, f"initial: chain {k + 1} in cost order (the cheaper ones are known)"
                    break
        return to_candidate(chosen, cid, task.id, parent, operation)

    def _answer(self, best: Derivation, parent: Candidate | None, known: frozenset):
        """The answer (bounds or approximation) to propose instead of an exact chain, or None: when nothing
        polynomial is exact, the answers come after the best exact program, in order, each once (a parent
        that is an answer, or a best program the run already has, moves on to the next unknown one)."""
        if not best.answers or best.program is None:
            return None
        programs = [best.program] + [a.program for a in best.answers]
        kind = (parent.prompt_meta or {}).get("answer_kind") if parent is not None else None
        start = 1 + [a.kind for a in best.answers].index(kind) if kind in [a.kind for a in best.answers] else 0
        if parent is None and not (known and normalised_hash(best.program) in known):
            return None
        for k in list(range(start + 1, len(programs))) + list(range(1, start + 1)):
            if normalised_hash(programs[k]) not in known:
                return best.answers[k - 1]
        return None

    def mutate(self, best: Derivation, plan: Plan, rng: np.random.Generator) -> tuple[Plan, str]:
        """Another plan: one solver option changed, or the next chain in cost order."""
        space = get_solver(plan.solver).OPTION_SPACE
        moves = [(k, v) for k, values in space.items() for v in values if plan.solver_options.get(k) != v]
        others = [p for p in best.plans if p.key != plan.key]
        if moves and (not others or rng.random() < OPTION_MUTATION_P):
            key, value = moves[int(rng.integers(len(moves)))]
            new = Plan(plan.actions, plan.solver, {**plan.solver_options, key: value}, plan.labels, plan.complexity,
                       plan.justification, plan.cost)
            return new, f"mutate {plan.solver}: {key} {plan.solver_options.get(key)!r} -> {value!r}"
        if others:
            keys = [p.key for p in best.plans]
            at = keys.index(plan.key) if plan.key in keys else -1
            after = [p for p in best.plans[at + 1:] if p.key != plan.key] or others
            return after[0], f"next chain: {plan.key} -> {after[0].key}"
        return plan, "no alternative: the same chain again"


def to_candidate(d: Derivation, cid: str, task_id: str, parent: Candidate | None = None,
                 operation: str = "") -> Candidate:
    """The Candidate of a derivation (a failed candidate, with the record, when it has no program)."""
    provenance = dict(proposer=PROPOSER, parent_ids=[parent.id] if parent is not None else [],
                      derivation=d.record())
    if d.program is None:
        failed = Candidate.failed(cid, task_id, f"derivation proposer: {d.error}", **provenance)
        failed.notes = [f"failed step {s.action}: {s.check.text()}" for s in d.failed] + list(d.diagnosis)
        return failed
    return Candidate(
        id=cid, task=task_id, code=d.program, tractable_class=d.tractable_class, complexity_O=d.complexity_O,
        confidence=d.confidence, justification=d.justification,
        prompt_meta={"derivation_plan": d.plan.to_dict(), "operation": operation, "source": d.source,
                     "chain": d.chain},
        notes=[f"chains found: {', '.join(p.key for p in d.plans[:8])}"] + list(d.findings)
        + [f"failed step {s.action}: {s.check.text()}" for s in d.failed],
        **provenance)


def to_answer_candidate(d: Derivation, answer, cid: str, task_id: str, parent: Candidate | None = None) -> Candidate:
    """The Candidate of one of a derivation's answers (bounds or an approximation after the chain)."""
    steps = [s.to_dict() for s in d.steps[:len(answer.actions) + 1]]
    record = steps + [{"action": "solve", "summary": answer.key.split(" -> ")[-1],
                       "params": {name: o for name, o in answer.solvers}, "answer": answer.to_dict(),
                       "claims": {"tractable_class": "no_efficient_known", "complexity_O": answer.complexity}}]
    return Candidate(
        id=cid, task=task_id, code=answer.program, tractable_class="no_efficient_known",
        complexity_O=answer.complexity, confidence=0.8 if answer.check.passed else 0.3,
        justification=(f"No polynomial exact method was found; an answer of kind {answer.kind} after the checked "
                       f"chain {answer.key}: {answer.justification} [check {answer.check.text()}]"),
        proposer=PROPOSER, parent_ids=[parent.id] if parent is not None else [], derivation=record,
        prompt_meta={"answer_kind": answer.kind, "answer_plan": answer.to_dict(), "source": d.source,
                     "chain": answer.key, "operation": f"answer: {answer.kind} after the checked reduction"},
        notes=[f"answers found: {', '.join(a.kind + ' ' + a.key for a in d.answers)}"])


def _parent_plan(parent: Candidate | None) -> Plan | None:
    raw = (parent.prompt_meta or {}).get("derivation_plan") if parent is not None else None
    if not isinstance(raw, dict):
        return None
    try:
        return Plan(tuple((a, dict(o)) for a, o in raw["actions"]), raw["solver"], dict(raw["solver_options"]),
                    tuple(raw["labels"]), raw["complexity"], "", tuple(raw["cost"]))
    except (KeyError, TypeError, ValueError):
        return None
