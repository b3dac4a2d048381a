"""Which model writes the next proposal: fixed weights, or a cost-aware UCB bandit.

The bandit follows ShinkaEvolve (see docs/llm.md, "Which model"): the reward of a proposal is the
improvement of the child over the better of its parent and a baseline, clipped at 0
(:func:`improvement_reward`); every update discounts all arms' statistics by ``decay`` (0.95)
so the bandit follows models whose usefulness changes over a run; an arm's value is its
discounted mean reward divided by its discounted mean cost in USD (cost-aware), normalised by
the best arm's so the exploration bonus ``c * sqrt(log(N) / n_arm)`` has a fixed scale. Arms
never pulled are tried first. All randomness comes from the generator the caller passes, and
the state is plain data (``to_dict``/``from_dict``) for checkpoints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def improvement_reward(child: float | None, parent: float | None, baseline: float = 0.0) -> float:
    """``max(0, child - max(parent, baseline))``; a child without a score earns 0."""
    if child is None or not math.isfinite(child):
        return 0.0
    ref = baseline if parent is None or not math.isfinite(parent) else max(parent, baseline)
    return max(0.0, float(child) - ref)


@dataclass
class Arm:
    n: float = 0.0  # discounted number of pulls
    reward: float = 0.0  # discounted sum of rewards
    cost: float = 0.0  # discounted sum of USD
    pulls: int = 0  # raw count


class ModelBandit:
    def __init__(self, arms: list[str], decay: float = 0.95, exploration: float = 1.0,
                 cost_aware: bool = True, cost_floor_usd: float = 1e-6):
        if not arms:
            raise ValueError("the bandit needs at least one arm")
        if len(set(arms)) != len(arms):
            raise ValueError("arm names must be distinct")
        if not 0.0 < decay <= 1.0:
            raise ValueError("decay must be in (0, 1]")
        self.names = list(arms)
        self.arms = {a: Arm() for a in arms}
        self.decay = decay
        self.exploration = exploration
        self.cost_aware = cost_aware
        self.cost_floor_usd = cost_floor_usd

    def values(self) -> dict[str, float]:
        """Normalised efficiency (reward per cost) of every pulled arm, in [0, 1]."""
        eff = {}
        for name, a in self.arms.items():
            if a.n <= 0:
                continue
            mean_r = a.reward / a.n
            mean_c = max(a.cost / a.n, self.cost_floor_usd) if self.cost_aware else 1.0
            eff[name] = mean_r / mean_c
        top = max(eff.values(), default=0.0)
        return {k: (v / top if top > 0 else 0.0) for k, v in eff.items()}

    def scores(self) -> dict[str, float]:
        """UCB score of every arm (inf for arms never pulled)."""
        vals = self.values()
        total = sum(a.n for a in self.arms.values())
        out = {}
        for name, a in self.arms.items():
            if a.pulls == 0 or a.n <= 0:
                out[name] = math.inf
            else:
                out[name] = vals[name] + self.exploration * math.sqrt(math.log(max(total, 1.0) + 1.0) / a.n)
        return out

    def select(self, rng: np.random.Generator) -> str:
        """The arm with the highest score; ties broken by ``rng``."""
        sc = self.scores()
        best = max(sc.values())
        tied = [n for n in self.names if sc[n] == best or (math.isfinite(best) and abs(sc[n] - best) < 1e-12)]
        return tied[int(rng.integers(len(tied)))] if len(tied) > 1 else tied[0]

    def select_batch(self, rngs: list[np.random.Generator]) -> list[str]:
        """One arm per generator, for proposals made before any of their outcomes is known: after
        each pick the arm gets a provisional pull at its current means (its value stays, its
        exploration bonus shrinks), so a batch spreads over arms instead of repeating the top one.
        The bandit itself is not changed."""
        probe = ModelBandit.from_dict(self.to_dict())
        out = []
        for rng in rngs:
            arm = probe.select(rng)
            out.append(arm)
            a = probe.arms[arm]
            mean_r, mean_c = (a.reward / a.n, a.cost / a.n) if a.n > 0 else (0.0, 0.0)
            a.n += 1.0
            a.reward += mean_r
            a.cost += mean_c
            a.pulls += 1
        return out

    def update(self, arm: str, reward: float, cost_usd: float) -> None:
        """Record one proposal of ``arm``: its (clipped) reward and what it cost."""
        if arm not in self.arms:
            raise KeyError(f"unknown arm {arm!r}")
        for a in self.arms.values():
            a.n *= self.decay
            a.reward *= self.decay
            a.cost *= self.decay
        a = self.arms[arm]
        a.n += 1.0
        a.reward += max(0.0, float(reward))
        a.cost += max(0.0, float(cost_usd))
        a.pulls += 1

    def to_dict(self) -> dict:
        return {"decay": self.decay, "exploration": self.exploration, "cost_aware": self.cost_aware,
                "cost_floor_usd": self.cost_floor_usd, "names": list(self.names),
                "arms": {k: {"n": a.n, "reward": a.reward, "cost": a.cost, "pulls": a.pulls} for k, a in self.arms.items()}}

    @classmethod
    def from_dict(cls, d: dict) -> "ModelBandit":
        b = cls(list(d["names"]), d["decay"], d["exploration"], d["cost_aware"], d["cost_floor_usd"])
        for k, v in d["arms"].items():
            b.arms[k] = Arm(float(v["n"]), float(v["reward"]), float(v["cost"]), int(v["pulls"]))
        return b


def select_by_weight(names: list[str], weights: list[float], rng: np.random.Generator) -> str:
    """One name drawn with probability proportional to its weight."""
    w = np.asarray(weights, dtype=float)
    if len(names) != len(w) or not len(names):
        raise ValueError("need one weight per model and at least one model")
    if np.any(w < 0) or not np.isfinite(w).all() or w.sum() <= 0:
        raise ValueError("model weights must be finite, non-negative and not all zero")
    return names[int(rng.choice(len(names), p=w / w.sum()))]
