"""Physical assertions (after PhysVEC's physics-informed tests): identities every Ising-type Z
obeys, run on the candidate with parameters it has never seen, at a size beyond the probes.

Each check that applies to the task is reported by name:

- unseen_parameters  fresh parameters at size n agree with the exact oracle
- beta_zero          beta = 0 gives log Z = n log 2
- spin_flip          negating every field leaves Z unchanged (tasks whose fields are inputs)
- gauge_invariance   a random gauge s_i -> g_i s_i of the couplings leaves Z unchanged
- convexity_in_beta  log Z is convex in beta (second differences >= 0)
- energy             <H> = -d log Z / d beta by central differences agrees with the oracle's
- low_temperature    at beta |J| = 6, 13, 20 and 1000 (a small size), log Z agrees with the oracle and
                     lies in [-beta E0, -beta E0 + n log 2] where the ground-state energy E0 is known

One rule for what cannot be concluded, as on the ladder: running out of time or memory, or a
``Z_efficient`` whose Z overflows a float (it returned inf or raised OverflowError), is a
frontier, reported as a note that asks for log_Z; it is not a failed assertion.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from evaluators.comparison import passes, relative_error, tolerance
from evaluators.oracle_cache import reference
from evaluators.oracles.base import NotApplicable
from evaluators.oracles.naive import ground_state_energy
from evaluators.profile import Profile, timed
from evaluators.sandbox import Call, Limits, Sandbox
from evaluators.verdict import PhysicsCheck
from tasks.base import Task, coupling_scale

UNSEEN_SEED_OFFSET = 1_000_003  # parameters drawn with seeds no probe or ladder rung uses
FD_STEP = 1e-3                  # central-difference step in beta
#: "large beta" in units of tasks.base.coupling_scale: where float64 shortcuts fail, just past the
#: beta |J| = 12 where a program once switched to an unchecked route, well past it, and frozen
LOW_T_BETA_J = (6.0, 13.0, 20.0, 1000.0)
E0_ENUM_MAX_N = 20              # ground-state energy by enumeration up to this size


@dataclass(frozen=True)
class _Probe:
    label: str
    params: dict
    n: int


@dataclass
class PhysicsOutcome:
    checks: list[PhysicsCheck]
    notes: list[str]            # checks that could not be concluded, and why


#: the probes each assertion calls on its own (its profile entry's ``candidate_s`` is their seconds)
_OWN_PROBES = {"unseen_parameters": ("base",), "beta_zero": ("beta0",), "spin_flip": ("flip",),
               "gauge_invariance": ("gauge",), "convexity_in_beta": ("convex",), "energy": ("e_minus", "e_plus"),
               "low_temperature": ("lowT",)}


def physical_assertions(task: Task, code: str, uses_log_z: bool, sandbox: Sandbox, n: int, n_small: int,
                        seed: int = 0, timeout_s: float = 30.0, memory_mb: int = 2048,
                        profile: Profile | None = None) -> PhysicsOutcome:
    """Run every applicable assertion; ``n`` is the size for most checks (beyond the probes where
    the candidate has been verified), ``n_small`` a size whose Z fits a float at low temperature.
    A task whose quantity is not Z gets only the assertions its quantity declares. A ``profile``
    gets the run's time and, per assertion, the host's time on its references and checks (seconds,
    outside the run) and its calls' seconds inside the run (``candidate_s``)."""
    if not task.quantity.is_partition_function:
        return declared_quantity_assertions(task, code, uses_log_z, sandbox, n, seed, timeout_s, memory_mb, profile)
    rng = np.random.default_rng([seed, UNSEEN_SEED_OFFSET, n])
    p = task.probe_params(n, seed + UNSEEN_SEED_OFFSET, 0)
    p_small = task.probe_params(n_small, seed + UNSEEN_SEED_OFFSET, 1)
    beta = float(p["beta"])
    probes = [_Probe("base", p, n), _Probe("beta0", task.with_beta(p, 0.0), n)]
    flipped = task.flip_fields(p)
    if flipped is not None:
        probes.append(_Probe("flip", flipped, n))
    gauged = task.gauge(p, rng.choice([-1.0, 1.0], size=n))
    if gauged is not None:
        probes.append(_Probe("gauge", gauged, n))
    convex_betas = np.linspace(0.25, 2.0, 5) * max(beta, 0.2)
    probes += [_Probe(f"convex{i}", task.with_beta(p, b), n) for i, b in enumerate(convex_betas)]
    probes += [_Probe("e_minus", task.with_beta(p, beta - FD_STEP), n), _Probe("e_plus", task.with_beta(p, beta + FD_STEP), n)]
    # the largest coupling, rank-one blocks included (their weights are not in model.weights: the
    # Mattis glass once got beta = 6e12 here, where its Z overflows any float)
    scale = max(coupling_scale(task.to_model(p_small, n_small)), 1e-12)
    big_betas = [bj / scale for bj in LOW_T_BETA_J]
    probes += [_Probe(f"lowT{i}", task.with_beta(p_small, b), n_small) for i, b in enumerate(big_betas)]

    fname = "log_Z" if uses_log_z else "Z_efficient"
    with timed(profile, "physics_run", n=n) as extra:
        report = sandbox.run(code, [Call(fname, q.params, q.n) for q in probes],
                             Limits(timeout_s=timeout_s, cpu_s=int(timeout_s) + 5, memory_mb=memory_mb))
        extra["candidate_s"] = sum(r.seconds for r in report.results)
    calls_s = {q.label: r.seconds for q, r in zip(probes, report.results)}   # inside the run, per probe
    host_s: dict[str, float] = {}             # per assertion: its references and its check, outside the run
    got: dict[str, float | None] = {}
    why: dict[str, str] = {}                  # per missing value: what happened, in words (for the feedback)
    kind: dict[str, str] = {}                 # and as a kind the checks decide on: overflow, memory, not_reached, other
    for q, res in zip(probes, report.results):
        if not res.ok:
            why[q.label] = f"raised {res.error}"
            kind[q.label] = {"OverflowError": "overflow", "MemoryError": "memory"}.get(res.error_type, "other")
        elif res.value is None or math.isnan(res.value) or (not uses_log_z and (math.isinf(res.value) or res.value <= 0)):
            why[q.label] = f"returned {res.value}"
            kind[q.label] = "overflow" if res.value == math.inf else "other"
        else:
            got[q.label] = res.value if uses_log_z else math.log(res.value)
    for q in probes[len(report.results):]:
        why[q.label] = f"not reached ({report.error or 'run ended early'})"
        kind[q.label] = "not_reached"

    checks: list[PhysicsCheck] = []
    notes: list[str] = []

    def value(label: str) -> float | None:
        return got.get(label)

    def ref(q: _Probe, name: str) -> float | None:
        started = time.perf_counter()
        try:
            return reference(task, q.params, q.n).log_z
        except NotApplicable:
            return None
        finally:
            host_s[name] = host_s.get(name, 0.0) + time.perf_counter() - started

    def add(name: str, labels: list[str], ok_fn, detail_fn) -> None:
        started = time.perf_counter()
        try:
            _add(name, labels, ok_fn, detail_fn)
        finally:
            host_s[name] = host_s.get(name, 0.0) + time.perf_counter() - started

    def _add(name: str, labels: list[str], ok_fn, detail_fn) -> None:
        missing = [lab for lab in labels if value(lab) is None]
        if missing:
            # A raise or NaN on fresh parameters is a failure; running out of memory or time, or
            # overflow of a Z-only candidate, is the scaling frontier (as on the ladder), not an error.
            bad = [lab for lab in missing if not _frontier(kind.get(lab, ""), uses_log_z)]
            if bad:
                checks.append(PhysicsCheck(name, False, f"the candidate {why[bad[0]]} on this check's parameters"))
            else:
                overflow = any(kind.get(lab) == "overflow" for lab in missing)
                notes.append(f"{name}: inconclusive ({why[missing[0]]}"
                             + ("; Z overflows a float here: define log_Z(params, n) returning log Z)" if overflow else ")"))
            return
        ok = ok_fn()
        checks.append(PhysicsCheck(name, bool(ok), detail_fn(ok)))

    by = {q.label: q for q in probes}
    base_ref = ref(by["base"], "unseen_parameters")
    if base_ref is not None:
        add("unseen_parameters", ["base"],
            lambda: passes(relative_error(got["base"], base_ref, True)[0], base_ref),
            lambda ok: f"fresh parameters at n={n}: " + ("agrees with the exact value" if ok else
                       f"relative error {relative_error(got['base'], base_ref, True)[0]:.2e} against the exact value"))
    ln2n = n * math.log(2.0)
    add("beta_zero", ["beta0"], lambda: passes(relative_error(got["beta0"], ln2n, True)[0], ln2n),
        lambda ok: f"at beta = 0 log Z must be n log 2 = {ln2n:.6g} (n={n})" + ("" if ok else f"; got {got['beta0']:.6g}"))
    for label, name, what in (("flip", "spin_flip", "negating every field"), ("gauge", "gauge_invariance", "a random gauge transformation of the couplings")):
        if label in by:
            add(name, ["base", label],
                lambda lab=label: passes(relative_error(got[lab], got["base"], True)[0], got["base"]),
                lambda ok, lab=label, w=what: f"{w} must leave Z unchanged" + ("" if ok else
                       f"; log Z changed by {got[lab] - got['base']:.3g}"))
    conv = [f"convex{i}" for i in range(len(convex_betas))]

    def convex_ok() -> bool:
        ys = np.array([got[c] for c in conv])
        second = ys[2:] - 2 * ys[1:-1] + ys[:-2]
        # each value may be off by the comparison tolerance, so a second difference by four times it
        return bool(np.all(second >= -4 * tolerance(float(np.max(np.abs(ys))))))
    add("convexity_in_beta", conv, convex_ok,
        lambda ok: "log Z is convex in beta" if ok else "log Z is not convex in beta: the candidate's values at "
                   f"beta = {', '.join(f'{b:.3g}' for b in convex_betas)} bend the wrong way")
    em, ep = by["e_minus"], by["e_plus"]
    ref_m, ref_p = ref(em, "energy"), ref(ep, "energy")
    if ref_m is not None and ref_p is not None:
        e_ref = -(ref_p - ref_m) / (2 * FD_STEP)
        add("energy", ["e_minus", "e_plus"],
            lambda: abs(-(got["e_plus"] - got["e_minus"]) / (2 * FD_STEP) - e_ref) <= 1e-3 * max(1.0, abs(e_ref)),
            lambda ok: "the energy -d log Z/d beta agrees with the exact one" if ok else
                       f"the energy -d log Z/d beta is off by {abs(-(got['e_plus'] - got['e_minus']) / (2 * FD_STEP) - e_ref):.3g}")
    lows = [(f"lowT{i}", b) for i, b in enumerate(big_betas)]
    low_refs = {label: ref(by[label], "low_temperature") for label, _ in lows}
    lows = [(label, b) for label, b in lows if low_refs[label] is not None]
    beyond = [(label, b) for label, b in lows if value(label) is None and _frontier(kind.get(label, ""), uses_log_z)]
    if beyond and len(beyond) < len(lows):      # a Z that overflows colder: check the others
        notes.append(f"low_temperature: beta = {', '.join(f'{b:.3g}' for _, b in beyond)} inconclusive "
                     f"({why[beyond[0][0]]}" + ("; Z overflows a float here: define log_Z(params, n) returning log Z)"
                                                if kind[beyond[0][0]] == "overflow" else ")"))
        lows = [x for x in lows if x not in beyond]
    if lows:
        def low_bad() -> list[float]:
            return [b for label, b in lows if not _low_t_ok(task, by[label], got[label], low_refs[label], b)]
        add("low_temperature", [label for label, _ in lows], lambda: not low_bad(),
            lambda ok: (f"at beta = {', '.join(f'{b:.3g}' for _, b in lows)} (n={n_small}) log Z matches the "
                        "ground-state limit") if ok else
                       (f"at beta = {', '.join(f'{b:.3g}' for b in low_bad())} (n={n_small}) log Z disagrees with "
                        "the exact value or the low-temperature limit set by the ground-state energy"))
    if profile is not None:
        for name, prefixes in _OWN_PROBES.items():
            labels = [q.label for q in probes if q.label.startswith(prefixes)]
            if labels:
                profile.add(f"physics:{name}", host_s.get(name, 0.0),
                            n=n_small if name == "low_temperature" else n,
                            candidate_s=sum(calls_s.get(lab, 0.0) for lab in labels))
    return PhysicsOutcome(checks, notes)


