"""Class consistency (evaluators/checks/classes.py): admissibility of each label for the six task
families, agreement of a claim with measured growth and static evidence, and the combined finding."""

import dataclasses

import pytest

from evaluators.checks.classes import (RULES, admissible, allowed_growth, check_class, method_agreement,
                                       polynomial_classes)
from evaluators.checks.growth import Growth
from tasks.base import CLASS_LABELS
from tasks.registry import get_task
from tasks.family import family_structure

IDS = ("P01", "P02", "P03", "P04", "P05", "P06")
POLY, EXP_SQRT, EXP = Growth("poly", 1.0), Growth("exp_sqrt", 1.0), Growth("exp", 1.0)


@pytest.fixture(scope="module")
def fam():
    return {tid: family_structure(get_task(tid)) for tid in IDS}


def test_every_label_has_a_rule():
    assert set(RULES) == set(CLASS_LABELS)


@pytest.mark.parametrize("task", [get_task(t) for t in IDS], ids=lambda t: t.id)
def test_gold_class_is_admissible_and_consistent(task, fam):
    ok, reasons = admissible(task.gold.tractable_class, fam[task.id])
    assert ok, reasons
    assert reasons and all(isinstance(r, str) and r for r in reasons)
    finding = check_class(task.gold.tractable_class, fam[task.id], None, [])
    assert finding.consistent is True and finding.claimed == task.gold.tractable_class


@pytest.mark.parametrize("tid", IDS)
def test_no_efficient_known_only_for_the_negative_control(tid, fam):
    ok, reasons = admissible("no_efficient_known", fam[tid])
    assert ok == (tid == "P06"), reasons
    assert (polynomial_classes(fam[tid]) == []) == (tid == "P06")


@pytest.mark.parametrize("tid", IDS)
def test_percolation_is_never_a_class_for_z(tid, fam):
    ok, reasons = admissible("percolation", fam[tid])
    assert not ok and "not a polynomial algorithm" in reasons[0]
    finding = check_class("percolation", fam[tid], POLY, [])
    assert finding.consistent is False


def test_pfaffian_and_free_fermion(fam):
    for label in ("pfaffian", "free_fermion"):
        assert admissible(label, fam["P01"])[0]                      # zero-field chain: planar
        ok, reasons = admissible(label, fam["P02"])                  # fields on a path: a ghost spin keeps it planar
        assert ok and "ghost spin" in reasons[0]
        ok, reasons = admissible(label, family_structure(get_task("T16")))   # a field on every site of a grid
        assert not ok and "field" in reasons[0]
        ok, reasons = admissible(label, fam["P03"])                  # torus: four Pfaffians
        assert ok and "torus" in reasons[0] and "four Pfaffians" in reasons[0]
        assert admissible(label, fam["P04"])[0]
        for tid in ("P05", "P06"):
            ok, reasons = admissible(label, fam[tid])
            assert not ok and "not planar" in reasons[0]


def test_gauge(fam):
    ok, reasons = admissible("gauge", fam["P05"])
    assert ok and "Mattis" in reasons[0]
    for tid in ("P04", "P06"):
        ok, reasons = admissible("gauge", fam[tid])
        assert not ok and "frustrated" in reasons[0]
    ok, reasons = admissible("gauge", fam["P01"])
    assert not ok and "no disorder" in reasons[0]


def test_gauge_needs_a_tractable_gauged_model(fam):
    # signs removable by a gauge on planar zero-field grids: the gauged ferromagnet is Pfaffian
    planar_gauge = dataclasses.replace(fam["P04"], gauge_uniform=True, disorder="gauge")
    ok, reasons = admissible("gauge", planar_gauge)
    assert ok and "pfaffian" in reasons[0]
    # the same on random cubic graphs: the gauged ferromagnet has no tractable class
    cubic_gauge = dataclasses.replace(fam["P06"], gauge_uniform=True, disorder="gauge")
    ok, reasons = admissible("gauge", cubic_gauge)
    assert not ok and "#P-hard" in reasons[0]


def test_transfer_matrix_and_treewidth(fam):
    for tid in ("P01", "P02", "P03", "P04"):
        assert admissible("transfer_matrix", fam[tid])[0]
    for tid in ("P05", "P06"):
        ok, reasons = admissible("transfer_matrix", fam[tid])
        assert not ok and "linearly" in reasons[0]
    for tid in ("P01", "P02"):
        assert admissible("treewidth_bounded", fam[tid])[0]
    for tid in ("P03", "P04"):
        ok, reasons = admissible("treewidth_bounded", fam[tid])
        assert not ok and "sqrt(n)" in reasons[0]
    assert not admissible("treewidth_bounded", fam["P06"])[0]


def test_rbim_nishimori_needs_the_nishimori_line(fam):
    for tid in IDS:
        assert not admissible("rbim_nishimori", fam[tid])[0]
    ok, reasons = admissible("rbim_nishimori", dataclasses.replace(fam["P04"], nishimori=True))
    assert ok and "Nishimori" in reasons[0]


