"""The interface a candidate program must meet, derived from the task object itself.

A prompt that only shows the task's prose leaves a model guessing the keys of ``params``, their
shapes, the sizes it will be run at and what happens when Z overflows a float. This module
reads all of that off the task the verifier uses: parameter dictionaries drawn by the task's own
sampler at its probe sizes (several seeds) and ladder sizes (one each), the shapes fitted as
functions of n (or of L when every size is a square or a cube), the values those samples hold,
the size where Z stops fitting a float (bounds from the model IR: Jensen's
log Z >= n log 2 + beta c below, n log 2 + beta |H|_max above), and the checks that apply to the
task's declared quantity. It works the same for catalogued tasks, paraphrases (the candidate
receives the task's own dictionary) and user task files. It never reads ``task.gold``.

:func:`task_interface` gives a :class:`TaskInterface`; its :meth:`~TaskInterface.text` is the
block the evolve prompt shows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from evaluators.answer_kinds import HONESTY_FACTOR, MAX_CONTROLS
from evaluators.checks.physics import DECLARED_QUANTITY_ASSERTIONS
from evaluators.comparison import REL_TOL
from tasks.base import Task

FLOAT_MAX_LOG = math.log(np.finfo(float).max)   # 709.78: log of the largest float
PROBE_SAMPLES = 5                                # parameter draws per probe size (ranges of values)
LADDER_SAMPLES = 1                               # per ladder size (shapes only; the large sizes are costly)

#: the physical assertions of a Z task, each with what it asks (evaluators/checks/physics.py)
Z_ASSERTIONS = (
    ("unseen_parameters", "fresh parameters at a size beyond the probes agree with the exact value"),
    ("beta_zero", "at beta = 0, log Z = n log 2"),
    ("spin_flip", "negating every field leaves Z unchanged"),
    ("gauge_invariance", "a random gauge s_i -> g_i s_i of the couplings leaves Z unchanged"),
    ("convexity_in_beta", "log Z is convex in beta"),
    ("energy", "-d log Z / d beta (central differences) agrees with the exact energy"),
    ("low_temperature", "at large beta (6 / max|coupling|) log Z matches the ground-state limit"),
)


@dataclass(frozen=True)
class ParamSpec:
    """One key of ``params``: what it holds (``kind``), its shape in terms of n or L (None for a
    scalar) and the values the verifier's samples hold."""

    key: str
    kind: str
    shape: str | None
    values: str

    def line(self) -> str:
        shape = f", shape {self.shape}" if self.shape else ""
        return f'- params["{self.key}"]: {self.kind}{shape}; {self.values}'


