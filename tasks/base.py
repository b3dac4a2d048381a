"""What a task is: descriptions for proposers, gold answers kept from them, sizes, and the
map from the task's own parameter dictionary to the model IR.

A task module defines one subclass of :class:`Task` and exposes an instance as ``TASK``.
"""

from __future__ import annotations

import functools
import inspect
import math
import zlib
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from tasks.model import IsingModel

# The nine labels of the StatMechBench-v0 tractable-class library (Appendix A of the paper).
CLASS_LABELS = (
    "transfer_matrix",
    "free_fermion",
    "pfaffian",
    "gauge",
    "percolation",
    "rbim_nishimori",
    "treewidth_bounded",
    "exactly_solvable_other",
    "no_efficient_known",
)

STATMECHBENCH_CITATION = (
    "StatMechBench-v0 task card (Appendix B of 'Exploring Structures in Physics Problems: "
    "Can AI Agents Discover Statistical Mechanical Mappings?'), reproduced as benchmark data."
)


@dataclass(frozen=True)
class Quantity:
    """What a task's function returns (the verifier compares this, and runs only the checks named).

    The default is the partition function Z; a candidate may define ``log_Z`` returning its natural
    log. A task whose quantity is not Z (a decoding probability, a disorder-averaged energy)
    declares its own: ``positive`` quantities are compared as relative errors through their logs
    (so ``log_Z`` may return the log of the quantity), the others as |x - x_ref| / |x_ref|.
    """

    name: str = "Z"
    description: str = "the partition function Z = sum_s exp(-beta H(s))"
    positive: bool = True
    #: physical assertions that hold for this quantity (evaluators/checks/physics.py); None = all of them
    assertions: tuple[str, ...] | None = None

    @property
    def is_partition_function(self) -> bool:
        return self.name == "Z"


PARTITION_FUNCTION = Quantity()


@dataclass(frozen=True)
class Gold:
    """The answer key. Never shown to proposers."""

    tractable_class: str
    complexity: str


#: beta * coupling_scale of the ladder's cold draws, one log-uniform draw in each stratum per rung:
#: beyond the samplers' [0.1, 1.5], where float64 shortcuts lose accuracy (6 .. 12); where fixed
#: precision loses the low-temperature sum and programs switch to ground-state routes (12 .. 120);
#: frozen, where the Boltzmann weights leave float64 (beyond ~350) and beyond (120 .. 3000). (It was
#: one draw in [6, 10]: a program whose route changed at 12 was never compared there, issue 36.)
COLD_STRATA = ((6.0, 12.0), (12.0, 120.0), (120.0, 3000.0))
COLD_BETA_J = (COLD_STRATA[0][0], COLD_STRATA[-1][1])


def log_uniform(rng: np.random.Generator, bounds: tuple[float, float]) -> float:
    """A draw whose logarithm is uniform between the logs of ``bounds``."""
    lo, hi = bounds
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


#: a coupling K = (1/2) log((1 - p) / p) set by an error rate p stays below this in cold draws
#: (p = 1 / (1 + e^(2K)) ~ 1e-304 there, still a normal double)
COLD_MAX_K = 350.0


def cold_error_rate(rng: np.random.Generator, stratum: tuple[float, float]) -> float:
    """An error rate p whose Nishimori coupling K = (1/2) log((1 - p) / p) is log-uniform in
    ``stratum`` (capped at COLD_MAX_K): the cold draws of a task whose temperature is set by p."""
    lo, hi = stratum
    k = log_uniform(rng, (min(lo, COLD_MAX_K - 1.0), min(hi, COLD_MAX_K)))
    return float(math.exp(-2.0 * k) / (1.0 + math.exp(-2.0 * k)))


