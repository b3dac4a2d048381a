"""The Tier 2 decoding tasks seen as codes: how their errors are drawn from the noise model, which
class an error is in, what a program is called with, and (where there is one) the exact decoder.

- T21, the planar surface code: two classes, exact decoder :mod:`evaluators.decoding.planar_code`.
- T18, the toric code: four classes (a, b) = (parity of the flipped h(r, L-1), of the flipped
  v(L-1, c)), class index 2a + b; no exact decoder here (its four sectors need the torus's
  periodic and antiperiodic transfer, which this package does not have): a program decodes it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tasks import toric_code


@dataclass(frozen=True)
class DecodingCode:
    """A decoding task as a code of distance L (the task's size is n = L^2)."""

    task_id: str
    name: str
    classes: int
    min_L: int
    exact: bool                  # an exact decoder exists here (exact_log_p)

    def qubits(self, L: int) -> int:
        return L * L + (L - 1) * (L - 1) if self.task_id == "T21" else 2 * L * L

    def draw(self, rng: np.random.Generator, L: int, p: float, count: int) -> tuple[np.ndarray, np.ndarray]:
        """(syndromes, the errors' own class indices) of ``count`` errors, each qubit flipped with
        probability p."""
        errors = (rng.random((count, self.qubits(L))) < p).astype(np.uint8)
        if self.task_id == "T21":
            from evaluators.decoding.sampling import classes, syndromes  # numba, only when decoding T21

            return syndromes(L, errors), classes(L, errors)
        syn = np.stack([toric_code.syndrome(L, e) for e in errors]).astype(np.int8) if count else \
            np.zeros((0, L, L), dtype=np.int8)
        cls = np.array([2 * a + b for a, b in (toric_code.homology(L, e) for e in errors)], dtype=np.int8)
        return syn, cls

    def exact_log_p(self, L: int, p: float, syn: np.ndarray) -> np.ndarray:
        """(count, classes) natural logs of P(a, S) by the exact decoder."""
        if not self.exact:
            raise ValueError(f"{self.task_id} has no exact decoder here")
        from evaluators.decoding.sampling import class_log_probabilities_batch  # numba

        return class_log_probabilities_batch(L, p, syn)

    def params(self, p: float, syndrome: np.ndarray, cls: int) -> dict:
        """The task's parameter dictionary for class index ``cls`` of ``syndrome``."""
        base = {"p": float(p), "syndrome": np.asarray(syndrome).astype(int).tolist()}
        if self.task_id == "T21":
            return {**base, "cls": int(cls)}
        return {**base, "homology": [int(cls) // 2, int(cls) % 2]}


CODES = {"T21": DecodingCode("T21", "planar surface code", classes=2, min_L=3, exact=True),
         "T18": DecodingCode("T18", "toric code", classes=4, min_L=3, exact=False)}


def decoding_code(task) -> DecodingCode | None:
    """The code of a Tier 2 decoding task, None for any other task."""
    return CODES.get(getattr(task, "id", None))