@dataclass(frozen=True)
class TaskInterface:
    task: str
    quantity: str                 # what Z_efficient returns, in words
    positive: bool                # compared through logs (log_Z may return its log)
    is_partition_function: bool
    probe_sizes: tuple[int, ...]
    ladder_sizes: tuple[int, ...]
    size_relation: str            # "n = L*L (L = isqrt(n))", or "" when n is just the number of spins
    params: tuple[ParamSpec, ...]
    beta_key: bool                # params has "beta" (any positive float is allowed)
    overflow_certain: int | None  # smallest size used where every sample's Z exceeds the float range
    overflow_possible: int | None # smallest size used where some sample's Z may exceed it
    assertions: tuple[tuple[str, str], ...]
    #: the answers besides an exact program this task invites (Tier 3: bounds, an approximation), else ()
    answer_kinds: tuple[str, ...] = ()

    def text(self) -> str:
        blocks = [self.call_text(), self.params_text(), self.log_z_text(), self.checks_text()]
        if self.answer_kinds:
            blocks.append(self.answers_text())
        return "\n\n".join(blocks)

    def answers_text(self) -> str:
        """The answer kinds that are not exact programs (evaluators/answer_kinds.py, bounds_check.py)."""
        what = "Z" if self.is_partition_function else "the quantity"
        return "\n".join([
            "No efficient exact method may exist for this task. Instead of an exact program you may answer with "
            "(define ONE of these top-level functions; it is judged instead of Z_efficient):",
            f"- bounds: log_Z_bounds(params, n) -> (lo, hi), rigorous bounds on the natural log of {what} "
            "(lo may be -inf or hi +inf for a one-sided bound). A bound that fails at ANY instance the verifier "
            "can check exactly (probes and ladder) rejects the program, naming the instance; valid bounds are "
            "ranked by the gap (hi - lo) / n per spin, tighter first.",
            f"- approximation: log_Z_approx(params, n) -> [(control, value), ...], estimates of log {what} at "
            f"increasing values of a control parameter (bond dimension, sweeps; at most {MAX_CONTROLS} pairs, the "
            "last is the answer). The change between the last two values is your evidence of convergence: the "
            f"answer is rejected where its actual error exceeds {HONESTY_FACTOR:g} times that change; accepted ones are "
            "ranked by error per spin.",
            "An exact program ranks above valid bounds, and valid bounds above an approximation; complexity_O "
            "is the cost of computing the answer."])

    def call_text(self) -> str:
        size = "the number of spins" if self.is_partition_function else "the task's size"
        lines = [f"Your code must define a top-level function Z_efficient(params, n) returning {self.quantity} "
                 f"as a float; n is {size}, params a dict (below)."]
        sizes = f"The verifier calls it at n = {_list(self.probe_sizes)} (the probes)"
        if self.ladder_sizes:
            sizes += f" and then at n = {_list(self.ladder_sizes)} (the promotion ladder)"
        lines.append(sizes + "; the complexity audit may time other sizes of the same form.")
        if self.size_relation:
            lines.append(f"At every size, {self.size_relation}.")
        return "\n".join(lines)

    def params_text(self) -> str:
        head = "params holds exactly these keys (shapes and values read from the verifier's own samples):"
        lines = [head, *(p.line() for p in self.params)]
        if self.beta_key:
            lines.append('beta may be any positive float: the physical assertions also call beta = 0 and beta far '
                         "above the sampled range, so the code must be exact there too.")
        return "\n".join(lines)

    def log_z_text(self) -> str:
        if not self.positive:
            return ("Only Z_efficient(params, n) is called: it returns the value itself, which may be negative; "
                    f"it is compared as |x - x_ref| / |x_ref| < {REL_TOL:g}.")
        what = "Z" if self.is_partition_function else "the quantity"
        lines = [f"You may also define log_Z(params, n) returning the natural log of {what}. When it exists, "
                 "the verifier compares it at the probes (next to Z_efficient) and calls only log_Z on the ladder "
                 f"and in the checks; values are compared in log domain (relative error of {what} < {REL_TOL:g}). "
                 "Z_efficient must still be defined (math.exp(log_Z(params, n)) is fine)."]
        if self.overflow_certain is not None or self.overflow_possible is not None:
            top = FLOAT_MAX_LOG
            if self.overflow_certain is not None:
                text = (f"{what} exceeds the largest float (about 1.8e308, log {what} > {top:.2f}) in every sample "
                        f"from n = {self.overflow_certain}")
                if self.overflow_possible is not None and self.overflow_possible < self.overflow_certain:
                    text += f", and can from n = {self.overflow_possible} (low temperature, strong couplings)"
            else:
                text = (f"{what} can exceed the largest float (about 1.8e308, log {what} > {top:.2f}) from "
                        f"n = {self.overflow_possible} (low temperature, strong couplings)")
            lines.append(text + ": a program without log_Z cannot be verified beyond that size.")
        return "\n".join(lines)

    def checks_text(self) -> str:
        lines = ["What the verifier checks (every failure is reported back; reference values are never shown):",
                 f"1. probes: at n = {_list(self.probe_sizes)}, several parameter samples each, against "
                 + ("brute-force enumeration" if self.is_partition_function else "the task's exact reference")
                 + f" (relative error < {REL_TOL:g});"]
        k = 2
        if self.ladder_sizes:
            lines.append(f"{k}. promotion ladder: n = {_list(self.ladder_sizes)}, each against an exact oracle within a "
                         "time budget per size; a wrong value at any size rejects, running out of time only ends "
                         "the climb;")
            k += 1
        lines.append(f"{k}. complexity audit: running times measured over the sizes are fitted and held against "
                     "your complexity_O; a claim the measurements contradict is rejected;")
        lines.append(f"{k + 1}. class consistency: your tractable_class must be admissible for the structure of these "
                     "instances (planarity, treewidth, fields, coupling rank) and agree with what the code does "
                     "(enumerating 2^n states is not a polynomial class);")
        names = "; ".join(f"{name} ({what})" for name, what in self.assertions)
        lines.append(f"{k + 2}. physical assertions on parameters the program has not seen: {names}.")
        return "\n".join(lines)


