"""The database's configuration: islands, MAP-Elites grid, selection, migration, resets.

Defaults: 4 islands (FunSearch uses 10 with far larger budgets; 4 keeps each island fed in a
run of a few hundred evaluations), the four features of :mod:`search.database.features`,
softmax selection at T = 0.05 on fitness in [0, 1], OpenEvolve's parent mix 0.2 / 0.7 / 0.1,
two inspirations (the island's best and one elite of another cell, as many as the prompt
shows), at most two programs per behaviour cluster, ring migration of the best program every
50 evaluations. Resets are off by default (``reset_interval`` / ``stagnation_patience`` 0):
short runs should not throw islands away.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from search.database.features import DEFAULT_FEATURES, FeatureSpace
from search.database.selection import ParentMix, make_strategy

TOPOLOGIES = ("ring", "random")


@dataclass(frozen=True)
class DatabaseConfig:
    islands: int = 4
    features: tuple = DEFAULT_FEATURES
    length_bins: int = 10
    selection: str = "softmax"        # softmax | power_law | weighted | uniform
    temperature: float = 0.05         # softmax T0
    temperature_period: int | None = None  # FunSearch decays T over 30000 evaluations
    power_alpha: float = 1.0
    exploration: float = 0.2
    exploitation: float = 0.7
    elite: float = 0.1
    num_inspirations: int = 2
    top_inspirations: int = 1         # of which the island's best (other than the parent)
    max_per_cluster: int = 2
    migration_interval: int = 50      # evaluations between migrations; 0 = never
    migration_count: int = 1          # best programs copied per island
    migration_topology: str = "ring"
    reset_interval: int = 0           # evaluations between weaker-half resets; 0 = never
    reset_fraction: float = 0.5
    stagnation_patience: int = 0      # island evaluations without a new best; 0 = never

    def __post_init__(self):
        object.__setattr__(self, "features", tuple(self.features))
        if self.islands < 1:
            raise ValueError("islands must be at least 1")
        if self.migration_topology not in TOPOLOGIES:
            raise ValueError(f"migration_topology must be one of {TOPOLOGIES}")
        if not 0.0 <= self.reset_fraction < 1.0:
            raise ValueError("reset_fraction must be in [0, 1)")
        FeatureSpace(self.features, self.length_bins)
        self.strategy()
        self.mix()

    def strategy(self):
        params = {"softmax": {"temperature": self.temperature, "period": self.temperature_period},
                  "power_law": {"alpha": self.power_alpha}}.get(self.selection, {})
        return make_strategy(self.selection, **params)

    def mix(self) -> ParentMix:
        return ParentMix(self.exploration, self.exploitation, self.elite)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["features"] = list(self.features)
        return d

    @classmethod
    def from_dict(cls, d: dict | None) -> "DatabaseConfig":
        return cls(**(d or {}))