def test_exactly_solvable_other(fam):
    for tid in ("P02", "P03", "P04", "P05"):
        ok, reasons = admissible("exactly_solvable_other", fam[tid])
        assert ok and "name its class" in reasons[0]
    assert not admissible("exactly_solvable_other", fam["P06"])[0]
    # the open zero-field chain is a product after tau_i = s_i s_{i+1}: admitted by that rule first
    ok, reasons = admissible("exactly_solvable_other", fam["P01"])
    assert ok and "private spin" in reasons[0]


def test_independent_terms_admit_the_plaquette_change_of_variables():
    """T13's four-spin plaquettes each own a corner spin after peeling: Z is a product, so
    exactly_solvable_other is admitted and no_efficient_known undersells it."""
    f = family_structure(get_task("T13"))
    assert f.independent_terms and f.max_order == 4
    assert admissible("exactly_solvable_other", f)[0]
    ok, reasons = admissible("no_efficient_known", f)
    assert not ok and "independent term products" in reasons[0]


def test_peeling_tells_independent_terms_from_dependent_ones():
    from tasks.term_independence import peels_to_nothing

    assert peels_to_nothing(4, [(0, 1), (1, 2), (2, 3)])             # open chain: tree edges
    assert not peels_to_nothing(4, [(0, 1), (1, 2), (2, 3), (3, 0)])  # ring: the product of all bonds is 1
    assert not peels_to_nothing(3, [(0,), (0, 1), (1,)])              # s0 * (s0 s1) * s1 = 1
    assert peels_to_nothing(9, [(0, 1, 3, 4), (1, 2, 4, 5), (3, 4, 6, 7), (4, 5, 7, 8)])  # 3x3 plaquettes
    assert not peels_to_nothing(2, [(0,), (1,), (0, 1)])             # more terms than spins
    assert peels_to_nothing(3, [])
    n = 100_000                                                       # P01's largest ladder size
    assert peels_to_nothing(n, [(i, i + 1) for i in range(n - 1)])
    assert not peels_to_nothing(n, [(i, (i + 1) % n) for i in range(n)])


def _peels_reference(n, terms) -> bool:
    """The peeling as first written, in Python: the spec the compiled one is held to."""
    if len(terms) > n:
        return False
    holders = [[] for _ in range(n)]
    for k, t in enumerate(terms):
        for i in t:
            holders[i].append(k)
    count, alive = [len(h) for h in holders], [True] * len(terms)
    queue, removed = [i for i in range(n) if count[i] == 1], 0
    while queue:
        i = queue.pop()
        if count[i] != 1:
            continue
        k = next(k for k in holders[i] if alive[k])
        alive[k], removed = False, removed + 1
        for j in terms[k]:
            count[j] -= 1
            if count[j] == 1:
                queue.append(j)
    return removed == len(terms)


def _gf2_rank(n, terms) -> int:
    rows = [sum(1 << i for i in t) for t in terms]
    rank = 0
    for bit in range(n):
        at = next((k for k, r in enumerate(rows) if r >> bit & 1), None)
        if at is None:
            continue
        pivot = rows.pop(at)
        rows = [r ^ pivot if r >> bit & 1 else r for r in rows]
        rank += 1
    return rank


def test_the_compiled_peeling_agrees_with_the_python_one_and_implies_gf2_independence():
    import numpy as np

    from tasks.term_independence import peels_to_nothing

    rng = np.random.default_rng(7)
    seen = set()
    for _ in range(600):
        n = int(rng.integers(1, 12))
        m = int(rng.integers(0, n + 2))
        terms = [tuple(int(i) for i in rng.choice(n, size=int(rng.integers(1, min(n, 4) + 1)), replace=False))
                 for _ in range(m)]
        got = peels_to_nothing(n, terms)
        assert got == _peels_reference(n, terms), (n, terms)
        if got:
            assert _gf2_rank(n, terms) == len(terms), (n, terms)   # peeling is sufficient for independence
        seen.add(got)
    assert seen == {True, False}


def test_transfer_matrix_on_a_2d_family_with_fields_is_not_polynomial(fam):
    """A 2D grid in a field: only an exp(sqrt n) transfer matrix, so no_efficient_known is honest."""
    grid_in_field = dataclasses.replace(fam["P04"], has_fields=True)
    assert admissible("transfer_matrix", grid_in_field)[0]
    assert polynomial_classes(grid_in_field) == []
    ok, reasons = admissible("no_efficient_known", grid_in_field)
    assert ok and "exp(sqrt n)" in reasons[0]


# -- method agreement -----------------------------------------------------------------------------

