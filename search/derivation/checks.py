"""Every step checked before the next is tried: log Z before = log Z after + the recorded change.

Two checks per step, on small instances of the task (its probe sizes up to :data:`CHECK_MAX_N`
spins, two parameter draws and one cold copy with beta multiplied by :data:`COLD_FACTOR`; a disorder
average at the smallest size its formula takes):

* in-process, the states before and after the step (computed by the very functions the program
  renders) are evaluated exactly: spin models by the verifier's brute force
  (evaluators/oracles/brute.py) up to :data:`BRUTE_MAX_N` spins and by its exact oracles beyond (a
  reduction may have more spins than the problem: the gauge model of T25; where they refuse within
  their budget, a multi-spin model by the "large" step-check finisher), mean energies and the
  constrained and disorder problems by complete enumeration (a constrained sum beyond it by exact
  elimination with its conditions); the totals (with ``log_shift``) must agree to :data:`TOLERANCE`;
* in the sandbox (evaluators/sandbox, as the verifier runs candidates), the rendered program of the
  chain so far, finished by an exact solver (enumeration, or a tensor contraction for larger pair
  models), must give the task's reference value at those
  instances (the verifier's brute-force reference, or the formula's own enumeration for a disorder
  average at a size below the task's).

A failing step is kept in the derivation record with what failed; it is never dropped silently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from evaluators.oracle_cache import reference
from evaluators.oracles.base import TooLarge
from evaluators.oracles.brute import brute_log_z
from evaluators.oracles.constrained_sum import constrained_log_value
from evaluators.oracles.naive import all_spins
from evaluators.oracles.registry import exact_log_z
from evaluators.sandbox import Call, Limits
from search.derivation import render
from search.derivation.solvers import step_checker
from search.derivation.view import to_ising

#: check instances have at most this many spins (brute force on every state)
CHECK_MAX_N = 20
#: agreement required between the two sides of a step (absolute, relative to max(1, |value|))
TOLERANCE = 1e-9
#: a constrained sum beyond enumeration (22 variables) is eliminated exactly while tables stay this small
CONSTRAINED_ELIMINATION_WIDTH = 18
#: the cold copy of each check instance multiplies beta by this
COLD_FACTOR = 8.0
#: the sandbox check enumerates states up to this many spins (larger models are contracted or eliminated)
ENUMERATE_MAX_N = 16
#: in-process, a model of more spins than this is evaluated by the exact oracles (evaluators/oracles/registry.py),
#: within this many seconds, instead of brute force
BRUTE_MAX_N = 28
ORACLE_BUDGET_S = 120.0


@dataclass(frozen=True)
class Instance:
    n: int
    params: dict
    reference: float          # the task's quantity (log for positive quantities)


_VALUES: dict[int, tuple[dict, float]] = {}


def exact_value(state: dict) -> float:
    """The exact value of a state: log Z (with the shift) of a model, its mean energy, or the log of a
    constrained sum / the value of a disorder average, by enumeration. Remembered per state object
    (a step's "after" is the next step's "before")."""
    key = id(state)
    if key in _VALUES and _VALUES[key][0] is state:
        return _VALUES[key][1]
    value = _exact_value(state)
    if len(_VALUES) > 4096:
        _VALUES.clear()
    _VALUES[key] = (state, value)
    return value


def _exact_value(state: dict) -> float:
    kind = state.get("kind", "model")
    if kind == "constrained":
        return _constrained_value(state)
    if kind == "disorder":
        return _disorder_value(state)
    if state["statistic"] == "mean_energy":
        return _mean_energy(state)
    model = to_ising(state)
    if model.n > BRUTE_MAX_N:     # beyond enumeration: the verifier's exact oracles (elimination, contraction)
        try:
            return float(exact_log_z(model, budget_s=ORACLE_BUDGET_S).log_z)
        except TooLarge as exc:       # over their budget (a loaded machine): the large-model finisher, exact too
            if state["statistic"] == "log_z" and any(i.shape[1] > 2 for i, _ in state["terms"]):
                try:
                    return float(step_checker("large").ENTRY(state, {})) + float(state["log_shift"])
                except MemoryError:
                    pass
            raise ValueError(f"no exact oracle answered for a model of {model.n} spins ({exc})") from None
    return brute_log_z(model)


def compare(a: float, b: float) -> float:
    """|a - b| / max(1, |b|) (inf when either is not finite)."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return 0.0 if a == b else math.inf
    return abs(a - b) / max(1.0, abs(b))


def in_process(before: list[dict], after: list[dict]) -> tuple[float, str | None]:
    """(worst disagreement, failure text or None) of the states before and after, instance by instance."""
    worst = 0.0
    for s0, s1 in zip(before, after):
        try:
            a, b = exact_value(s0), exact_value(s1)
        except (ValueError, MemoryError) as exc:
            return math.inf, f"could not evaluate a state exactly: {exc}"
        worst = max(worst, compare(b, a))
    return worst, None if worst <= TOLERANCE else f"before and after differ by {worst:.3g} (relative)"


