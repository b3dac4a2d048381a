"""What the two Nishimori-line tasks (T19, T20) share: the L x L torus with +-J bonds drawn with
P(J_e = -J) = p, the parameter checks, and one disorder realisation as the task's model."""

import zlib

import numpy as np

from tasks import nishimori as nl
from tasks.base import COLD_STRATA, Task, cold_error_rate, square_side
from tasks.catalog._v1_common import V1_CITATION
from tasks.catalog.p03_torus import torus_edges
from tasks.model import IsingModel, Lattice


class NishimoriTorusTask(Task):
    tier = 2
    citation = V1_CITATION + " Identity: H. Nishimori, Prog. Theor. Phys. 66, 1169 (1981)."
    square_lattice = True
    nishimori_line = True
    probe_sizes = (9,)                      # the 3 x 3 torus: N_B = 18 bonds, the raw double sum's limit
    ladder_sizes = (16, 64, 256, 1024, 10_000)

    def check_size(self, n):
        square_side(self.id, n, 3)

    def sample_pj(self, rng) -> dict:
        return {"p": float(rng.uniform(0.02, 0.45)), "J": float(rng.uniform(0.5, 1.5))}

    def cold_params(self, params, n, rng, stratum=COLD_STRATA[0]):
        """Few flipped bonds: p with beta_N J = (1/2) log((1 - p) / p) log-uniform in ``stratum``, up
        to 350 (p ~ 1e-304; the Nishimori temperature is set by p)."""
        p = cold_error_rate(rng, stratum)
        return {**params, "p": p}, f"cold: p = {p:.3g} (beta_N J = {nl.nishimori_beta(p, 1.0):.4g})"

    def critical_params(self, params, n):
        return {**params, "p": nl.P_CRITICAL}, f"critical: the Nishimori point p = {nl.P_CRITICAL}"

    def with_beta(self, params, beta):
        raise NotImplementedError(f"{self.id}'s quantity is a disorder average; the Z identities do not apply")

    def to_model(self, params, n):
        """One disorder realisation at beta_N, drawn from the task's own bond distribution with a
        generator seeded by the parameters: the instance that structure analysis reads. The
        task's quantity is the average over all realisations (``own_reference``)."""
        L = square_side(self.id, n, 3)
        p, J = nl.check_pj(params)
        rng = np.random.default_rng(zlib.crc32(repr(sorted(params.items())).encode()))
        edges = torus_edges(L)
        signs = np.where(rng.random(len(edges)) < p, -1.0, 1.0)
        return IsingModel.from_arrays(n, nl.nishimori_beta(p, J), edges, J * signs, lattice=Lattice(L, L, True, True))

    def own_reference(self, params, n, method):
        """The raw double sum where it can be done (n = 9, the 3 x 3 torus), else the Nishimori
        identity (both tested against each other in tests/test_tasks_tier2.py)."""
        L = square_side(self.id, n, 3)
        p, J = nl.check_pj(params)
        beta = self.temperature(params, p, J)
        if n == 9:
            energy, log_ratio = nl.disorder_log_sums(torus_edges(L), n, p, J, beta)
            return self.from_raw_sums(energy, log_ratio), "disorder_enumeration"
        return self.from_identity(2 * n, p, J, beta), "nishimori_identity"

    # -- what each task takes from the shared sums ------------------------------------------------
    def temperature(self, params, p: float, J: float) -> float:
        """The beta at which the task's quantity is taken (beta_N unless the task has its own)."""
        return nl.nishimori_beta(p, J)

    def from_raw_sums(self, energy: float, log_ratio: float) -> float:
        """The task's reference value from ([<H>] at beta_N, log [Z(beta)/Z(beta_N)])."""
        raise NotImplementedError

    def from_identity(self, n_bonds: int, p: float, J: float, beta: float) -> float:
        """The task's reference value from the Nishimori identity on N_B bonds."""
        raise NotImplementedError