@pytest.mark.parametrize("label", ["pfaffian", "free_fermion", "gauge", "treewidth_bounded", "exactly_solvable_other"])
def test_polynomial_classes_reject_exponential_code(label):
    for measured in (EXP_SQRT, EXP):
        ok, reasons = method_agreement(label, measured, [])
        assert ok is False and label in reasons[0] and "exponential" in reasons[0]
    ok, reasons = method_agreement(label, None, ["enumerates_2^L"])
    assert ok is False and "2^L row states" in reasons[0]
    assert method_agreement(label, None, ["enumerates_2^n"])[0] is False
    assert method_agreement(label, None, ["dense_2^L_matrix"])[0] is False
    assert method_agreement(label, POLY, ["dense_linalg_n^3", "nested_loops_n^2"])[0] is True


def test_pfaffian_claim_with_row_states_and_exp_sqrt_growth():
    ok, reasons = method_agreement("pfaffian", EXP_SQRT, ["enumerates_2^L"])
    assert ok is False
    assert reasons[0].startswith("pfaffian claimed, but the code enumerates 2^L row states and its measured "
                                 "time is exponential in sqrt(n)")


def test_transfer_matrix_allowances(fam):
    assert method_agreement("transfer_matrix", EXP_SQRT, ["enumerates_2^L"])[0] is True
    assert method_agreement("transfer_matrix", EXP_SQRT, [], fam["P03"])[0] is True
    assert method_agreement("transfer_matrix", POLY, [], fam["P01"])[0] is True
    # a 1D family has a 2-state transfer matrix: exp(sqrt n) time means something else is going on
    ok, reasons = method_agreement("transfer_matrix", EXP_SQRT, [], fam["P01"])
    assert ok is False and "polynomial" in reasons[0]
    ok, reasons = method_agreement("transfer_matrix", EXP, ["enumerates_2^n"])
    assert ok is False and "2^n configurations" in reasons[0]


def test_no_efficient_known_accepts_any_cost():
    for measured in (POLY, EXP_SQRT, EXP):
        assert method_agreement("no_efficient_known", measured, ["enumerates_2^n"])[0] is True
    ok, reasons = method_agreement("no_efficient_known", POLY, [])
    assert ok is True and any("undersells" in r for r in reasons)


def test_method_agreement_without_evidence_and_unknown_kinds():
    assert method_agreement("pfaffian", None, [])[0] is None
    assert method_agreement("pfaffian", None, ["calls_numpy_det", "something_else"])[0] is None
    assert method_agreement("percolation", EXP, [])[0] is None
    assert method_agreement("ising_exact", POLY, [])[0] is None
    assert method_agreement("pfaffian", None, ["enumerates_2^L: rows of width L"])[0] is False


def test_allowed_growth():
    assert allowed_growth("transfer_matrix") == "exp_sqrt"
    assert allowed_growth("pfaffian") == "poly"
    assert allowed_growth("no_efficient_known") == "exp"
    assert allowed_growth("percolation") is None


# -- the combined finding ---------------------------------------------------------------------------

def test_check_class_combines_both(fam):
    bad = check_class("pfaffian", fam["P04"], EXP_SQRT, ["enumerates_2^L"])
    assert bad.consistent is False and any(r.startswith("structure:") for r in bad.reasons)
    assert any(r.startswith("method: pfaffian claimed, but") for r in bad.reasons)
    good = check_class("pfaffian", fam["P04"], Growth("poly", 3.0), ["dense_linalg_n^3"])
    assert good.consistent is True
    assert check_class("transfer_matrix", fam["P06"], EXP, []).consistent is False
    assert check_class("treewidth_bounded", fam["P04"], POLY, []).consistent is False
    assert check_class("gauge", fam["P05"], POLY, []).consistent is True
    assert check_class("no_efficient_known", fam["P06"], EXP, ["enumerates_2^n"]).consistent is True
    assert check_class("no_efficient_known", fam["P04"], EXP, ["enumerates_2^n"]).consistent is False


def test_check_class_rejects_labels_outside_the_library(fam):
    finding = check_class("ising_exact", fam["P01"], POLY, [])
    assert finding.consistent is False and finding.claimed == "ising_exact"
    assert finding.reasons[0].startswith("'ising_exact' is not a label of the library")
    none = check_class(None, fam["P01"], POLY, [])
    assert none.consistent is False and none.claimed is None and "no tractable_class" in none.reasons[0]


def test_planarity_untested_at_large_sizes(fam):
    """Planar wherever tested, unknown beyond: admitted with a note; unknown everywhere: not."""
    structs = fam["P04"].structures
    partly = dataclasses.replace(fam["P04"], planar=None,
                                 structures=tuple(dataclasses.replace(s, planar=None) if s.n > 256 else s
                                                  for s in structs))
    ok, reasons = admissible("pfaffian", partly)
    assert ok and "not tested" in reasons[0]
    unknown = dataclasses.replace(partly, structures=tuple(dataclasses.replace(s, planar=None) for s in structs))
    assert not admissible("pfaffian", unknown)[0]