def in_sandbox(sandbox, task_id: str, reader_source: str, actions, instances: list[Instance],
               signed: bool, states: list[dict]) -> tuple[float, str | None]:
    """The rendered prefix finished by an exact method (a tensor contraction for pair models of more
    than :data:`ENUMERATE_MAX_N` spins, else enumeration), run in the sandbox against the references."""
    statistic = states[0]["statistic"]
    pairwise = all(i.shape[1] <= 2 for s in states for i, _ in s["terms"])
    big = max(s["n"] for s in states) > ENUMERATE_MAX_N
    kind = "any" if not big or statistic != "log_z" else "pairwise" if pairwise else "large"
    solver = step_checker(kind)
    options = {k: v[0] for k, v in solver.OPTION_SPACE.items()}
    code = render.program(f'"""Step check of a derivation for task {task_id}."""', reader_source, actions, solver,
                          options, signed=signed or statistic == "mean_energy")
    fn = "Z_efficient" if signed or statistic == "mean_energy" else "log_Z"
    report = sandbox.run(code, [Call(fn, i.params, i.n) for i in instances], Limits(timeout_s=60.0, cpu_s=65))
    if report.error and not report.results:
        return math.inf, f"the rendered program did not run in the sandbox: {report.error}"
    worst = 0.0
    for inst, res in zip(instances, report.results):
        if not res.ok:
            return math.inf, f"the rendered program raised in the sandbox at n = {inst.n}: {res.error}"
        worst = max(worst, compare(float(res.value), inst.reference))
    if len(report.results) < len(instances):
        return math.inf, "the sandbox run ended early"
    return worst, None if worst <= TOLERANCE else f"the rendered program is off by {worst:.3g} (relative) in the sandbox"


def task_reference(task, params: dict, n: int) -> float:
    """The verifier's brute-force reference of the task's quantity (log for positive quantities)."""
    return float(reference(task, params, n, method="brute").log_z)


# -- exact values of the problems and of mean energies ------------------------------------------------

def _weights(terms, constant, S):
    total = np.full(len(S), float(constant))
    for idx, w in terms:
        total += np.prod(S[:, idx], axis=2) @ w
    return total


def _mean_energy(state: dict) -> float:
    n = state["n"]
    if n > 24:
        raise ValueError("a mean energy is enumerated up to 24 spins")
    S = all_spins(n).astype(np.float64)
    x = _weights(state["terms"], 0.0, S)
    for u, a in state["rank_one"]:
        x = x + 0.5 * a * ((S @ u) ** 2 - float(u @ u))
    w = np.exp(x - x.max())
    return float(state["energy_shift"] - (w @ x) / w.sum() / state["beta"])


def _constrained_value(problem: dict) -> float:
    N = problem["n_vars"]
    if N > 22:            # beyond enumeration: exact elimination over the variables and the conditions
        try:
            return constrained_log_value(problem, CONSTRAINED_ELIMINATION_WIDTH)
        except TooLarge as exc:
            raise ValueError(f"a constrained sum is enumerated up to 22 variables and eliminated while its "
                             f"tables stay within 2^{CONSTRAINED_ELIMINATION_WIDTH} entries ({exc})") from None
    X = ((np.arange(2 ** N)[:, None] >> np.arange(N)) & 1).astype(np.int64)
    ok = np.ones(len(X), dtype=bool)
    for c in problem["constraints"]:
        par = np.zeros((len(X), len(c["rhs"])), dtype=np.int64)
        np.add.at(par.T, c["row_of"], X[:, c["var"]].T)
        ok &= np.all(par % 2 == c["rhs"], axis=1)
    if not ok.any():
        return -math.inf
    return float(logsumexp(_weights(problem["terms"], problem["constant"], 2.0 * X[ok] - 1.0)))


def _disorder_value(problem: dict) -> float:
    N, n = problem["n_disorder"], problem["n"]
    if N + n > 20:
        raise ValueError("a disorder average is enumerated up to 20 variables")
    E = all_spins(N).astype(np.float64)
    S = all_spins(n).astype(np.float64)
    log_p = _weights(problem["disorder"]["terms"], problem["disorder"]["constant"], E)
    b_ref, beta = float(problem["reference_beta"]), float(problem["beta"])
    parts = []
    for e, lp in zip(E, log_p):
        W = _weights(problem["inner"]["terms"], problem["inner"]["constant"], np.concatenate([np.tile(e, (len(S), 1)), S], 1))
        if problem["statistic"] == "mean":
            w = np.exp(b_ref * (W - W.max()))
            parts.append(math.exp(lp) * float(-(w @ W) / w.sum()))
        else:
            parts.append(lp + float(logsumexp(beta * W) - logsumexp(b_ref * W)))
    return float(sum(parts)) if problem["statistic"] == "mean" else float(logsumexp(parts))
