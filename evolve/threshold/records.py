"""What a threshold run is (its settings) and what its journal holds (one record per batch of
samples, each sample's result in it), as typed, versioned records.

Journal (evolve/store/journal.py frames: length | msgpack | CRC, fsynced per record). The header
carries ``threshold_schema`` (RECORD_SCHEMA) and ``settings`` (:class:`Settings.to_dict`); then one
``batch`` record per finished batch (:class:`BatchResult.to_record`): the per-sample results of
that batch. A batch is the unit of work and of durability: a kill loses at most the batches in
flight, and a rerun with the same settings recomputes exactly those (every batch is seeded by
(seed, L, p, index), so the same samples come back). A change of meaning bumps RECORD_SCHEMA.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

RECORD_SCHEMA = 1


@dataclass(frozen=True)
class Settings:
    """One run: ``samples`` errors at each (L, p), drawn in batches of ``batch`` samples.

    decoder: "exact" (evaluators/decoding), "program:<sha256 of its code>" (a program's
    log_Z or Z_efficient, run in the sandbox) or "mps:chi=<chi>" (the boundary MPS).
    noise: "bitflip" (the task's own) or "depolarizing" (T21's code under depolarizing noise, four
    classes, decoded by the boundary MPS at bond dimension ``chi``; 0 for the others). A journal
    written before these two fields existed reads as bitflip, chi 0."""

    task: str
    sizes: tuple[int, ...]
    ps: tuple[float, ...]
    samples: int
    batch: int
    seed: int
    decoder: str = "exact"
    noise: str = "bitflip"
    chi: int = 0

    def batches_per_point(self) -> int:
        return -(-self.samples // self.batch)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["sizes"], d["ps"] = list(self.sizes), list(self.ps)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Settings":
        return cls(task=d["task"], sizes=tuple(int(x) for x in d["sizes"]), ps=tuple(float(x) for x in d["ps"]),
                   samples=int(d["samples"]), batch=int(d["batch"]), seed=int(d["seed"]), decoder=d["decoder"],
                   noise=d.get("noise", "bitflip"), chi=int(d.get("chi", 0)))

    def differences(self, other: "Settings") -> list[str]:
        """The settings that differ from ``other``'s (``samples`` may grow: more batches are added)."""
        out = [f"{k}: {getattr(other, k)!r} here, {getattr(self, k)!r} asked"
               for k in ("task", "sizes", "ps", "batch", "seed", "decoder", "noise", "chi")
               if getattr(self, k) != getattr(other, k)]
        if self.samples < other.samples:
            out.append(f"samples: {other.samples} here, {self.samples} asked (a run can grow, not shrink)")
        return out


@dataclass(frozen=True)
class BatchKey:
    L: int
    p: float
    index: int

    def seed_words(self, seed: int) -> list[int]:
        """The batch's own random stream: (seed, L, p in units of 1e-9, index)."""
        return [int(seed), int(self.L), int(round(self.p * 1e9)), int(self.index)]


@dataclass(frozen=True)
class BatchResult:
    """One batch decoded. ``true_class`` (size,) the errors' classes; ``log_p`` (size, classes) the
    natural logs of P(a, S); ``sampling_s`` / ``decoding_s`` the worker's CPU seconds drawing the
    errors (syndromes and classes included) and asking for their class probabilities."""

    key: BatchKey
    true_class: np.ndarray
    log_p: np.ndarray
    sampling_s: float
    decoding_s: float

    @property
    def size(self) -> int:
        return int(len(self.true_class))

    def to_record(self) -> dict:
        return {"kind": "batch", "v": RECORD_SCHEMA, "L": self.key.L, "p": self.key.p, "index": self.key.index,
                "size": self.size, "classes": int(self.log_p.shape[1]),
                "true_class": np.asarray(self.true_class, dtype="u1").tobytes(),
                "log_p": np.asarray(self.log_p, dtype="<f8").tobytes(),
                "sampling_s": float(self.sampling_s), "decoding_s": float(self.decoding_s)}

    @classmethod
    def from_record(cls, d: dict) -> "BatchResult":
        if d.get("v") != RECORD_SCHEMA:
            raise ValueError(f"a batch record of version {d.get('v')!r} (this version reads {RECORD_SCHEMA})")
        size, k = int(d["size"]), int(d["classes"])
        true_class = np.frombuffer(d["true_class"], dtype="u1").astype(np.int8)
        log_p = np.frombuffer(d["log_p"], dtype="<f8").reshape(size, k).copy()
        if len(true_class) != size:
            raise ValueError("a batch record whose class array does not match its size")
        return cls(BatchKey(int(d["L"]), float(d["p"]), int(d["index"])), true_class, log_p,
                   float(d["sampling_s"]), float(d["decoding_s"]))
