"""Which model writes each LLM slot, chosen by the engine: by the configured weights, or by the
cost-aware bandit (``llm.selection: bandit``, :class:`search.llm.bandit.ModelBandit`) that learns
from every outcome during the run.

The choice for a slot is drawn from a generator seeded by (run seed, generation, slot), so a
resumed run chooses what the uninterrupted one chose; the bandit's statistics are the only state
and go into the engine's snapshot. The reward of an outcome is
:func:`search.llm.bandit.improvement_reward` of the child's fitness (``search.database.fitness``
of its score; a proposal that was not judged earns 0) over its parent's, its cost the
proposal's USD.
"""

from __future__ import annotations

import numpy as np

from search.database import fitness
from search.llm.bandit import ModelBandit, improvement_reward, select_by_weight
from search.llm.config import LLMConfig
from search.records import JudgedProgram


class ModelChooser:
    def __init__(self, config: LLMConfig, seed: int):
        self.config = config
        self.seed = seed
        self.names = [m.name for m in config.models if m.weight > 0 or config.selection == "bandit"]
        self.bandit = (ModelBandit(self.names, config.bandit_decay, config.bandit_exploration)
                       if config.selection == "bandit" and len(self.names) > 1 else None)

    def choose(self, slots: list) -> dict[str, str]:
        """slot id -> model name for the LLM slots of one generation (``slots``: engine Slots, in order)."""
        if not slots:
            return {}
        rngs = [np.random.default_rng([self.seed, s.generation, s.slot, 41]) for s in slots]
        if len(self.names) == 1:
            picks = [self.names[0]] * len(slots)
        elif self.bandit is not None:
            picks = self.bandit.select_batch(rngs)
        else:
            weights = [self.config.model(n).weight for n in self.names]
            picks = [select_by_weight(self.names, weights, rng) for rng in rngs]
        return {s.id: m for s, m in zip(slots, picks)}

    def record(self, program: JudgedProgram, parent: JudgedProgram | None) -> float | None:
        """Feed one LLM slot's outcome to the bandit; returns the reward (None when the model is not an arm)."""
        cand = program.candidate
        if cand.model not in self.names:
            return None
        reward = outcome_reward(program, parent)
        if self.bandit is not None:
            self.bandit.update(cand.model, reward, float(cand.cost_usd))
        return reward

    def state(self) -> dict:
        return {"bandit": None if self.bandit is None else self.bandit.to_dict()}

    def load(self, state: dict | None) -> None:
        if state and state.get("bandit") is not None and self.bandit is not None:
            self.bandit = ModelBandit.from_dict(state["bandit"])


def outcome_reward(program: JudgedProgram, parent: JudgedProgram | None) -> float:
    """The child's fitness over its parent's (clipped at 0); a proposal that was not judged earns 0."""
    child = fitness(program.evaluation.score) if program.evaluation is not None else None
    base = fitness(parent.evaluation.score) if parent is not None and parent.evaluation is not None else None
    return improvement_reward(child, base)