def task_interface(task: Task, seed: int = 0) -> TaskInterface:
    """The interface of ``task`` read from its own samples (``seed`` seeds the draws)."""
    samples: dict[int, list[dict]] = {}
    for n in task.probe_sizes:
        samples[n] = [task.probe_params(n, seed, k) for k in range(PROBE_SAMPLES)]
    for n in task.ladder_sizes:
        if n not in samples:
            samples[n] = [task.probe_params(n, seed, k) for k in range(LADDER_SAMPLES)]
    sizes = sorted(samples)
    variables = _size_variables(sizes)
    keys = list(samples[sizes[0]][0])
    specs, used = [], set()
    shapes = {key: {n: [_shape(p[key]) for p in samples[n]] for n in sizes} for key in keys}
    for key in keys:
        shape, var = _fit_shape(key, shapes, sizes, variables)
        if var:
            used.add(var)
        values = [p[key] for n in sizes for p in samples[n]]
        by_size = {n: [p[key] for p in samples[n]] for n in sizes}
        specs.append(ParamSpec(key, _kind(values), shape, _values(by_size, key)))
    relation = next((text for name, _, text in variables if name in used and text), "")
    q = task.quantity
    certain = possible = None
    if q.is_partition_function:
        certain, possible = _overflow_sizes(task, samples, sizes)
    assertions = Z_ASSERTIONS if q.is_partition_function else ()
    if q.is_partition_function:
        sample = samples[sizes[0]][0]
        skip = set()
        if task.flip_fields(sample) is None:
            skip.add("spin_flip")
        if task.gauge(sample, np.ones(sizes[0])) is None:
            skip.add("gauge_invariance")
        wanted = q.assertions
        assertions = tuple((n_, w) for n_, w in Z_ASSERTIONS if n_ not in skip and (wanted is None or n_ in wanted))
    else:
        wanted = q.assertions if q.assertions is not None else DECLARED_QUANTITY_ASSERTIONS
        assertions = tuple((n_, dict(Z_ASSERTIONS)[n_]) for n_ in wanted if n_ in DECLARED_QUANTITY_ASSERTIONS)
    quantity = "Z" if q.is_partition_function else q.description
    kinds = ("bounds", "approximation") if q.positive and getattr(task, "tier", 1) >= 3 else ()
    return TaskInterface(task.id, quantity, q.positive, q.is_partition_function, tuple(task.probe_sizes),
                         tuple(task.ladder_sizes), relation, tuple(specs), "beta" in keys, certain, possible,
                         assertions, kinds)


# -- shapes ----------------------------------------------------------------------------------

def _size_variables(sizes: list[int]) -> list[tuple[str, object, str]]:
    """(name, n -> value, relation text) of the size variables shapes may be written in."""
    out = [("n", lambda n: n, "")]
    if all(math.isqrt(n) ** 2 == n for n in sizes):
        out.append(("L", math.isqrt, "n = L*L (L = isqrt(n))"))
    cube = [round(n ** (1 / 3)) for n in sizes]
    if all(c ** 3 == n for c, n in zip(cube, sizes)):
        out.append(("L", lambda n: round(n ** (1 / 3)), "n = L*L*L (L = round(n ** (1/3)))"))
    return out


def _shape(value) -> tuple | None:
    """The shape of a (nested) list, None for a scalar, "ragged" for uneven nesting."""
    if not isinstance(value, (list, tuple)):
        return None
    try:
        arr = np.asarray(value)
    except ValueError:
        return ("ragged",)
    if arr.dtype == object:
        return ("ragged",)
    return tuple(int(d) for d in arr.shape)


def _fit_shape(key: str, shapes: dict, sizes: list[int], variables) -> tuple[str | None, str | None]:
    """The shape of ``key`` in words, and the size variable it uses (None when only n or none)."""
    per_size = shapes[key]
    every = [s for n in sizes for s in per_size[n]]
    if every[0] is None:
        return None, None
    if any(s is None or s == ("ragged",) or len(s) != len(every[0]) for s in every):
        return "a list of lists of varying lengths", None
    dims, used = [], None
    for d in range(len(every[0])):
        text, var = None, None
        if all(len({s[d] for s in per_size[n]}) == 1 for n in sizes):
            values = [per_size[n][0][d] for n in sizes]
            text, var = _fit_dim(values, sizes, variables)
        if text is None:
            owner = _dimension_owner(key, d, shapes, sizes)
            text = "m" if owner == key else f'len(params["{owner}"])'
        if var == "L":
            used = "L"
        dims.append(text)
    shape = f"({', '.join(dims)}{',' if len(dims) == 1 else ''})"
    if "m" in dims:
        shape += " where m varies with the instance"
    return shape, used


