"""T20: disorder-averaged partition-function ratio [Z(beta) / Z(beta_N)] of the +-J random-bond
Ising model (StatMechBench-v1, Tier 2). On the Nishimori line it is (cosh beta J / cosh beta_N J)^N_B."""

from tasks import nishimori as nl
from tasks.base import Gold, Quantity, get_float, sample_beta
from tasks.catalog._nishimori_formula import nishimori_average
from tasks.catalog._nishimori_torus import NishimoriTorusTask


class NishimoriRatio(NishimoriTorusTask):
    id = "T20"
    title = "Disorder-averaged Z(beta)/Z(beta_N) of the +-J random-bond model (torus)"
    quantity = Quantity(name="Z_ratio", description="the disorder-averaged ratio defined above",
                        positive=True, assertions=("unseen_parameters",))
    canonical = """\
You are given the **+-J random-bond Ising model on an L x L torus** with bonds drawn on the
**Nishimori line** (n = L^2 spins, L >= 3, site (r, c) = r*L + c; B is the set of the
N_B = 2 L^2 nearest-neighbour bonds). Each bond independently has J_b = +J with probability
1 - p and J_b = -J with probability p; beta_N is fixed by tanh(beta_N J) = 1 - 2p.
For bonds {J_b}, H(s) = - sum_{b=(i,j) in B} J_b s_i s_j and Z_J(beta) = sum_s exp(-beta H(s)).
Compute, for a given beta, the disorder average
R = sum over all 2^N_B bond configurations of prod_b P(J_b) * Z_J(beta) / Z_J(beta_N).
Implement
def Z_efficient(params: dict, n: int) -> float:
    # params has "p" (float, 0 < p < 0.5), "J" (float > 0), "beta" (float >= 0); returns R
You may also define log_Z(params, n) returning log R. Time polynomial in n (NOT exponential)."""
    paraphrased = """\
n = L^2 variables x_i in {-1,+1} on an L x L grid that wraps in both directions (L >= 3);
B lists its 2 L^2 neighbour pairs. Random signs eta_b in {-1,+1} are independent with
eta_b = -1 with probability p; b_N satisfies tanh(b_N J) = 1 - 2p. With
W(x) = J sum_{b=(i,j) in B} eta_b x_i x_j and F(b) = sum_x exp(b W(x)), return the average
over the 2^(2 L^2) sign patterns (weight p^(#minus) (1-p)^(#plus)) of F(beta) / F(b_N).
def Z_efficient(params: dict, n: int) -> float   with params "p", "J", "beta".
Time polynomial in n."""
    hint = "Average the numerator over a gauge orbit before dividing."
    gold = Gold("rbim_nishimori", "O(1)")
    formula = nishimori_average("ratio")

    def sample_params(self, rng, n):
        self.check_size(n)
        return {**self.sample_pj(rng), "beta": sample_beta(rng)}

    def temperature(self, params, p, J):
        return get_float(params, "beta")

    def from_raw_sums(self, energy, log_ratio):
        return log_ratio

    def from_identity(self, n_bonds, p, J, beta):
        return nl.log_partition_ratio(n_bonds, p, J, beta)

TASK = NishimoriRatio()