class Task(ABC):
    """One partition-function problem.

    Subclasses set the class attributes below and implement ``sample_params`` and either
    ``to_model`` or a ``formula`` (a tasks.formula.Formula: the default ``to_model`` reads it through
    the reader compiled from it). Sizes are always the number of spins n.
    """

    id: str
    title: str
    tier: int = 1
    canonical: str
    paraphrased: str
    hint: str | None = None
    gold: Gold
    probe_sizes: tuple[int, ...]
    #: sizes beyond the probes, checked against exact oracles (the promotion ladder)
    ladder_sizes: tuple[int, ...] = ()
    citation: str = STATMECHBENCH_CITATION
    #: what the candidate's function returns: Z (log Z from log_Z) unless the task declares another
    quantity: Quantity = PARTITION_FUNCTION
    #: bonds drawn on the Nishimori line tanh(beta J) = 1 - 2p (admits the rbim_nishimori class)
    nishimori_line: bool = False
    #: the task's formula as a structured expression (tasks/formula.py), for generated paraphrases
    formula = None
    #: n = L * L on a square lattice, so "L" in a complexity claim means sqrt(n)
    square_lattice: bool = False

    # -- to implement ---------------------------------------------------------------------
    @abstractmethod
    def sample_params(self, rng: np.random.Generator, n: int) -> dict:
        """Draw one parameter dictionary for size n (JSON-serialisable: floats and lists)."""

    @abstractmethod
    def to_model(self, params: dict, n: int) -> IsingModel:
        """The model IR of these parameters. Raises ValueError on a malformed dictionary.

        A subclass whose class attribute ``formula`` is a tasks.formula.Formula and that defines no
        ``to_model`` gets :meth:`model_from_formula` as its ``to_model`` (``__init_subclass__``)."""

    def model_from_formula(self, params: dict, n: int) -> IsingModel:
        """The model of the task's Formula at these params, read by the reader compiled from it; for a
        constrained sum, the Ising model on the faces of its constraint graph (tasks/parity_dual.py),
        whose spins need not number n (ValueError when that graph is not planar)."""
        from tasks.formula_extras import ConstrainedSum          # here: tasks.formula imports scipy

        if isinstance(self.formula, ConstrainedSum):
            return constrained_model(self.formula, params, n)
        return formula_model(self.formula, params, n)

    def __init_subclass__(cls, **kwargs) -> None:
        """A task stated by its formula alone needs no model code: its ``to_model`` reads the formula
        (a constrained sum's is the model on its dual graph; a task without a formula, or with a
        disorder average, still must define one: the class stays abstract and cannot be instantiated)."""
        super().__init_subclass__(**kwargs)
        from tasks.formula import Formula                   # here: tasks.formula imports scipy

        from tasks.formula_extras import ConstrainedSum

        if getattr(cls.to_model, "__isabstractmethod__", False) and isinstance(cls.formula, (Formula, ConstrainedSum)):
            cls.to_model = Task.model_from_formula

    def check_size(self, n: int) -> None:
        """Raise ValueError if n is not a size this task is defined for."""
        if n < 2:
            raise ValueError(f"{self.id}: n must be at least 2, got {n}")

    def own_reference(self, params: dict, n: int, method: str | None) -> tuple[float, str] | None:
        """The task's own exact value of its quantity as (value, method name), or None to evaluate
        ``to_model`` with the model oracles (the default). The value is the natural log of the
        quantity when ``quantity.positive``, else the quantity itself. ``method`` is the oracle asked
        for ("brute" at the probe sizes, None for the best one)."""
        return None

    # -- parameter transforms used by the physical assertions and the ladder ------------------
    def with_beta(self, params: dict, beta: float) -> dict:
        """The same instance at another inverse temperature."""
        return {**params, "beta": float(beta)}

    def cold_params(self, params: dict, n: int, rng: np.random.Generator,
                    stratum: tuple[float, float] = COLD_STRATA[0]) -> tuple[dict, str] | None:
        """The instance ``params`` at low temperature, with its label: beta * coupling_scale drawn
        log-uniformly in ``stratum`` (one of COLD_STRATA). None when the task has no temperature of
        its own to lower."""
        scale = coupling_scale(self.to_model(params, n))
        if scale == 0.0:
            return None
        beta_j = log_uniform(rng, stratum)
        try:
            return self.with_beta(params, beta_j / scale), f"cold: beta = {beta_j / scale:.4g}, beta*|J| = {beta_j:.4g}"
        except NotImplementedError:
            return None

    def cold_draws(self, params: dict, n: int, rng: np.random.Generator) -> list[tuple[dict, str]]:
        """The ladder's cold copies of ``params``: one per stratum of COLD_STRATA (exact means exact at
        every beta, and a program may switch routes anywhere from beta |J| = 6 to 1e3 and beyond). A
        task whose ``cold_params`` takes no ``stratum`` (written before issue 36) gives its one draw."""
        try:
            strata = "stratum" in inspect.signature(self.cold_params).parameters
        except (TypeError, ValueError):
            strata = False
        if not strata:
            made = self.cold_params(params, n, rng)
            return [] if made is None else [made]
        return [made for stratum in COLD_STRATA if (made := self.cold_params(params, n, rng, stratum)) is not None]

    def critical_params(self, params: dict, n: int) -> tuple[dict, str] | None:
        """The instance moved to the task's critical point, with its label, or None when the task
        has none (the default)."""
        return None

    def flip_fields(self, params: dict) -> dict | None:
        """Parameters with every field negated (Z must not change), or None if fields are not inputs."""
        return None

    def gauge(self, params: dict, signs: np.ndarray) -> dict | None:
        """Parameters after the gauge s_i -> g_i s_i with ``signs`` g in {-1,+1}^n (Z must not change),
        or None when the couplings are not inputs that can absorb it."""
        return None

    # -- shared ---------------------------------------------------------------------------
    def description(self, variant: str = "canonical") -> str:
        """The text a proposer sees. A task whose quantity is not Z says so at the end, because
        the paper's system prompt speaks of partition functions."""
        if variant == "canonical":
            text = self.canonical
        elif variant == "paraphrased":
            text = self.paraphrased
        else:
            raise ValueError(f"unknown description variant {variant!r} (canonical, paraphrased)")
        if not self.quantity.is_partition_function:
            text += (f"\nNote: for this problem Z_efficient(params, n) returns {self.quantity.description}, "
                     "not a partition function; the checker compares that value (relative error 1e-6).")
        return text

    def rng_for(self, seed: int, n: int, sample: int) -> np.random.Generator:
        """Deterministic generator for (task, seed, n, sample index)."""
        return np.random.default_rng([zlib.crc32(self.id.encode()), int(seed), int(n), int(sample)])

    def probe_params(self, n: int, seed: int, sample: int) -> dict:
        self.check_size(n)
        return self.sample_params(self.rng_for(seed, n, sample), n)

    def __repr__(self) -> str:
        return f"<Task {self.id}: {self.title}>"


