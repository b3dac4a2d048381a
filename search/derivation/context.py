"""What a derivation works on: the task's compiled formula, the sizes its chains are viewed at, the small
instances its steps are checked on (with the task's reference values), and the structure analysis of
the states a chain prefix leaves (``state_view``). The search itself is in engine.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evaluators.sandbox import Sandbox
from search.derivation import checks
from search.derivation.actions import ACTIONS
from search.derivation.runtime import _rt_start
from search.derivation.solvers import cheap_solvers
from search.derivation.view import VIEW_MAX_N, StateView, view_of
from tasks.formula import Formula
from tasks.formula_extras import DisorderAverage
from tasks.formula_reader import CompiledReader, compile_reader

#: sizes the view runs a chain at (the probe sizes, then at most this many ladder sizes)
MAX_VIEW_LADDER = 3


@dataclass
class DerivationContext:
    task: object
    formula: object
    reader: CompiledReader
    read: object
    signed: bool
    view_sizes: tuple
    view_params: list
    instances: list
    sandbox: Sandbox | None


def _view_sizes_params(task, seed) -> tuple[tuple, list]:
    probes = tuple(sorted(task.probe_sizes))
    ladder = [n for n in sorted(task.ladder_sizes) if n <= VIEW_MAX_N and n not in probes]
    if len(ladder) > MAX_VIEW_LADDER:
        pick = np.unique(np.linspace(0, len(ladder) - 1, MAX_VIEW_LADDER).round().astype(int))
        ladder = [ladder[i] for i in pick]
    sizes = tuple(sorted(set(probes) | set(ladder)))
    return sizes, [task.probe_params(n, seed, 0) for n in sizes]


def new_context(task, formula, reader, seed, sandbox) -> DerivationContext:
    return DerivationContext(task, formula, reader, reader.load(), not task.quantity.positive, *_view_sizes_params(task, seed),
                    _instances(task, formula, seed), sandbox)


def _instances(task, formula, seed) -> list:
    """Small instances for the step checks, with the task's reference values."""
    out = []
    if isinstance(formula, DisorderAverage):
        n0 = min(task.probe_sizes)
        for k in range(2):
            params = task.probe_params(n0, seed, k)
            n = _smallest_size(formula, params) or n0
            value = formula.value(params, n)
            out.append(checks.Instance(n, params, value))
        return out
    sizes = [n for n in sorted(task.probe_sizes) if n <= checks.CHECK_MAX_N][:2] or [min(task.probe_sizes)]
    if not isinstance(formula, Formula):
        sizes = sizes[:1]                       # a constrained sum is enumerated over all its variables
    beta_key = formula.beta_key if isinstance(formula, Formula) else ""
    for n in sizes:
        for k in range(2 if n <= checks.CHECK_MAX_N else 1):     # brute force on every state: keep big ones few
            params = task.probe_params(n, seed, k)
            out.append(checks.Instance(n, params, checks.task_reference(task, params, n)))
        if beta_key:
            cold = {**task.probe_params(n, seed, 0)}
            cold[beta_key] = float(cold[beta_key]) * checks.COLD_FACTOR
            out.append(checks.Instance(n, cold, checks.task_reference(task, cold, n)))
    return out


def _smallest_size(formula, params) -> int | None:
    for n in (4, 9):
        try:
            formula.value(params, n)
            return n
        except (ValueError, IndexError, KeyError):
            continue
    return None


def root_states(task, formula=None, seed: int = 0) -> tuple[DerivationContext, list]:
    """(the context, the states at the view sizes) of the task's compiled formula, before any step;
    a context without check instances or sandbox (nothing is checked with it)."""
    formula = task.formula if formula is None else formula
    reader = compile_reader(formula)
    ctx = DerivationContext(task, formula, reader, reader.load(), not task.quantity.positive, *_view_sizes_params(task, seed),
                   [], None)
    return ctx, [_rt_start(ctx.read(p, n)) for p, n in zip(ctx.view_params, ctx.view_sizes)]


def root_view(task, formula=None, seed: int = 0) -> StateView:
    """The structure analysis of the task's compiled formula, before any step (no checks run)."""
    return state_view(*root_states(task, formula, seed))


def state_view(ctx: DerivationContext, states) -> StateView:
    """The structure analysis of the states a chain prefix leaves (one per view size)."""
    first = tuple(a for a in ACTIONS.values() if a.FIRST_STEP)
    return view_of(ctx.task.id, ctx.view_sizes, states, bool(getattr(ctx.task, "nishimori_line", False)),
                   cheap_solvers=cheap_solvers(), first_steps=first)
