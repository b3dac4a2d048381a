"""Generated paraphrases: new descriptions of a task, written deterministically from a seed by
applying the paper's rewrite rules to the task's formula (tasks/formula.py) by program.

Rules, each drawn from ``numpy.random.default_rng([seed, crc32(task id)])``:

* rename the variable family, the index letters and (in the text) the parameters; the text states
  which params key each name reads, because the candidate still receives the task's params dict;
* variables in {-1, +1} or {0, 1}, the exponent rewritten to match (s = 2x - 1 or x = (1 + s)/2),
  short products multiplied out or kept as affine factors;
* the exponent as an energy (Z = sum exp(-beta E)) or as a weight (Z = sum exp(+beta W));
* terms, factors and independent sums in another order;
* no canonical model names and no hints: the text is built from templates and the formula only.

The rewritten formula travels with the text, so its own evaluation checks the paraphrase against
the task's oracle; the parameter dictionary, and therefore the oracle, is unchanged.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from string import Template

import numpy as np

from tasks.base import Task
from tasks.formula import DOMAIN_TEXT, Formula
from tasks.formula_extras import ConstrainedSum, DisorderAverage

#: words a generated description must not contain (model names and the jargon that points at them)
CANONICAL_NAMES = (
    "ising", "spin", "glass", "ferromagnet", "antiferromagnet", "mattis", "curie", "weiss", "mean-field",
    "mean field", "lattice gas", "edwards", "anderson", "onsager", "toric", "nishimori", "plaquette",
    "kitaev", "potts", "sherrington", "kirkpatrick", "hopfield", "delaunay", "hamiltonian",
    "partition function", "chemical potential", "occupation", "magnet", "frustrat", "temperature",
    "boltzmann", "pfaffian", "kasteleyn", "transfer matrix", "torus", "triangular", "tree",
    "toric", "homology", "syndrome", "qubit", "decod", "error chain", "stabilizer", "anyon", "random-bond",
    "random bond", "disorder", "gauge",
)

VARIABLE_NAMES = ("x", "u", "y", "z", "q", "v", "sigma", "b", "t")
INDEX_LETTERS = ("i", "j", "k", "p", "a", "b", "c", "d", "e", "f", "g", "l", "o", "r", "t", "u", "v", "w")
PARAM_NAMES = ("w", "A", "B", "D", "K", "P", "Q", "R", "U", "V", "g", "f", "theta", "omega", "alpha", "gamma",
               "delta", "kappa", "eta", "rho", "nu", "phi", "psi", "tau", "zeta", "lam", "c1", "c2", "c3")
BETA_NAMES = ("b", "t", "kappa", "lam", "g0")
FUNCTION_NAMES = {"weight": ("W", "G", "F"), "energy": ("E", "C", "H")}
#: chance that a parameter keeps its params-key name in the text
KEEP_PARAM_NAME = 0.3


@dataclass(frozen=True)
class Paraphrase:
    """One generated description. ``names`` maps each name of the task's formula (variable family,
    index letters, parameter names) to the name used here; ``rules`` lists the rewrites applied."""

    task_id: str
    seed: int
    text: str
    formula: Formula
    names: dict[str, str]
    rules: tuple[str, ...]


def paraphrase(task: Task, seed: int) -> Paraphrase:
    """The seed-th generated description of ``task`` (same seed, same text)."""
    if task.formula is None:
        raise ValueError(f"{task.id} has no formula (tasks/formula.py), so no paraphrase can be generated")
    if task.quantity.is_partition_function != isinstance(task.formula, Formula):
        raise ValueError(f"{task.id}'s quantity is {task.quantity.name} but its formula is a "
                         f"{type(task.formula).__name__}: a partition function Z takes a Formula, other "
                         "quantities a construct of tasks/formula_extras.py")
    rng = np.random.default_rng([int(seed), zlib.crc32(task.id.encode())])
    formula = task.formula
    names = _renaming(formula, rng)
    domain = str(rng.choice(["pm1", "01"]))
    expand = bool(rng.random() < 0.7)
    convention = str(rng.choice(["weight", "energy"]))
    rewritten = (formula.renamed(names).with_domain(domain, expand=expand)
                 .with_convention(convention).reordered(rng))
    how = "" if domain == formula.domain else f" ({'expanded' if expand else 'factored'})"
    rules = ("rename", f"domain={domain}{how}",
             f"convention={convention}", "reorder")
    text = (describe(task, rewritten, rng) if isinstance(rewritten, Formula)
            else describe_extra(task, rewritten, rng))
    found = banned_words(re.sub(r'params\["\w+"\]', "params[...]", text))   # the keys are the interface
    if found:
        raise ValueError(f"{task.id}: the generated text uses canonical names {found}; fix the formula's phrases")
    return Paraphrase(task.id, int(seed), text, rewritten, names, rules)


def banned_words(text: str) -> list[str]:
    low = text.lower()
    return [w for w in CANONICAL_NAMES if w in low]


def describe(task: Task, formula: Formula, rng: np.random.Generator | None = None) -> str:
    """The full description of ``formula`` as a task statement: variables, params entries, sizes,
    the exponent and Z, the function to write and the task's time requirement. ``rng`` picks among
    equivalent phrasings (None: the first of each)."""
    pick = (lambda options: options[0]) if rng is None else (lambda options: options[int(rng.integers(len(options)))])
    dom = DOMAIN_TEXT[formula.domain]
    function = pick([f for f in FUNCTION_NAMES[formula.convention] if f not in formula.identifiers()])
    opening = pick(["Consider", "There are", "Take"])
    lines = [f"{opening} {_layout(formula)}, each taking a value in {dom}; n is the number of variables."]
    if formula.size_note:
        lines.append(f"Sizes: {formula.fill(formula.size_note)}.")
    lines.append(pick(["The inputs arrive in the dictionary params; below they are called:",
                       "Your function receives a dictionary params. Its entries, and the names used for them below:"]))
    width = max(len(p.name) for p in formula.params)
    for p in sorted(formula.params, key=lambda p: p.key != formula.beta_key):
        lines.append(f"  {p.name:<{width}} = params[\"{p.key}\"], {formula.fill(p.about)}")
    style = pick(["sub", "words"])
    ends = "sum_{i=a}^{b}" if style == "sub" else "a sum over i = a..b"
    lines.append(pick(["Define", "Let"]) + f" (indices start at 0, {ends} includes both ends, and index "
                 "arithmetic is Python's: % is the remainder):")
    lines.append(formula.exponent_text(function, style))
    lines.append("Write a Python function\n"
                 "def Z_efficient(params: dict, n: int) -> float:\n"
                 "that returns Z for the given params and n." + _requirement(task))
    return "\n".join(lines)


def describe_extra(task: Task, f: ConstrainedSum | DisorderAverage, rng: np.random.Generator | None = None) -> str:
    """The task statement of a quantity that is not Z (tasks/formula_extras.py): the arrays, the params
    entries, the formulas, the conditions or the average, and what the function returns."""
    pick = (lambda options: options[0]) if rng is None else (lambda options: options[int(rng.integers(len(options)))])
    free = lambda pool: [x for x in pool if x not in f.identifiers() | f.fixed_names()]  # noqa: E731
    parts = (f.weight,) if isinstance(f, ConstrainedSum) else (f.disorder, f.inner)
    arrays = ", and ".join(f"{_array(g)}, each taking a value in {DOMAIN_TEXT[g.domain]}" for g in parts)
    lines = [f"{pick(['Consider', 'There are', 'Take'])} {arrays}.",
             f"Sizes: {Template(parts[0].size_note).substitute({p.key: p.name for p in f.params})}."]
    lines.append(pick(["The inputs arrive in the dictionary params; below they are called:",
                       "Your function receives a dictionary params. Its entries, and the names used for them below:"]))
    width = max(len(p.name) for p in f.params)
    for p in f.params:
        lines.append(f"  {p.name:<{width}} = params[\"{p.key}\"], {p.about}")
    style = pick(["sub", "words"])
    ends = "sum_{i=a}^{b}" if style == "sub" else "a sum over i = a..b"
    lines.append(pick(["Define", "Let"]) + f" (indices start at 0, {ends} includes both ends, and index "
                 "arithmetic is Python's: % is the remainder; log is the natural logarithm):")
    g = parts[0]
    first, second = free(FUNCTION_NAMES[g.convention])[:2] if rng is None else rng.permutation(
        free(FUNCTION_NAMES[g.convention]))[:2].tolist()
    expo = (lambda fn, arg, b="": f"exp({b}{fn}({arg}))") if g.convention == "weight" else \
        (lambda fn, arg, b="": f"exp(-{b}{fn}({arg}))")
    total = pick(free(["M", "Q", "P", "S"]))
    lines.append(g.definition_text(first, style))
    if isinstance(f, ConstrainedSum):
        lines.append(f"An assignment {g.variable} is admissible when every one of these conditions holds:")
        lines += ["  " + c.text(g.variable, style) for c in f.constraints]
        lines.append(f"{total} = sum over all admissible {g.variable} of {expo(first, g.variable)}")
    else:
        inner, x, eta = f.inner, f.inner.variable, g.variable
        ref, expr = f.reference
        lines.append(f"{ref} = {expr}")
        lines.append(f"For each {eta} (the coefficients below read it):")
        lines.append(inner.definition_text(second, style))
        avg = pick(free(["A", "m", "avg"]))
        if f.statistic == "ratio":
            beta = inner.param(inner.beta_key).name
            body = f"(sum over all {x} of {expo(second, x, beta + ' * ')}) / (sum over all {x} of {expo(second, x, ref + ' * ')})"
        else:
            minus = "-" if inner.convention == "weight" else ""
            body = (f"{minus}(sum over all {x} of {second}({x}) * {expo(second, x, ref + ' * ')}) / "
                    f"(sum over all {x} of {expo(second, x, ref + ' * ')})")
        lines.append(f"{avg}({eta}) = {body}")
        lines.append(f"{total} = sum over all {eta} of {expo(first, eta)} * {avg}({eta})")
    log_too = (f"\nYou may also define log_Z(params, n) returning the natural log of {total}."
               if task.quantity.positive else "")
    lines.append("Write a Python function\n"
                 "def Z_efficient(params: dict, n: int) -> float:\n"
                 f"that returns the number {total} defined above for the given params and n." + log_too + _requirement(task))
    return "\n".join(lines)


def _array(formula: Formula) -> str:
    v, dims = formula.variable, formula.shape
    ranges = ", ".join(f"index {k + 1} in 0..{_minus_one(d)}" for k, d in enumerate(dims))
    return f"{' * '.join(dims)} variables {v}{'[.]' * len(dims)} forming an array of shape {' x '.join(dims)} ({ranges})"


def _renaming(formula: Formula, rng: np.random.Generator) -> dict[str, str]:
    """Fresh names for the variable family, every index letter and (mostly) every parameter,
    pairwise distinct and clear of the fixed names (n, derived sizes, functions)."""
    fixed = formula.fixed_names() | {name for names in FUNCTION_NAMES.values() for name in names} | {"Z"}
    kept = {p.name for p in formula.params if rng.random() < KEEP_PARAM_NAME and not banned_words(p.name)}
    used = fixed | formula.identifiers()          # a new name never takes an old one: no capture
    names: dict[str, str] = {name: name for name in kept}

    def choose(old: str, pool) -> None:
        options = [x for x in pool if x not in used]
        names[old] = str(options[int(rng.integers(len(options)))])
        used.add(names[old])

    for family in formula.variables:
        choose(family, VARIABLE_NAMES)
    for p in formula.params:
        if p.name not in kept:
            choose(p.name, BETA_NAMES if p.key == formula.beta_key else PARAM_NAMES)
    for letter in sorted(formula.index_letters()):
        choose(letter, INDEX_LETTERS)
    return names


def _layout(formula: Formula) -> str:
    v = formula.variable
    if len(formula.shape) == 1:
        return f"n variables {v}[0], ..., {v}[n - 1]"
    dims = " x ".join(formula.shape)
    ranges = ", ".join(f"index {k + 1} in 0..{_minus_one(d)}" for k, d in enumerate(formula.shape))
    return f"n variables {v}{'[.]' * len(formula.shape)} forming an array of shape {dims} ({ranges})"


def _minus_one(size: str) -> str:
    return str(int(size) - 1) if size.isdigit() else f"{size} - 1"


def _requirement(task: Task) -> str:
    """What the task's own card asks of the running time, reworded (never more than it asks:
    a negative control's card does not promise a polynomial method, so neither does this)."""
    card = task.canonical
    if "no polynomial-time algorithm" in card:
        return ("\nIf, after studying the structure of the interactions, you find that no polynomial-time "
                "method is known, say so explicitly and give your best exact implementation; it will only "
                "be called at small n.")
    if re.search(r"polynomial in L\b", card):
        return ("\nThe running time must be polynomial in L: exponential in sqrt(n) is acceptable, "
                "exponential in n is not.")
    if "polynomial in n" in card:
        return "\nThe running time must be polynomial in n; enumerating all 2^n assignments is too slow."
    return ""