# -- parameter validation used by the task modules --------------------------------------------

def _holds_bool(value) -> bool:
    """True when ``value`` is, or (nested lists, arrays) contains, a boolean: JSON's true is not 1."""
    if isinstance(value, (bool, np.bool_)):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype == np.bool_ or (value.dtype == object and any(_holds_bool(v) for v in value.flat))
    if isinstance(value, (list, tuple)):
        return any(_holds_bool(v) for v in value)
    return False


def refuse_booleans(params: dict) -> None:
    """ValueError naming the first parameter that holds a boolean (parameters are numbers; a
    parameter file's ``"beta": true`` must not be read as beta = 1)."""
    for key, value in params.items():
        if isinstance(value, dict):
            refuse_booleans(value)
        elif _holds_bool(value):
            raise ValueError(f"parameter {key!r} holds a boolean (true/false) where numbers are expected")


def get_float(params: dict, key: str) -> float:
    if key not in params:
        raise ValueError(f"missing parameter {key!r}")
    if _holds_bool(params[key]):
        raise ValueError(f"parameter {key!r} must be a number, not a boolean")
    try:
        v = float(params[key])
    except (TypeError, ValueError):
        raise ValueError(f"parameter {key!r} must be a number") from None
    if not np.isfinite(v):
        raise ValueError(f"parameter {key!r} must be finite")
    return v


