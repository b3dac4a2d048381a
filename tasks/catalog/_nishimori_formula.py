"""The formula tree (tasks/formula_extras.py) shared by T19 and T20: independent signs eta on the
2 L^2 bonds of the L x L torus, eta = -1 with probability p, and the torus exponent
W(s) = J sum_bonds eta_b s_i s_j (W = -H) read at the reference inverse temperature
bN = atanh(1 - 2p) / J, i.e. tanh(bN J) = 1 - 2p."""

from dataclasses import replace
from fractions import Fraction

from tasks.formula import Derived, Formula, Param, term
from tasks.formula_extras import DisorderAverage

BONDS = (("d", "0", "1"), ("r", "0", "L - 1"), ("c", "0", "L - 1"))
SITES = (("r", "0", "L - 1"), ("c", "0", "L - 1"))
HALF = Fraction(1, 2)
SIZE = (Derived("L", "isqrt(n)"),)

#: log P(eta) = sum_b log(p) (1 - eta_b)/2 + log(1 - p) (1 + eta_b)/2
SIGNS = Formula(
    shape=("2", "L", "L"),
    params=(Param("p", "a number in (0, 0.5)"),),
    terms=(replace(term("log(p) * eta[d][r][c]", *BONDS, variable="eta"), affine=(-HALF, HALF)),
           replace(term("log(1 - p) * eta[d][r][c]", *BONDS, variable="eta"), affine=(HALF, HALF))),
    derived=SIZE, size_note="n = L*L with L >= 3", variable="eta", beta_key="")


def nishimori_average(statistic: str) -> DisorderAverage:
    """T19's [<H>] at bN ("mean") or T20's [Z(beta) / Z(bN)] ("ratio")."""
    params = (Param("J", "a number > 0"),)
    if statistic == "ratio":
        params = (Param("beta", "a number >= 0"),) + params
    inner = Formula(
        shape=("L", "L"), params=params,
        terms=(term("J * eta[0][r][c] * s[r][c] * s[r][(c + 1) % L]", *SITES),
               term("J * eta[1][r][c] * s[r][c] * s[(r + 1) % L][c]", *SITES)),
        derived=SIZE, beta_key="beta" if statistic == "ratio" else "")
    return DisorderAverage(SIGNS, inner, ("bN", "atanh(1 - 2 * p) / J"), statistic)
