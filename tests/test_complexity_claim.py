"""Claim parsing: free-text complexity_O strings -> Growth (kind, rate) as n -> infinity."""

import math

import pytest

from evaluators.checks.complexity_claim import ClaimParseError, claim_expression, parse_claim
from evaluators.checks.growth import Growth, at_least

LOG2_3_2 = math.log2(1.5)
INV_LN2 = 1 / math.log(2)

# (claim, lattice, kind, rate); rate None = any finite rate
CASES = [
    ("O(n)", False, "poly", 1),
    ("O(n^3)", True, "poly", 3),
    ("O(n^2)", False, "poly", 2),
    ("O(1)", False, "poly", 0),
    ("O(n log n)", False, "poly", 1),
    ("O(N log N)", False, "poly", 1),
    ("O(nlogn)", False, "poly", 1),
    ("O(n log^2 n)", False, "poly", 1),
    ("O(n log_2 n)", False, "poly", 1),
    ("O(n log log n)", False, "poly", 1),
    ("O(n^1.5)", False, "poly", 1.5),
    ("O(n^{3/2})", False, "poly", 1.5),
    ("O(sqrt(n) log n)", False, "poly", 0.5),
    ("Θ(n³)", False, "poly", 3),
    ("O(L^3)", True, "poly", 1.5),
    ("O(L^3)", False, "poly", 3),          # not a lattice: L is read as n
    ("O(L)", False, "poly", 1),
    ("O(L^2 log L) with L = sqrt(N)", False, "poly", 1),
    ("O(n^3) where n is the number of rows", True, "poly", 3),
    ("O(n) time, O(1) memory", False, "poly", 1),
    ("Time: O(n)", False, "poly", 1),
    ("O(n), O(1) memory", False, "poly", 1),
    ("linear", False, "poly", 1),
    ("cubic", False, "poly", 3),
    ("polynomial", False, "poly", math.inf),
    ("poly(n)", False, "poly", math.inf),
    ("O(2^n)", False, "exp", 1),
    ("O(2**n)", False, "exp", 1),
    ("O(n 2^n)", False, "exp", 1),
    ("O(n2^n)", False, "exp", 1),
    ("O(n·2ⁿ)", False, "exp", 1),
    ("O(2^(n/2))", False, "exp", 0.5),
    ("O(1.5^n)", False, "exp", LOG2_3_2),
    ("O(e^n)", False, "exp", INV_LN2),
    ("exponential", False, "exp", 1),
    ("O(n 2^n) with n = L^2", True, "exp", 1),
    ("O(n!)", False, "exp", math.inf),
    ("O(2^n) worst case, O(n) typical", False, "exp", 1),
    ("O(L 2^(2L))", True, "exp_sqrt", 2),
    ("O(L 2^{2L})", True, "exp_sqrt", 2),
    ("O(2^{2L} L)", True, "exp_sqrt", 2),
    ("O(L 2^(2L))", False, "exp", 2),      # L = n off a lattice
    ("O(n 2^sqrt(n))", True, "exp_sqrt", 1),   # the paper's false alarm, on the lattice task
    ("O(n 2^sqrt(n))", False, "exp_sqrt", 1),
    ("O(n * 2^L) where L = sqrt(n)", False, "exp_sqrt", 1),
    ("O(2^w n) where w = sqrt(n)", True, "exp_sqrt", 1),
    ("O(sqrt(n) * 4^sqrt(n))", True, "exp_sqrt", 2),
    ("O(√n · 2^√n)", True, "exp_sqrt", 1),
    ("O(2^L * L^3)", True, "exp_sqrt", 1),
    ("O(L^2 2^L)", True, "exp_sqrt", 1),
    ("poly(L) * 2^L", True, "exp_sqrt", 1),
    ("O(e^{sqrt{n}})", True, "exp_sqrt", INV_LN2),
    ("exponential in L", True, "exp_sqrt", 1),
    ("exponential in sqrt(n)", False, "exp_sqrt", 1),
    ("O(n^3) + O(2^L)", True, "exp_sqrt", 1),
    ("O(n^(log n))", False, "exp_sqrt", 0),   # quasi-polynomial: above every polynomial
    ("O(2^(n^0.75))", False, "exp_sqrt", math.inf),
]


@pytest.mark.parametrize("claim,lattice,kind,rate", CASES)
def test_claims_classify(claim, lattice, kind, rate):
    g = parse_claim(claim, lattice)
    assert g.kind == kind, (claim, g)
    if math.isinf(rate):
        assert math.isinf(g.rate)
    else:
        assert g.rate == pytest.approx(rate, abs=1e-9), (claim, g)


@pytest.mark.parametrize("claim", ["—", "", "  ", "N/A", "n/a", "-", "unknown", None])
def test_no_claim_is_a_parse_error(claim):
    with pytest.raises(ClaimParseError) as e:
        parse_claim(claim, lattice=False)
    assert "no complexity claim" in e.value.reason


@pytest.mark.parametrize("claim,why", [
    ("O(n m)", "unknown symbol 'm'"),
    ("O(|E|)", "'|'"),
    ("O(T n)", "unknown symbol 'T'"),
    ("O(n.__class__)", "'.'"),
    ("__import__('os').system('true')", "unknown symbol '__import__'"),
    ("O(9^9^9^9)", "too large"),
    ("O(2^(-n))", "shrinks"),
    ("subexponential", "unknown symbol"),
])
def test_unreadable_claims_say_why(claim, why):
    with pytest.raises(ClaimParseError) as e:
        parse_claim(claim, lattice=False)
    assert why in e.value.reason


def test_hostile_claim_is_never_evaluated(tmp_path):
    marker = tmp_path / "pwned"
    for claim in (f"O(n) + open('{marker}', 'w')", f"O(__import__('pathlib').Path('{marker}').touch())",
                  "O(lambda: 1)", "O(n)[0]"):
        try:
            parse_claim(claim, lattice=False)
        except ClaimParseError:
            pass
    assert not marker.exists()


def test_where_clause_overrides_the_lattice_convention():
    # off a lattice L would mean n; the clause says L = sqrt(n)
    assert parse_claim("O(2^L)", lattice=False) == Growth("exp", 1.0)
    assert parse_claim("O(2^L) where L = sqrt(n)", lattice=False) == Growth("exp_sqrt", 1.0)


def test_expression_is_sympy_in_n_and_L():
    e = claim_expression("O(L 2^{2L})", lattice=True)
    assert str(e) == "2**(2*L)*L"


def test_honesty_ordering_of_parsed_claims():
    # the paper's false alarm: an honest 2^sqrt(n) claim against row-transfer cost
    assert at_least(parse_claim("O(n 2^sqrt(n))", True), Growth("exp_sqrt", 2.0))
    assert not at_least(parse_claim("O(n^3)", True), Growth("exp_sqrt", 1.0))
    assert at_least(parse_claim("polynomial", False), Growth("poly", 7.0))
    assert not at_least(parse_claim("polynomial", False), Growth("exp_sqrt", 1.0))
    assert at_least(parse_claim("exponential", False), Growth("exp", 3.0))
