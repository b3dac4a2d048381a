"""The Tier 2 decoding tasks seen as codes: how their errors are drawn from the noise model, which
class an error is in, what a program is called with, and (where there is one) the exact decoder.

- T21, the planar surface code: two classes, exact decoder :mod:`evaluators.decoding.planar_code`.
- T21 under depolarizing noise (``noise="depolarizing"``, not a catalogue task: the threshold command's
  Tier 3 estimate, issue 35): four classes (a, b), index 2 a + b, approximate decoder the boundary MPS
  of :mod:`evaluators.decoding.depolarizing_planar` at bond dimension chi.
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
    noise: str = "bitflip"       # "bitflip" | "depolarizing"

    def qubits(self, L: int) -> int:
        return L * L + (L - 1) * (L - 1) if self.task_id == "T21" else 2 * L * L

    def draw(self, rng: np.random.Generator, L: int, p: float, count: int) -> tuple[np.ndarray, np.ndarray]:
        """(syndromes, the errors' own class indices) of ``count`` errors, each qubit flipped with
        probability p."""
        if self.noise == "depolarizing":
            from evaluators.decoding import depolarizing_planar as dp  # lazy

            x, z = dp.draw(rng, L, p, count)
            return dp.syndromes(L, x, z), dp.classes(L, x, z)
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

    def approx_log_p(self, L: int, p: float, syn: np.ndarray, chi: int) -> np.ndarray:
        """(count, classes) natural logs of P(a, S) by the boundary MPS at bond dimension ``chi``."""
        if self.noise != "depolarizing":
            raise ValueError(f"{self.name} has no approximate decoder here")
        from evaluators.decoding.depolarizing_planar import class_log_probabilities  # lazy

        return class_log_probabilities(L, p, syn, chi)

    def params(self, p: float, syndrome: np.ndarray, cls: int) -> dict:
        """The task's parameter dictionary for class index ``cls`` of ``syndrome``."""
        base = {"p": float(p), "syndrome": np.asarray(syndrome).astype(int).tolist()}
        if self.task_id == "T21":
            return {**base, "cls": int(cls)}
        return {**base, "homology": [int(cls) // 2, int(cls) % 2]}


CODES = {"T21": DecodingCode("T21", "planar surface code", classes=2, min_L=3, exact=True),
         "T18": DecodingCode("T18", "toric code", classes=4, min_L=3, exact=False)}
#: the planar code of T21 under depolarizing noise, decoded by the boundary MPS (approximate)
DEPOLARIZING = DecodingCode("T21", "planar surface code under depolarizing noise", classes=4, min_L=3, exact=False,
                            noise="depolarizing")


def code_for(task_id: str, noise: str = "bitflip") -> DecodingCode:
    """The code that ``task_id`` under ``noise`` draws and decodes (KeyError where there is none)."""
    if noise == "bitflip":
        return CODES[task_id]
    if noise == "depolarizing" and task_id == "T21":
        return DEPOLARIZING
    raise KeyError(f"{task_id} under {noise} noise")


def decoding_code(task) -> DecodingCode | None:
    """The code of a Tier 2 decoding task, None for any other task."""
    return CODES.get(getattr(task, "id", None))