def _fit_dim(values: list[int], sizes: list[int], variables) -> tuple[str | None, str | None]:
    """``values`` (one per size) as a*v + b in one size variable v, a and b simple fractions."""
    if len(set(values)) == 1:
        return str(values[0]), None
    if len(set(sizes)) < 2:
        return None, None
    for name, fn, _ in variables:
        vs = [fn(n) for n in sizes]
        i, j = 0, next(k for k in range(len(vs)) if vs[k] != vs[0])
        a = Fraction(values[j] - values[i], vs[j] - vs[i])
        b = values[i] - a * vs[i]
        if a.denominator > 6 or b.denominator > 6 or any(a * v + b != d for v, d in zip(vs, values)):
            continue
        return _affine(a, b, name), name
    return None, None


def _affine(a: Fraction, b: Fraction, var: str) -> str:
    den = math.lcm(a.denominator, b.denominator)
    p, q = int(a * den), int(b * den)
    head = var if p == 1 else f"-{var}" if p == -1 else f"{p}{var}"
    body = head if q == 0 else f"{head}{'+' if q > 0 else '-'}{abs(q)}"
    if den == 1:
        return body
    return f"{body}/{den}" if q == 0 else f"({body})/{den}"


def _dimension_owner(key: str, d: int, shapes: dict, sizes: list[int]) -> str:
    """The first key (in params order) whose first dimension equals dimension ``d`` of ``key`` in
    every sample: ``key`` itself when none comes before it."""
    mine = [s[d] for n in sizes for s in shapes[key][n]]
    for other, per_size in shapes.items():
        if other == key:
            return key
        theirs = [s[0] if s and s != ("ragged",) else None for n in sizes for s in per_size[n]]
        if theirs == mine:
            return other
    return key


# -- values ----------------------------------------------------------------------------------

def _flat(value) -> list:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    return [value]


def _kind(values: list) -> str:
    flat = [x for v in values for x in _flat(v)]
    nested = isinstance(values[0], (list, tuple))
    if all(isinstance(x, bool) for x in flat):
        base = "bool"
    elif all(isinstance(x, int) and not isinstance(x, bool) for x in flat):
        base = "int"
    elif all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in flat):
        base = "float"
    else:
        base = type(flat[0]).__name__ if flat else "value"
    if not nested:
        return base
    depth = 0
    v = values[0]
    while isinstance(v, (list, tuple)) and v:
        depth, v = depth + 1, v[0]
    return "list of " + base + "s" if depth == 1 else f"nested list ({depth} levels) of {base}s"


def _values(by_size: dict[int, list], key: str) -> str:
    flat_by_size = {n: [x for v in vs for x in _flat(v)] for n, vs in by_size.items()}
    flat = [x for xs in flat_by_size.values() for x in xs]
    numbers = [x for x in flat if isinstance(x, (int, float)) and not isinstance(x, bool)]
    if len(numbers) != len(flat) or not flat:
        distinct = sorted({repr(x) for x in flat})
        return "values " + ", ".join(distinct[:6]) + (" ..." if len(distinct) > 6 else "")
    distinct = sorted(set(numbers))
    entries = "entries" if any(isinstance(v, (list, tuple)) for vs in by_size.values() for v in vs) else "value"
    if len(distinct) <= 4:
        return f"{entries} in {{{', '.join(_num(x) for x in distinct)}}}"
    if all(isinstance(x, int) for x in numbers) and all(max(xs) <= n - 1 for n, xs in flat_by_size.items() if xs):
        return f"{entries} are integers from {min(numbers)} to n-1 (spin indices)"
    return f"{entries} between {_num(min(numbers))} and {_num(max(numbers))} in the samples"


def _num(x) -> str:
    return str(x) if isinstance(x, int) else f"{x:.4g}" if x != int(x) else f"{x:.1f}"


def _list(sizes) -> str:
    return ", ".join(str(n) for n in sizes)


# -- overflow --------------------------------------------------------------------------------

def _overflow_sizes(task: Task, samples: dict[int, list[dict]], sizes: list[int]) -> tuple[int | None, int | None]:
    """(smallest size where every sample's log Z > log(float max), smallest where some sample's may)."""
    certain = possible = None
    for n in sizes:
        lows, highs = [], []
        for p in samples[n]:
            try:
                m = task.to_model(p, n)
            except ValueError:
                continue
            lows.append(n * math.log(2.0) + m.beta * m.constant)       # Jensen: the mean energy is -constant
            highs.append(n * math.log(2.0) - m.beta * m.energy_bound())
        if not lows:
            continue
        if possible is None and max(highs) > FLOAT_MAX_LOG:
            possible = n
        if certain is None and min(lows) > FLOAT_MAX_LOG:
            certain = n
    return certain, possible
