"""T19: disorder-averaged energy of the +-J random-bond Ising model on the Nishimori line
(StatMechBench-v1, Tier 2). The gauge argument makes it -N_B J (1 - 2p): O(1)."""

from tasks import nishimori as nl
from tasks.base import Gold, Quantity
from tasks.catalog._nishimori_formula import nishimori_average
from tasks.catalog._nishimori_torus import NishimoriTorusTask


class NishimoriEnergy(NishimoriTorusTask):
    id = "T19"
    title = "Disorder-averaged energy of the +-J random-bond model on the Nishimori line (torus)"
    quantity = Quantity(name="E_avg", description="the disorder-averaged energy defined above (a real number)",
                        positive=False, assertions=("unseen_parameters",))
    canonical = """\
You are given the **+-J random-bond Ising model on an L x L torus on the Nishimori line**
(n = L^2 spins, L >= 3, site (r, c) = r*L + c; B is the set of the N_B = 2 L^2
nearest-neighbour bonds of the torus). Each bond independently has J_b = +J with
probability 1 - p and J_b = -J with probability p; the inverse temperature beta is fixed
by tanh(beta J) = 1 - 2p. For bonds {J_b}, H(s) = - sum_{b=(i,j) in B} J_b s_i s_j,
Z_J = sum_s exp(-beta H(s)), <H>_J = sum_s H(s) exp(-beta H(s)) / Z_J.
Compute the disorder average
[<H>] = sum over all 2^N_B bond configurations of prod_b P(J_b) * <H>_J.
Implement
def Z_efficient(params: dict, n: int) -> float:
    # params has "p" (float, 0 < p < 0.5) and "J" (float > 0); returns [<H>] (a real number)
in time polynomial in n (NOT exponential)."""
    paraphrased = """\
n = L^2 variables x_i in {-1,+1} on an L x L grid that wraps in both directions (L >= 3);
B lists its 2 L^2 neighbour pairs. Random signs eta_b in {-1,+1} are drawn independently,
eta_b = -1 with probability p, and beta satisfies tanh(beta J) = 1 - 2p. Let
W(x) = J sum_{b=(i,j) in B} eta_b x_i x_j. Return the average over the signs of
( - sum_x W(x) exp(beta W(x)) / sum_x exp(beta W(x)) ),
i.e. the sum over all 2^(2 L^2) sign patterns, each weighted by p^(#minus) (1-p)^(#plus).
def Z_efficient(params: dict, n: int) -> float   with params "p", "J".
Time polynomial in n."""
    hint = "A gauge transformation of the spins maps any sign pattern onto another of the same frustration."
    gold = Gold("rbim_nishimori", "O(1)")
    formula = nishimori_average("mean")

    def sample_params(self, rng, n):
        self.check_size(n)
        return self.sample_pj(rng)

    def from_raw_sums(self, energy, log_ratio):
        return energy

    def from_identity(self, n_bonds, p, J, beta):
        return nl.mean_energy(n_bonds, p, J)

TASK = NishimoriEnergy()
