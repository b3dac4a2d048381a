"""The database's configuration: islands, MAP-Elites grid, selection, migration, resets.

This is the ``database:`` section of a run config (``evolve.config``), with the defaults every
run uses: 2 islands (FunSearch uses 10 with far larger budgets; two keep each island fed in a
run of a few dozen evaluations), the four features of :mod:`search.database.features`, softmax
selection at T = 0.1 on fitness in [0, 1], OpenEvolve's parent mix 0.2 / 0.7 / 0.1, two
inspirations (the island's best and one elite of another cell, as many as the prompt shows), one
program per behaviour cluster, ring migration of each island's best every 16 evaluations, and an
island without a new best for 32 of its own evaluations re-seeded from a surviving one.
Periodic resets of the weaker half are off (``reset_interval`` 0): short runs should not throw
islands away.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from search.database.features import DEFAULT_FEATURES, FeatureSpace
from search.database.selection import ParentMix, make_strategy

TOPOLOGIES = ("ring", "random")
SELECTIONS = ("softmax", "power_law", "weighted", "uniform")


@dataclass(frozen=True)
class DatabaseConfig:
    islands: int = 2
    features: tuple[str, ...] = DEFAULT_FEATURES
    length_bins: int = 10
    selection: str = "softmax"        # softmax | power_law | weighted | uniform
    temperature: float = 0.1          # softmax T0
    temperature_period: int | None = None  # FunSearch decays T over 30000 evaluations
    power_alpha: float = 1.0
    exploration: float = 0.2
    exploitation: float = 0.7
    elite: float = 0.1
    num_inspirations: int = 2
    top_inspirations: int = 1         # of which the island's best (other than the parent)
    max_per_cluster: int = 1
    migration_interval: int = 16      # evaluations between migrations; 0 = never
    migration_count: int = 1          # best programs copied per island
    migration_topology: str = "ring"
    reset_interval: int = 0           # evaluations between weaker-half resets; 0 = never
    reset_fraction: float = 0.5
    stagnation_patience: int = 32     # island evaluations without a new best; 0 = never

    def __post_init__(self):
        object.__setattr__(self, "features", tuple(self.features))
        checks = [
            ("islands", 1 <= self.islands <= 64, "must be in [1, 64]"),
            ("selection", self.selection in SELECTIONS, f"must be one of {', '.join(SELECTIONS)}"),
            ("temperature", self.temperature > 0, "must be positive"),
            ("temperature_period", self.temperature_period is None or self.temperature_period >= 1,
             "must be at least 1 (or null)"),
            ("num_inspirations", self.num_inspirations >= 0, "must be >= 0"),
            ("top_inspirations", self.top_inspirations >= 0, "must be >= 0"),
            ("max_per_cluster", self.max_per_cluster >= 1, "must be at least 1"),
            ("migration_interval", self.migration_interval >= 0, "must be >= 0 (0 = never)"),
            ("migration_count", self.migration_count >= 0, "must be >= 0"),
            ("migration_topology", self.migration_topology in TOPOLOGIES, f"must be one of {', '.join(TOPOLOGIES)}"),
            ("reset_interval", self.reset_interval >= 0, "must be >= 0 (0 = never)"),
            ("reset_fraction", 0.0 <= self.reset_fraction < 1.0, "must be in [0, 1)"),
            ("stagnation_patience", self.stagnation_patience >= 0, "must be >= 0 (0 = never)"),
        ]
        for name, ok, why in checks:
            if not ok:
                raise ValueError(f"{name} {why}")
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