def _frontier(kind: str, uses_log_z: bool) -> bool:
    """Whether a missing value (its ``kind``) is the candidate's frontier (time, memory, a Z-only overflow)."""
    return kind in ("not_reached", "memory") or (not uses_log_z and kind == "overflow")


def _low_t_ok(task: Task, q: _Probe, value: float, ref_log_z: float, beta: float) -> bool:
    if not passes(relative_error(value, ref_log_z, True)[0], ref_log_z):
        return False
    if q.n > E0_ENUM_MAX_N:
        return True
    e0 = ground_state_energy(task.to_model(q.params, q.n))
    slack = 1e-9 * max(1.0, abs(beta * e0))
    return -beta * e0 - slack <= value <= -beta * e0 + q.n * math.log(2.0) + slack


#: assertions that make sense for any declared quantity (the Z identities above do not)
DECLARED_QUANTITY_ASSERTIONS = ("unseen_parameters",)


def declared_quantity_assertions(task: Task, code: str, uses_log_z: bool, sandbox: Sandbox, n: int, seed: int = 0,
                                 timeout_s: float = 30.0, memory_mb: int = 2048,
                                 profile: Profile | None = None) -> PhysicsOutcome:
    """For a task quantity other than Z (``task.quantity``): fresh parameters at size n against the
    task's exact reference, when the quantity lists ``unseen_parameters``. Names it lists that
    are not known here are reported as notes, never silently passed."""
    wanted = task.quantity.assertions if task.quantity.assertions is not None else DECLARED_QUANTITY_ASSERTIONS
    notes = [f"{name}: not defined for a task quantity other than Z" for name in wanted
             if name not in DECLARED_QUANTITY_ASSERTIONS]
    if "unseen_parameters" not in wanted:
        return PhysicsOutcome([], notes)
    params = task.probe_params(n, seed + UNSEEN_SEED_OFFSET, 0)
    try:
        with timed(profile, "physics:unseen_parameters", n=n, note="reference"):
            exact = reference(task, params, n).log_z
    except NotApplicable as exc:
        return PhysicsOutcome([], notes + [f"unseen_parameters: inconclusive (no exact reference at n={n}: {exc})"])
    fname = "log_Z" if uses_log_z else "Z_efficient"
    with timed(profile, "physics_run", n=n) as extra:
        report = sandbox.run(code, [Call(fname, params, n)],
                             Limits(timeout_s=timeout_s, cpu_s=int(timeout_s) + 5, memory_mb=memory_mb))
        extra["candidate_s"] = sum(r.seconds for r in report.results)
    if not report.results:
        return PhysicsOutcome([], notes + [f"unseen_parameters: inconclusive ({report.error or 'run ended early'})"])
    res = report.results[0]
    if not res.ok:
        return PhysicsOutcome([PhysicsCheck("unseen_parameters", False, f"the candidate raised {res.error} on fresh "
                                            f"parameters at n={n}")], notes)
    positive = task.quantity.positive
    err, why = relative_error(res.value, exact, uses_log_z, positive=positive)
    ok = passes(err, exact if positive else 0.0)
    detail = f"fresh parameters at n={n}: " + ("agrees with the exact value" if ok else
                                               f"{why}" if err is None else f"relative error {err:.2e} against the exact value")
    return PhysicsOutcome([PhysicsCheck("unseen_parameters", ok, detail)], notes)