def get_array(params: dict, key: str, shape: tuple[int, ...], pm_one: bool = False) -> np.ndarray:
    """The parameter as a float array of exactly ``shape`` (entries +-1 when ``pm_one``)."""
    if key not in params:
        raise ValueError(f"missing parameter {key!r}")
    if _holds_bool(params[key]):
        raise ValueError(f"parameter {key!r} must be numeric with shape {shape}, not booleans")
    try:
        a = np.asarray(params[key], dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"parameter {key!r} must be numeric with shape {shape}") from None
    if a.shape != shape:
        raise ValueError(f"parameter {key!r} has shape {a.shape}, expected {shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"parameter {key!r} must be finite")
    if pm_one and not np.all(np.abs(a) == 1.0):
        raise ValueError(f"parameter {key!r} entries must be -1 or +1")
    return a


def coupling_scale(model: IsingModel) -> float:
    """The energy scale that sets "cold" (beta * scale >> 1): the largest |weight| of a single
    term, a rank-one block counting as the whole field it exerts on one spin, |a| max u^2 (m - 1)
    for its m spins (so a mean-field J/n block counts as J)."""
    scale = float(np.max(np.abs(model.weights), initial=0.0))
    for u, a in model.rank_one:
        u = np.asarray(u, dtype=np.float64)
        scale = max(scale, abs(float(a)) * float(np.max(u * u, initial=0.0)) * max(int(np.count_nonzero(u)) - 1, 1))
    return scale


def formula_model(formula, params: dict, n: int) -> IsingModel:
    """The model IR of a Formula's terms (tasks/formula.py) at these params, through its compiled reader:
    the reader's weight W = c + sum w prod s + rank-one blocks is the model's -H, term for term, at the
    reader's beta (1 for a formula without an inverse temperature); its drawing, if any, is a
    candidate the planar methods verify before use."""
    read = _formula_reader(formula)(params, n)
    terms, weights = [], []
    for idx, w in read["terms"]:
        terms += [tuple(row) for row in np.asarray(idx).tolist()]
        weights.append(np.asarray(w, dtype=np.float64))
    return IsingModel(n=int(read["n"]), terms=tuple(terms),
                      weights=np.concatenate(weights) if weights else np.zeros(0), beta=float(read["beta"]),
                      constant=float(read["constant"]),
                      rank_one=tuple((np.asarray(u, dtype=np.float64), float(a)) for u, a in read["rank_one"]),
                      positions=read["positions"])


def constrained_model(formula, params: dict, n: int) -> IsingModel:
    """The Ising model on the faces of a constrained sum's constraint graph (tasks/parity_dual.py) at these
    params: its Z, constant included, is the sum. A sum reduced to no spin keeps one free spin (its log 2
    taken out of the constant), since a model has at least one."""
    from tasks.parity_dual import _fd_model

    dual = _fd_model(_formula_reader(formula)(params, n))
    terms, weights = [], []
    for idx, w in dual["terms"]:
        terms += [tuple(row) for row in np.asarray(idx).tolist()]
        weights.append(np.asarray(w, dtype=np.float64))
    spins = max(int(dual["n"]), 1)
    constant = float(dual["log_shift"]) - (math.log(2.0) if dual["n"] == 0 else 0.0)
    return IsingModel(n=spins, terms=tuple(terms), weights=np.concatenate(weights) if weights else np.zeros(0),
                      beta=1.0, constant=constant)


@functools.lru_cache(maxsize=64)
def _formula_reader(formula):
    from tasks.formula_reader import compile_reader

    return compile_reader(formula).load()


def sample_beta(rng: np.random.Generator) -> float:
    """Inverse temperature for probes: uniform on [0.1, 1.5], so low temperatures are included."""
    return float(rng.uniform(0.1, 1.5))


def square_side(task_id: str, n: int, min_side: int) -> int:
    """L with n = L*L, or ValueError."""
    L = math.isqrt(n) if n >= 0 else -1
    if L * L != n or L < min_side:
        raise ValueError(f"{task_id}: n must be L*L with L >= {min_side}, got n={n}")
    return L
