"""Class consistency: does a candidate's ``tractable_class`` fit the task's family of models, and
does its code behave like a method of that class?

The paper (StatMechBench-v0) found agents that solve Z numerically yet misidentify the tractable
class. Two checks, both in plain words:

* ``admissible(label, family)`` -- the structural invariants of the task's instances across sizes
  (:func:`tasks.family.family_structure`) against what the class needs;
* ``method_agreement(label, measured, static_kinds)`` -- the code's measured time growth
  (:mod:`evaluators.checks.growth`) and the static-analysis evidence against what the class costs.

==========================  ===============================================  =============================
label                       the family must have                             the code may cost at most
==========================  ===============================================  =============================
transfer_matrix             pathwidth bounded (1D, strips) or ~ sqrt(n)      poly (bounded width) or
                            (2D lattices, 2^L row states); not linear        exp(sqrt n) (2^L rows); never
                                                                             2^n enumeration
free_fermion                as pfaffian (planar zero-field Ising = free      poly, no 2^L / 2^n states
                            Majorana fermions; Onsager-Kaufman on the torus)
pfaffian                    pairwise, zero field, planar at every size;      poly (O(n^3) determinants),
                            the torus (genus 1, four Pfaffians) with a note  no 2^L / 2^n states
gauge                       non-trivial disorder removable by s_i -> g_i s_i poly (exp(sqrt n) if the
                            (balanced signs, or Mattis rank one) and a       gauged model needs a 2D
                            tractable gauged model                           transfer matrix)
percolation                 never: it names a universality class, not an     (no algorithm to compare)
                            algorithm for Z
rbim_nishimori              bonds on the Nishimori line (family.nishimori)   poly, or exp(sqrt n) when the
                                                                             mapped model is 2D (2^L rows)
treewidth_bounded           treewidth bounded across sizes (a junction tree  poly (O(2^k n) with k fixed)
                            at treewidth ~ sqrt(n) is exp(sqrt n))
exactly_solvable_other      independent terms (each owns a private spin: a   poly
                            change of variables makes Z a product), or some
                            polynomial class applies (the named class itself
                            cannot be verified here)
no_efficient_known          no polynomial class of the library applies       anything (honest brute force)
==========================  ===============================================  =============================
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evaluators.checks.growth import KINDS, Growth
from tasks.base import CLASS_LABELS
from tasks.family import FamilyStructure

#: labels whose admissibility means a polynomial-time algorithm exists (transfer_matrix only with
#: bounded pathwidth; exactly_solvable_other is derived from these)
_POLYNOMIAL_CANDIDATES = ("transfer_matrix", "free_fermion", "pfaffian", "gauge", "rbim_nishimori",
                          "treewidth_bounded")

#: static-analysis kinds understood here (anything else is ignored)
STATIC_KINDS = ("enumerates_2^n", "enumerates_2^L", "dense_2^L_matrix", "nested_loops_n^k", "dense_linalg_n^3")
_STATIC_PHRASES = {
    "enumerates_2^n": "enumerates all 2^n configurations",
    "enumerates_2^L": "enumerates 2^L row states",
    "dense_2^L_matrix": "builds a dense 2^L x 2^L matrix",
}


@dataclass
class ClassFinding:
    claimed: str | None
    consistent: bool | None          # None: nothing could be checked
    reasons: list[str] = field(default_factory=list)


def _sizes(family: FamilyStructure, values) -> str:
    return ", ".join(f"{v} at n={n}" for n, v in zip(family.sizes, values))


# -- admissibility, one rule per label ----------------------------------------------------------

def _transfer_matrix(f: FamilyStructure):
    # A transfer matrix sweeps a path decomposition: O(n 2^pw) time (Kramers-Wannier 1941 for
    # 2D rows; any 1D/quasi-1D Hamiltonian). The paper's gold for the 2D torus P03 is this class
    # with cost O(L 2^(2L)), so pathwidth ~ sqrt(n) is admitted; linear pathwidth is 2^(c n).
    kind, pw = f.pathwidth_growth, _sizes(f, f.pathwidth)
    if kind == "bounded":
        return True, [f"the pathwidth stays bounded ({pw}): a transfer matrix costs O(n 2^pw), polynomial in n"]
    if kind == "sqrt":
        return True, [f"the pathwidth grows as sqrt(n) ({pw}): a row-to-row transfer matrix over 2^L row "
                      "states costs O(n 2^L) = exp(O(sqrt n)), the quasi-1D / 2D case of the library"]
    if kind == "linear":
        return False, [f"the pathwidth grows linearly in n ({pw}): any transfer matrix carries 2^(c n) "
                       "states, exponential in n, so this is not a tractable transfer-matrix family"]
    return False, ["too few sizes were analysed to tell how the pathwidth grows"]


def _planar_zero_field(f: FamilyStructure, what: str):
    if f.max_order > 2:
        return False, [f"the model has {f.max_order}-spin terms; {what} needs pair couplings only"]
    if f.has_fields and f.planar and f.ghost_planar:
        return True, [f"the fields lie on one face: the graph with a ghost spin joined to every spin with a field "
                      f"is planar at every size tested, so {what} applies to the model with the ghost"]
    if f.has_fields:
        return False, [f"the model has site fields; {what} needs zero field (a field is a ghost spin joined "
                       "to every site with a field, which destroys planarity unless those sites share a face)"]
    if f.planar:
        return True, [f"the interaction graph is planar at every size, with zero field and pair couplings: "
                      f"{what} applies"]
    if f.toroidal:
        return True, [f"the interaction graph is a torus (genus 1), not planar: {what} still applies as a signed "
                      "sum of four Pfaffians / periodic-antiperiodic sectors (Kasteleyn 1963, Kaufman 1949)"]
    if f.planar is None:
        tested = [n for n, s in zip(f.sizes, f.structures) if s.planar]
        if len(tested) >= 2:
            return True, [f"the interaction graph is planar at every size small enough to test "
                          f"(n={', '.join(map(str, tested))}; larger ones were not tested): {what} applies"]
        return False, ["planarity could not be established (the graphs are too large for the test)"]
    bad = [n for n, s in zip(f.sizes, f.structures) if s.planar is False]
    return False, [f"the interaction graph is not planar (n={', '.join(map(str, bad))}) and not a torus; "
                   f"{what} needs a planar graph (genus growing with n needs 4^genus Pfaffians)"]


def _pfaffian(f: FamilyStructure):
    # Kasteleyn (1961), Fisher (1966): planar zero-field Ising = dimers on a decorated planar
    # graph = one Pfaffian, O(n^3) (O(n^1.5) with nested dissection).
    return _planar_zero_field(f, "the Pfaffian (Kasteleyn) method")


def _free_fermion(f: FamilyStructure):
    # The same boundary: planar zero-field Ising is a Gaussian Grassmann integral (free Majorana
    # fermions; Kac-Ward determinant). On the homogeneous torus the row transfer matrix is
    # diagonalised by Jordan-Wigner (Onsager 1944, Kaufman 1949), so P03 is admissible too.
    return _planar_zero_field(f, "the free-fermion (Jordan-Wigner / Kac-Ward) representation")


def _gauged_route(f: FamilyStructure) -> tuple[str | None, bool]:
    """(class that solves the gauged model, whether it is polynomial)."""
    if f.rank_one:
        return "Curie-Weiss (a sum over the magnetisation, O(n); O(n^2) with fields)", True
    for label in ("pfaffian", "treewidth_bounded", "transfer_matrix"):
        if RULES[label](f)[0]:
            return label, label != "transfer_matrix" or f.pathwidth_growth == "bounded"
    return None, False


def _gauge(f: FamilyStructure):
    # Toulouse (1977), Mattis (1976): s_i -> g_i s_i maps J_ij -> g_i g_j J_ij; it removes the
    # signs exactly when every cycle carries an even number of negative bonds.
    if f.rank_one:
        return True, ["the couplings are rank one, J_ij = xi_i xi_j (Mattis): s_i -> xi_i s_i maps the model "
                      "to the uniform Curie-Weiss model, solvable by a sum over the magnetisation"]
    if f.disorder == "uniform":
        return False, ["there is no disorder to gauge away: every instance has uniform couplings, so the class "
                       "is that of the uniform model, not a gauge reduction"]
    if not f.gauge_uniform:
        bad = [n for n, s in zip(f.sizes, f.structures) if not s.gauge_uniform]
        return False, [f"the signs are frustrated (a cycle with an odd number of negative bonds, "
                       f"n={', '.join(map(str, bad))}): "
                       "no gauge s_i -> g_i s_i removes them; this is a spin glass, not a gauge class"]
    route, _ = _gauged_route(f)
    if route is None:
        return False, ["a gauge removes the signs, but the resulting ferromagnet lives on a graph with no tractable "
                       "class (exact Z of a ferromagnet on general graphs is #P-hard)"]
    return True, [f"a gauge s_i -> g_i s_i makes every coupling ferromagnetic and the gauged model is solved "
                  f"by {route}"]


def _percolation(f: FamilyStructure):
    return False, ["percolation (Fortuin-Kasteleyn) is a universality class and a mapping that locates critical "
                   "points; it is not a polynomial algorithm for Z, so it cannot be the class of a program computing Z"]


def _rbim_nishimori(f: FamilyStructure):
    # Nishimori (1981): on tanh(beta J) = 1 - 2p the gauge symmetry pins disorder averages.
    if f.nishimori:
        return True, ["the bonds are drawn on the Nishimori line (tanh beta J = 1 - 2p), where the gauge symmetry "
                      "pins disorder-averaged quantities"]
    return False, ["the bonds are not drawn on the Nishimori line (nothing ties beta to the disorder "
                   "probability, tanh beta J = 1 - 2p); a random-bond Ising model off that line is generally hard"]


def _treewidth_bounded(f: FamilyStructure):
    # Junction tree / variable elimination: O(2^tw n) (Lauritzen-Spiegelhalter 1988). At treewidth
    # ~ sqrt(n) that is exp(sqrt n): the 2D regime, which the library files under transfer_matrix.
    kind, tw = f.treewidth_growth, _sizes(f, f.treewidth)
    if kind == "bounded":
        return True, [f"the treewidth stays bounded ({tw}): a junction tree costs O(2^tw n)"]
    if kind == "sqrt":
        return False, [f"the treewidth grows as sqrt(n) ({tw}): a junction tree costs exp(O(sqrt n)), which is not "
                       "bounded treewidth (the 2D-lattice regime of transfer_matrix)"]
    if kind == "linear":
        return False, [f"the treewidth grows linearly in n ({tw}): a junction tree costs 2^(c n)"]
    return False, ["too few sizes were analysed to tell how the treewidth grows"]


def polynomial_classes(family: FamilyStructure) -> list[str]:
    """Labels of the library that give a polynomial-time algorithm for this family."""
    out = []
    for label in _POLYNOMIAL_CANDIDATES:
        if not RULES[label](family)[0]:
            continue
        if label == "transfer_matrix" and family.pathwidth_growth != "bounded":
            continue                       # exp(sqrt n): tractable for the task, but not polynomial
        if label == "gauge" and not _gauged_route(family)[1]:
            continue
        out.append(label)
    return out


def _exactly_solvable_other(f: FamilyStructure):
    if f.independent_terms:
        return True, ["every term owns a private spin (the terms peel off one by one), so the term products "
                      "tau_k = prod s_i are independent variables and Z = 2^(n-m) prod_k 2 cosh(beta w_k): "
                      "an exact change of variables outside the library's named classes"]
    poly = polynomial_classes(f)
    if poly:
        return True, [f"a polynomial class applies ({', '.join(poly)}); 'exactly_solvable_other' must name its class "
                      "explicitly, and the name cannot be verified here"]
    return False, ["no polynomial class of the library applies to this family, and an unnamed 'other' "
                   "polynomial class cannot be verified"]


def _no_efficient_known(f: FamilyStructure):
    poly = polynomial_classes(f) + (["a change of variables to independent term products"] if f.independent_terms else [])
    if poly:
        return False, [f"a polynomial class of the library applies ({', '.join(poly)}), so 'no_efficient_known' "
                       "undersells the problem"]
    note = " (a transfer matrix is exp(sqrt n), tractable but not polynomial)" if RULES["transfer_matrix"](f)[0] else ""
    return True, [f"no polynomial class of the library applies to this family{note}"]


RULES = {
    "transfer_matrix": _transfer_matrix,
    "free_fermion": _free_fermion,
    "pfaffian": _pfaffian,
    "gauge": _gauge,
    "percolation": _percolation,
    "rbim_nishimori": _rbim_nishimori,
    "treewidth_bounded": _treewidth_bounded,
    "exactly_solvable_other": _exactly_solvable_other,
    "no_efficient_known": _no_efficient_known,
}
assert set(RULES) == set(CLASS_LABELS)


def admissible(label: str, family: FamilyStructure) -> tuple[bool, list[str]]:
    """Whether the family has the structure the class needs, with the reasons in plain words."""
    if label not in RULES:
        return False, [_not_a_label(label)]
    ok, reasons = RULES[label](family)
    return bool(ok), list(reasons)


# -- method agreement ---------------------------------------------------------------------------

def allowed_growth(label: str, family: FamilyStructure | None = None) -> str | None:
    """The largest growth kind a method of this class may show (None: the class names no method)."""
    if label == "percolation" or label not in RULES:
        return None
    if label == "no_efficient_known":
        return "exp"
    if label == "transfer_matrix":
        if family is None or family.pathwidth_growth == "sqrt":
            return "exp_sqrt"
        return "poly" if family.pathwidth_growth == "bounded" else "exp"
    if label == "gauge" and family is not None and _gauge(family)[0] and not _gauged_route(family)[1]:
        return "exp_sqrt"                 # the gauged model needs a 2D transfer matrix
    if label == "rbim_nishimori" and (family is None or family.pathwidth_growth == "sqrt"):
        return "exp_sqrt"                 # the mapped 2D random-bond model may be swept by a transfer matrix
    return "poly"


def _static(kinds) -> list[str]:
    """The recognised kinds among ``kinds`` ('nested_loops_n^3' reads as 'nested_loops_n^k';
    a detail after ':' or a space is allowed)."""
    out = []
    for k in kinds or ():
        k = str(k).strip()
        for known in STATIC_KINDS:
            if known.endswith("^k"):
                hit = k.startswith(known[:-1])
            else:
                hit = k == known or k.startswith(known + ":") or k.startswith(known + " ")
            if hit:
                out.append(known)
                break
    return out


def method_agreement(label: str, measured: Growth | None, static_kinds: list[str],
                     family: FamilyStructure | None = None) -> tuple[bool | None, list[str]]:
    """Whether the code behaves like a method of the claimed class (None: nothing to compare).

    ``measured`` is the fitted growth of running time in n; ``static_kinds`` the static analysis'
    findings (see ``STATIC_KINDS``; unknown ones are ignored). With ``family`` the allowance of a
    transfer matrix follows the family's pathwidth (bounded: polynomial; ~sqrt n: exp(sqrt n)).
    """
    cap = allowed_growth(label, family)
    kinds = _static(static_kinds)
    if cap is None:
        why = "is not a label of the library" if label not in RULES else "names no algorithm for Z"
        return None, [f"'{label}' {why}: there is no method to compare the code with"]
    if measured is None and not kinds:
        return None, ["neither a measured growth nor static evidence is available: the method was not checked"]
    evidence: list[str] = []
    if "enumerates_2^n" in kinds and cap != "exp":
        evidence.append(_STATIC_PHRASES["enumerates_2^n"])
    if cap == "poly":
        evidence += [_STATIC_PHRASES[k] for k in ("enumerates_2^L", "dense_2^L_matrix") if k in kinds]
    if measured is not None and measured.rank > KINDS.index(cap):
        evidence.append(f"its measured time is {measured.describe()}")
    expect = {"poly": "a polynomial method", "exp_sqrt": "at most exp(O(sqrt n)) (2^L row states)",
              "exp": "any cost"}[cap]
    if evidence:
        return False, [f"{label} claimed, but the code {' and '.join(evidence)}; the class allows {expect}"]
    seen = ([f"measured time {measured.describe()}"] if measured is not None else []) + \
        [_STATIC_PHRASES.get(k, k.replace("_", " ")) for k in kinds]
    reasons = [f"the code's behaviour ({'; '.join(seen)}) fits {label}, which allows {expect}"]
    if label == "no_efficient_known" and measured is not None and measured.polynomial:
        reasons.append("the code runs in polynomial time under 'no_efficient_known': if it is exact, the label "
                       "undersells it (admissibility decides)")
    return True, reasons


# -- both ----------------------------------------------------------------------------------------

def _not_a_label(label) -> str:
    return f"'{label}' is not a label of the library: the labels are {', '.join(CLASS_LABELS)}"


def check_class(label: str | None, family: FamilyStructure, measured: Growth | None,
                static_kinds: list[str]) -> ClassFinding:
    """The claimed class against the family's structure and the code's behaviour, every reason listed."""
    if label is None:
        return ClassFinding(None, False, [f"no tractable_class was claimed; the labels are {', '.join(CLASS_LABELS)}"])
    if label not in RULES:
        return ClassFinding(label, False, [_not_a_label(label)])
    ok, reasons = admissible(label, family)
    agrees, more = method_agreement(label, measured, static_kinds, family)
    reasons = [f"structure: {r}" for r in reasons] + [f"method: {r}" for r in more]
    consistent = ok and agrees is not False
    return ClassFinding(label, consistent, reasons)
