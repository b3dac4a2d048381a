"""The program database: islands of MAP-Elites archives with swappable selection strategies.

- :mod:`.program`: the stored :class:`Program` and its lexicographic :func:`score_of`;
- :mod:`.features`: MAP-Elites descriptors and behaviour signatures;
- :mod:`.archive`: one island's grid with the cluster cap;
- :mod:`.selection`: parent / inspiration strategies (softmax, power-law rank, weighted, uniform);
- :mod:`.islands`: :class:`ProgramDatabase` (islands, migration, resets, state);
- :mod:`.dedup`: the normalised code hash checked before any evaluation.

Pure Python + numpy; the runtime wraps :class:`ProgramDatabase` in a Ray actor.
"""

from search.database.archive import Archive, Placement
from search.database.config import DatabaseConfig
from search.database.dedup import canonical_code, normalised_hash
from search.database.events import AddResult, MigrationEvent, ResetEvent, Sample
from search.database.features import FeatureSpace, behaviour_signature, measured_growth
from search.database.islands import ProgramDatabase
from search.database.program import (SCORE_FIELDS, NamedScore, Program, fitness, named_score, score_accepted,
                                     score_code_length, score_judged, score_of)
from search.database.selection import (ParentMix, PowerLawRankSelection, SelectionStrategy, SoftmaxSelection,
                                       UniformSelection, WeightedSelection, make_strategy)

__all__ = ["SCORE_FIELDS", "AddResult", "Archive", "DatabaseConfig", "FeatureSpace", "MigrationEvent", "NamedScore",
           "ParentMix", "Placement",
           "PowerLawRankSelection", "Program", "ProgramDatabase", "ResetEvent", "Sample", "SelectionStrategy",
           "SoftmaxSelection", "UniformSelection", "WeightedSelection", "behaviour_signature", "canonical_code",
           "fitness", "make_strategy", "named_score", "normalised_hash", "measured_growth", "score_accepted",
           "score_code_length", "score_judged", "score_of"]
