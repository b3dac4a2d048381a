"""Parent and inspiration selection: small swappable strategy objects.

A strategy maps the programs of one island (best first) to selection probabilities
(:meth:`probabilities`, exact, so tests can check distributions) and draws from them with a
``numpy.random.Generator`` the caller passes in (:meth:`pick`): the same generator state gives
the same choice, and the strategies themselves hold no state.

- :class:`SoftmaxSelection` (FunSearch): clusters of equal behaviour signature are drawn by
  softmax of their best fitness / T, then a program inside the cluster by softmax of its
  negative normalised length (shorter preferred). With ``period`` set, T decays as
  T0 (1 - (step mod period) / period). Fitness lies in [0, 1] (see
  :func:`search.database.program.fitness`): accepted programs sit 0.2-0.5 above rejected ones,
  so the default T = 0.05 favours them by e^4 or more while still sampling the rest.
- :class:`PowerLawRankSelection`: p proportional to rank^-alpha (rank 1 = best).
- :class:`WeightedSelection` (ShinkaEvolve): sigmoid(10 (f - median) / MAD) / (1 + children).
- :class:`UniformSelection`.

:func:`choose_parent` mixes a strategy with exploration (a uniform pick) and elitism (the
island's best) in the ratios of :class:`ParentMix` (defaults 0.2 / 0.7 / 0.1, OpenEvolve's).
:func:`choose_inspirations` returns the top elites and then elites of other, randomly chosen
cells, never the parent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from search.database.program import Program, score_code_length


def _softmax(logits: np.ndarray) -> np.ndarray:
    z = np.exp(logits - logits.max())
    return z / z.sum()


class SelectionStrategy:
    name = "base"

    def probabilities(self, programs: Sequence[Program], step: int = 0) -> np.ndarray:
        raise NotImplementedError

    def pick(self, programs: Sequence[Program], rng: np.random.Generator, step: int = 0) -> Program:
        p = self.probabilities(programs, step)
        return programs[int(rng.choice(len(programs), p=p))]


@dataclass(frozen=True)
class SoftmaxSelection(SelectionStrategy):
    temperature: float = 0.05
    period: int | None = None  # FunSearch: 30000 (in evaluations)
    name = "softmax"

    def current_temperature(self, step: int) -> float:
        if not self.period:
            return self.temperature
        return self.temperature * (1.0 - (step % self.period) / self.period)

    def probabilities(self, programs, step=0):
        t = max(self.current_temperature(step), 1e-9)
        clusters: dict[str, list[int]] = {}
        for i, p in enumerate(programs):
            clusters.setdefault(p.signature, []).append(i)
        keys = sorted(clusters)
        best = np.array([max(programs[i].fitness for i in clusters[k]) for k in keys])
        p_cluster = _softmax(best / t)
        out = np.zeros(len(programs))
        for k, pc in zip(keys, p_cluster):
            idx = clusters[k]
            lengths = np.array([score_code_length(programs[i].score) for i in idx])
            norm = (lengths - lengths.min()) / (lengths.max() + 1e-6)
            out[idx] = pc * _softmax(-norm)
        return out / out.sum()


@dataclass(frozen=True)
class PowerLawRankSelection(SelectionStrategy):
    alpha: float = 1.0
    name = "power_law"

    def probabilities(self, programs, step=0):
        order = sorted(range(len(programs)), key=lambda i: programs[i].rank_key())
        w = np.zeros(len(programs))
        w[order] = np.arange(1, len(programs) + 1, dtype=float) ** -self.alpha
        return w / w.sum()


@dataclass(frozen=True)
class WeightedSelection(SelectionStrategy):
    sharpness: float = 10.0
    name = "weighted"

    def probabilities(self, programs, step=0):
        f = np.array([p.fitness for p in programs])
        med = np.median(f)
        mad = np.median(np.abs(f - med))
        x = np.clip(self.sharpness * (f - med) / max(mad, 1e-12), -500.0, 500.0)
        w = 1.0 / (1.0 + np.exp(-x)) / (1.0 + np.array([p.children for p in programs], dtype=float))
        w = np.maximum(w, 1e-300)
        return w / w.sum()


@dataclass(frozen=True)
class UniformSelection(SelectionStrategy):
    name = "uniform"

    def probabilities(self, programs, step=0):
        return np.full(len(programs), 1.0 / len(programs))


STRATEGIES = {"softmax": SoftmaxSelection, "power_law": PowerLawRankSelection,
              "weighted": WeightedSelection, "uniform": UniformSelection}


def make_strategy(name: str, **params) -> SelectionStrategy:
    """``make_strategy("softmax", temperature=0.1, period=30000)``; unknown names raise ValueError."""
    if name not in STRATEGIES:
        raise ValueError(f"unknown selection {name!r}; choose from {sorted(STRATEGIES)}")
    return STRATEGIES[name](**params)


@dataclass(frozen=True)
class ParentMix:
    exploration: float = 0.2   # uniform over the island
    exploitation: float = 0.7  # the strategy
    elite: float = 0.1         # the island's best

    def __post_init__(self):
        parts = (self.exploration, self.exploitation, self.elite)
        if min(parts) < 0 or sum(parts) <= 0:
            raise ValueError(f"parent mix ratios must be >= 0 with a positive sum, got {parts}")


def choose_parent(ranked: Sequence[Program], strategy: SelectionStrategy, mix: ParentMix,
                  rng: np.random.Generator, step: int = 0) -> Program:
    """One parent from ``ranked`` (non-empty, best first); always draws one uniform number first."""
    total = mix.exploration + mix.exploitation + mix.elite
    r = rng.random() * total
    if r < mix.exploration:
        return ranked[int(rng.integers(len(ranked)))]
    if r < mix.exploration + mix.exploitation:
        return strategy.pick(ranked, rng, step)
    return ranked[0]


def choose_inspirations(ranked: Sequence[Program], parent: Program | None, k: int, top: int,
                        cell_of: Callable[[Program], str], rng: np.random.Generator) -> list[Program]:
    """Up to ``k`` programs: the ``top`` best other than the parent, then elites of randomly
    chosen cells not yet represented (the parent's cell included), then any others at random."""
    pool = [p for p in ranked if parent is None or p.id != parent.id]
    k = max(0, min(k, len(pool)))
    chosen = pool[:min(top, k)]
    taken = {p.id for p in chosen}
    used = {cell_of(p) for p in chosen} | ({cell_of(parent)} if parent is not None else set())
    diverse = [p for p in pool if p.id not in taken and cell_of(p) not in used]
    for group in (diverse, None):
        if group is None:
            group = [p for p in pool if p.id not in taken]
        for i in rng.permutation(len(group)):
            if len(chosen) >= k:
                break
            chosen.append(group[int(i)])
            taken.add(group[int(i)].id)
    return chosen
