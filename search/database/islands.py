"""The program database: islands of MAP-Elites archives, ring migration, resets, dedup.

The runtime wraps one :class:`ProgramDatabase` in a Ray actor; only ids and small records
travel. The database holds no RNG: ``sample``/``migrate``/``reset_stagnant`` take a
``numpy.random.Generator`` from the caller (without one, a generator is derived from the
database seed and its counters, so calls stay reproducible). ``state_dict()`` is plain data
(msgpack-ready) and ``from_state_dict`` restores it exactly, counters included.

Islands isolate: a program added to island i is sampled only from island i until migration
copies it (under a new id, ``copy_of`` = the original) into island i+1 (ring). Resets follow
FunSearch: every ``reset_interval`` evaluations the weaker ``reset_fraction`` of the islands,
and at any time an island without a new best for ``stagnation_patience`` of its own
evaluations, is emptied and re-seeded with the best program of a surviving island. The island
holding the global best is never reset.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from search.database.archive import Archive
from search.database.config import DatabaseConfig
from search.database.events import AddResult, MigrationEvent, ResetEvent, Sample
from search.database.features import FeatureSpace
from search.database.program import Program
from search.database.selection import choose_inspirations, choose_parent

SCHEMA = 1


@dataclass
class Island:
    archive: Archive
    evaluations: int = 0  # programs added here (copies not counted)
    improved_at: int = 0  # value of ``evaluations`` at the last new best (or reset)
    failed: int = 0
    resets: int = 0

    def counters(self) -> dict:
        return {"evaluations": self.evaluations, "improved_at": self.improved_at, "failed": self.failed,
                "resets": self.resets}


class ProgramDatabase:
    """Islands of MAP-Elites archives (see the module docstring).

    Typical loop of the runtime: ``h = normalised_hash(code)``; skip if ``seen(h)``, else
    ``mark_seen(h)`` and evaluate; ``add(Program.from_candidate(c, verdict), island)``; then
    ``migrate(rng)`` and ``reset_stagnant(rng)`` (both do nothing until due) and journal their
    events; ``sample(island, rng)`` gives the next parent and inspirations (None: ask for a
    fresh proposal). ``add`` takes ownership of the program (it sets ``island`` and ``seq``).
    """

    def __init__(self, config: DatabaseConfig = DatabaseConfig(), seed: int = 0):
        self.config = config
        self.seed = int(seed)
        self.space = FeatureSpace(config.features, config.length_bins)
        self.strategy = config.strategy()
        self.mix = config.mix()
        self.islands = [Island(Archive(self.space, config.max_per_cluster)) for _ in range(config.islands)]
        self.evaluations = 0  # programs added (all islands)
        self.seq = 0          # programs stored, copies included: the arrival order
        self.last_migration = 0
        self.last_reset = 0
        self._island_of: dict[str, int] = {}
        self._seen: set[str] = set()

    # -- dedup ------------------------------------------------------------------------------
    def seen(self, code_hash: str) -> bool:
        return code_hash in self._seen

    def mark_seen(self, code_hash: str) -> None:
        self._seen.add(code_hash)

    # -- adding and reading -----------------------------------------------------------------
    def add(self, program: Program, island: int) -> AddResult:
        """Record a judged program in ``island``; failed programs are counted, never placed."""
        island = int(island)
        isl = self._island(island)
        if program.id in self._island_of:
            raise ValueError(f"program {program.id} was already added")
        program.island, program.seq = island, self._next_seq()
        self.evaluations += 1
        isl.evaluations += 1
        isl.failed += int(program.failed)
        self._seen.add(program.code_hash)
        self._island_of[program.id] = island
        parent = self.get(program.parent_ids[0]) if program.parent_ids else None
        if parent is not None:
            parent.children += 1
        island_best, global_best = isl.archive.best(), self.best()
        placed = isl.archive.add(program)
        new_island = placed.placed and (island_best is None or program.score > island_best.score)
        new_global = placed.placed and (global_best is None or program.score > global_best.score)
        if new_island:
            isl.improved_at = isl.evaluations
        return AddResult(program.id, island, placed.placed, new_island, new_global, placed.replaced_id,
                         placed.evicted_id, placed.cell, placed.reason)

    def sample(self, island: int, rng: np.random.Generator | None = None) -> Sample | None:
        """A parent (by the strategy and the parent mix) and inspirations from ``island``; None when it is empty."""
        island = int(island)
        archive = self._island(island).archive
        ranked = archive.ranked()
        if not ranked:
            return None
        rng = rng if rng is not None else self._derived_rng(1, island)
        parent = choose_parent(ranked, self.strategy, self.mix, rng, self.evaluations)
        insp = choose_inspirations(ranked, parent, self.config.num_inspirations, self.config.top_inspirations,
                                   archive.cell_of, rng)
        return Sample(island, parent, insp)

    def best(self) -> Program | None:
        return min((b for b in (i.archive.best() for i in self.islands) if b is not None),
                   key=Program.rank_key, default=None)

    def get(self, program_id: str) -> Program | None:
        isl = self._island_of.get(program_id)
        return self.islands[isl].archive.members.get(program_id) if isl is not None else None

    def island_of(self, program_id: str) -> int | None:
        """The island a program was added (or copied) to, also after it left the archive."""
        return self._island_of.get(program_id)

    def programs(self) -> list[Program]:
        """Live programs, island by island, best first."""
        return [p for isl in self.islands for p in isl.archive.ranked()]

    def stats(self) -> dict:
        rows = []
        for i, isl in enumerate(self.islands):
            b = isl.archive.best()
            rows.append({"island": i, "size": len(isl.archive), "cells": len(isl.archive.cells),
                         "clusters": len(isl.archive.clusters()), "best_id": b.id if b else None,
                         "best_score": list(b.score) if b else None,
                         "since_improvement": isl.evaluations - isl.improved_at, **isl.counters()})
        return {"evaluations": self.evaluations, "seen": len(self._seen), "islands": rows}

    # -- migration and resets ---------------------------------------------------------------
    def migrate(self, rng: np.random.Generator | None = None, force: bool = False) -> list[MigrationEvent]:
        """Copy the ``migration_count`` best of every island into its neighbour, when
        ``migration_interval`` evaluations have passed since the last migration (or ``force``)."""
        cfg, k = self.config, len(self.islands)
        due = cfg.migration_interval > 0 and self.evaluations - self.last_migration >= cfg.migration_interval
        if k < 2 or not (due or force):
            return []
        self.last_migration = self.evaluations
        rng = rng if rng is not None else self._derived_rng(2, 0)
        sources = [isl.archive.ranked()[:max(0, cfg.migration_count)] for isl in self.islands]
        events = []
        for i, progs in enumerate(sources):
            for p in progs:
                dest = (i + 1) % k
                if cfg.migration_topology == "random":
                    dest = int(rng.integers(k - 1))
                    dest += int(dest >= i)
                copy, placed = self._copy_into(p, dest)
                events.append(MigrationEvent(i, dest, p.id, copy.id, placed.placed, placed.replaced_id))
        return events

    def reset_stagnant(self, rng: np.random.Generator | None = None) -> list[ResetEvent]:
        """Re-seed stagnant islands, and every ``reset_interval`` evaluations the weaker
        ``reset_fraction``, from the best of a randomly chosen surviving island."""
        cfg, k, best = self.config, len(self.islands), self.best()
        if k < 2 or best is None:
            return []
        rng = rng if rng is not None else self._derived_rng(3, 0)
        keep = best.island
        reasons: dict[int, str] = {}
        if cfg.stagnation_patience > 0:
            for i, isl in enumerate(self.islands):
                if i != keep and isl.evaluations - isl.improved_at >= cfg.stagnation_patience:
                    reasons[i] = "stagnant"
        if cfg.reset_interval > 0 and self.evaluations - self.last_reset >= cfg.reset_interval:
            self.last_reset = self.evaluations
            shuffled = [int(i) for i in rng.permutation(k) if i != keep]  # ties broken at random (FunSearch)
            weakest = sorted(shuffled, key=lambda i: self._best_key(i), reverse=True)
            for i in weakest[:int(k * cfg.reset_fraction)]:
                reasons.setdefault(i, "weaker")
        survivors = [i for i in range(k) if i not in reasons and self.islands[i].archive.best() is not None]
        events = []
        for i in sorted(reasons):
            founder_island = survivors[int(rng.integers(len(survivors)))]
            founder = self.islands[founder_island].archive.best()
            isl = self.islands[i]
            removed = isl.archive.clear()
            copy, _ = self._copy_into(founder, i)
            isl.improved_at, isl.resets = isl.evaluations, isl.resets + 1
            events.append(ResetEvent(i, reasons[i], founder_island, founder.id, copy.id, removed))
        return events

    # -- state ------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"schema": SCHEMA, "config": self.config.to_dict(), "seed": self.seed,
                "evaluations": self.evaluations, "seq": self.seq, "last_migration": self.last_migration,
                "last_reset": self.last_reset, "seen": sorted(self._seen),
                "island_of": {k: self._island_of[k] for k in sorted(self._island_of)},
                "islands": [{**isl.counters(), "programs": isl.archive.to_list()} for isl in self.islands]}

    @classmethod
    def from_state_dict(cls, d: dict) -> "ProgramDatabase":
        if d.get("schema") != SCHEMA:
            raise ValueError(f"database schema {d.get('schema')!r} is not supported (expected {SCHEMA})")
        db = cls(DatabaseConfig.from_dict(d["config"]), d["seed"])
        db.evaluations, db.seq = int(d["evaluations"]), int(d["seq"])
        db.last_migration, db.last_reset = int(d["last_migration"]), int(d["last_reset"])
        db._seen = set(d["seen"])
        db._island_of = {str(k): int(v) for k, v in d["island_of"].items()}
        for isl, s in zip(db.islands, d["islands"], strict=True):
            isl.archive.restore(s["programs"])
            isl.evaluations, isl.improved_at = int(s["evaluations"]), int(s["improved_at"])
            isl.failed, isl.resets = int(s["failed"]), int(s["resets"])
        return db

    # -- internals --------------------------------------------------------------------------
    def _island(self, island: int) -> Island:
        if not 0 <= int(island) < len(self.islands):
            raise IndexError(f"island {island} out of range 0..{len(self.islands) - 1}")
        return self.islands[int(island)]

    def _next_seq(self) -> int:
        self.seq += 1
        return self.seq - 1

    def _best_key(self, island: int) -> tuple:
        b = self.islands[island].archive.best()
        return b.rank_key()[:-2] if b is not None else (float("inf"),)

    def _copy_into(self, program: Program, dest: int):
        root = program.copy_of or program.id
        copy = program.copy_as(f"{root}~{self.seq}", dest, self._next_seq())
        isl = self.islands[dest]
        before = isl.archive.best()
        placed = isl.archive.add(copy)
        if placed.placed:
            self._island_of[copy.id] = dest
            if before is None or copy.score > before.score:  # a better program arrived: patience restarts
                isl.improved_at = isl.evaluations
        return copy, placed

    def _derived_rng(self, purpose: int, island: int) -> np.random.Generator:
        return np.random.default_rng([self.seed % 2**63, purpose, island, self.seq, self.evaluations])
