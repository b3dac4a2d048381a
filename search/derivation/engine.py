"""The derivation engine: from a task's formula to a checked chain of actions and one program.

1. Compile the formula into a reader (tasks/formula_reader.py); the first step of every derivation
   is that reading, or the change of variables {0, 1} -> {-1, +1} when the formula used 0/1 values.
2. Search over chains: a node is a chain prefix with the states it leaves on the task's instances
   (search/derivation/view.py). The structure analysis of those states says which actions apply
   (``admits``) and which solvers finish them (``applies``); each applicable action makes a child,
   whose step is checked (search/derivation/checks.py) before it is expanded further, and each
   applicable solver makes a plan. Nodes are expanded best first: the cheapest plan a node offers
   (growth rank and rate of the claimed complexity), then the shallowest; the search stops at a
   linear-time plan or when its node budget is spent.
3. The best plan (cheapest growth, then fewest steps) is rendered as one self-contained program; its
   class is the first label of the chain (its steps' labels, then its solver's) that the verifier's
   class rules admit for the task's family, and "no_efficient_known" comes first when nothing
   polynomial was found; its complexity is the largest of the solver's and the steps' own.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from evaluators.checks.classes import admissible
from evaluators.checks.complexity_claim import ClaimParseError, parse_claim
from evaluators.sandbox import Sandbox
from search.derivation import checks, render
from search.derivation.answers import derive_answers
from search.derivation.context import DerivationContext, new_context, state_view
from search.derivation.actions import ACTIONS, SPIN_VARIABLES, get_action
from search.derivation.diagnosis import diagnose
from search.derivation.record import Check, Derivation, Plan, Step
from search.derivation.runtime import _rt_start
from search.derivation.solvers import SOLVERS, get_solver
from search.derivation.view import StateView, describe_state
from tasks.family import family_structure
from tasks.formula_reader import compile_reader

#: how many chain prefixes a search expands at most, and how long a chain may grow
MAX_NODES = 12
MAX_DEPTH = 4
#: a plan this cheap (O(n)) ends the search; with any polynomial plan it ends after this many expansions
GOOD_ENOUGH = (0, 1.0)
POLYNOMIAL_PATIENCE = 3


@dataclass
class _Node:
    chain: tuple                       # ((action name, options), ...)
    states: list                       # one state per view size
    check_states: list                 # one state per check instance
    view: StateView
    steps: list                        # Step records of the chain so far (compile step first)
    plans: list = field(default_factory=list)


def derive(task, formula=None, source: str = "the task's formula", seed: int = 0, sandbox: Sandbox | None = None,
           max_nodes: int = MAX_NODES, max_depth: int = MAX_DEPTH) -> Derivation:
    """The best checked derivation of ``task`` from ``formula`` (default: the task's own); see the
    module docstring. ``sandbox`` runs each step's rendered program (None: a private one). Never
    raises for a formula or task of any shape: what stops it is the record's ``error``."""
    return _guarded(_derive, task, formula, source, seed, sandbox, max_nodes, max_depth)


def _guarded(fn, task, formula, source, *args) -> Derivation:
    """``fn(...)``, or a Derivation whose ``error`` names the exception (a formula the engine meets for
    the first time must not take down the run or the command that derives it)."""
    try:
        return fn(task, formula, source, *args)
    except Exception as exc:  # noqa: BLE001 - reported in the record, never raised
        out = Derivation(task_id=getattr(task, "id", "?"), source=source)
        out.error = f"the derivation stopped: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        return out


def _derive(task, formula, source, seed, sandbox, max_nodes, max_depth) -> Derivation:
    formula = task.formula if formula is None else formula
    out = Derivation(task_id=task.id, source=source)
    if formula is None:
        out.error = f"{task.id} has no formula to derive from"
        return out
    try:
        reader = compile_reader(formula)
    except ValueError as exc:
        out.error = f"the formula cannot be compiled: {exc}"
        return out
    own = sandbox is None
    sandbox = sandbox or Sandbox()
    try:
        ctx = new_context(task, formula, reader, seed, sandbox)
        root = _root(ctx)
        out.notes += list(reader.notes)
        if not root.steps[0].check.passed:
            out.steps, out.failed = root.steps, list(root.steps)
            out.error = "the compiled reader does not reproduce the task's values: " + str(root.steps[0].check.detail)
            return out
        plans, failed, findings, explored = _search(ctx, root, max_nodes, max_depth)
        out.failed, out.findings = failed, findings
        out.plans = [p for _, p in plans]
        out.diagnosis = diagnose([(n.chain, n.view) for n in explored], ACTIONS, SOLVERS,
                                 bool(plans) and plans[0][1].cost[0] == 0)
        if not plans:
            out.steps = root.steps
            out.error = "no solver applies to any chain found (see the diagnosis)"
            return out
        node, best = plans[0]
        _finish(ctx, out, node, best)
        if best.cost[0] > 0 and not ctx.signed:     # nothing polynomial is exact: bounds, approximations
            out.answers = derive_answers(ctx, explored, node, source)
    finally:
        if own:
            sandbox.close()
    return out


def derive_plan(task, plan: Plan, formula=None, source: str = "the task's formula", seed: int = 0,
                sandbox: Sandbox | None = None) -> Derivation:
    """The derivation of one given plan (a chain and a solver), every step checked; ``error`` says
    where it stops when a step does not apply or fails its check (the LLM format uses this)."""
    return _guarded(_derive_plan, task, formula, source, plan, seed, sandbox)


def _derive_plan(task, formula, source, plan, seed, sandbox) -> Derivation:
    formula = task.formula if formula is None else formula
    out = Derivation(task_id=task.id, source=source)
    try:
        reader = compile_reader(formula)
    except (ValueError, TypeError) as exc:
        out.error = f"the formula cannot be compiled: {exc}"
        return out
    own = sandbox is None
    sandbox = sandbox or Sandbox()
    try:
        ctx = new_context(task, formula, reader, seed, sandbox)
        node = _root(ctx)
        out.notes += list(reader.notes)
        for k, (name, options) in enumerate(plan.actions, 1):      # step 0 is the reading of the formula
            action = get_action(name)
            reason = action.admits(node.view)
            if reason is not None:
                refused = Step(name, action.SUMMARY, dict(options), Check(None, detail=f"not applied: {reason}"))
                out.steps, out.failed = node.steps, [refused]
                out.error = f"step {k} ({name}) does not apply: {reason}"
                return out
            child, failure = _apply(ctx, node, action, dict(options))
            if child is None:
                out.steps, out.failed = node.steps, [failure]
                out.error = f"step {k} ({name}) failed its check: {failure.check.text()}"
                return out
            node = child
        solver = get_solver(plan.solver)
        reason = solver.applies(node.view)
        if reason is not None:
            out.steps = node.steps
            after = f"after step {len(plan.actions)}" if plan.actions else "to the formula as read"
            out.error = f"the solver {plan.solver!r} does not apply {after}: {reason}"
            return out
        _finish(ctx, out, node, _plan(ctx, node, solver, plan.solver_options))
    finally:
        if own:
            sandbox.close()
    return out


# -- the root ----------------------------------------------------------------------------------------

def _root(ctx: DerivationContext) -> _Node:
    states = [_rt_start(ctx.read(p, n)) for p, n in zip(ctx.view_params, ctx.view_sizes)]
    check_states = [_rt_start(ctx.read(i.params, i.n)) for i in ctx.instances]
    view = state_view(ctx, states)
    name = SPIN_VARIABLES["action"] if ctx.reader.changed_domain else "read_formula"
    summary = SPIN_VARIABLES["summary"] if ctx.reader.changed_domain else \
        "the formula compiled into a reader: params -> the terms of the model (tasks/formula_reader.py)"
    check = _check(ctx, [None] * len(check_states), check_states, ())
    shift = [s.get("log_shift", 0.0) for s in check_states if "log_shift" in s]
    step = Step(name, summary, {"kind": ctx.reader.kind, "notes": list(ctx.reader.notes)}, check,
                float(np.mean(shift)) if shift else None, describe_state(states[-1]))
    return _Node((), states, check_states, view, [step])


# -- checks ---------------------------------------------------------------------------------------------

def _check(ctx: DerivationContext, before: list, after: list, chain: tuple) -> Check:
    """The check of the step that took ``before`` to ``after`` (None before: the compile step,
    checked against the task's references)."""
    labels = [f"n={i.n}" for i in ctx.instances]
    if before[0] is None:
        worst, failure = 0.0, None
        for inst, state in zip(ctx.instances, after):
            try:
                worst = max(worst, checks.compare(checks.exact_value(state), inst.reference))
            except (ValueError, MemoryError) as exc:
                worst, failure = math.inf, f"could not evaluate exactly: {exc}"
                break
        if failure is None and worst > checks.TOLERANCE:
            failure = f"the compiled reader is off by {worst:.3g} (relative) against the task's reference"
    else:
        worst, failure = checks.in_process(before, after)
    sandbox_err = None
    if failure is None and after[0].get("kind", "model") == "model":
        actions = [(get_action(a), o) for a, o in chain]
        sandbox_err, failure = checks.in_sandbox(ctx.sandbox, ctx.task.id, ctx.reader.source, actions, ctx.instances,
                                                 ctx.signed, after)
    return Check(failure is None, worst, sandbox_err, labels, failure)


# -- search ---------------------------------------------------------------------------------------------

def _apply(ctx: DerivationContext, node: _Node, action, options: dict) -> tuple[_Node | None, Step]:
    """The child node of ``action`` (None with the failed step when it raises or fails its check)."""
    chain = node.chain + ((action.NAME, dict(options)),)
    params = action.explain(node.view, options)
    try:
        states = [action.ENTRY(s, options) for s in node.states]
        after = [action.ENTRY(s, options) for s in node.check_states]
    except (ValueError, MemoryError, FloatingPointError) as exc:
        return None, Step(action.NAME, action.SUMMARY, params, Check(False, detail=f"it raised: {exc}"))
    check = _check(ctx, node.check_states, after, chain)
    change = [a.get("log_shift", 0.0) - (b.get("log_shift", 0.0) if "log_shift" in b else 0.0)
              for a, b in zip(after, node.check_states)]
    step = Step(action.NAME, action.SUMMARY, params, check, float(np.mean(change)), describe_state(states[-1]))
    if not check.passed:
        return None, step
    return _Node(chain, states, after, state_view(ctx, states), node.steps + [step]), step


def _growth(ctx: DerivationContext, complexity: str) -> tuple[int, float]:
    try:
        g = parse_claim(complexity, ctx.task.square_lattice)
    except ClaimParseError:
        return (3, math.inf)
    return (g.rank, g.rate)


def _plan(ctx: DerivationContext, node: _Node, solver, options: dict | None = None) -> Plan:
    defaults = {k: v[0] for k, v in solver.OPTION_SPACE.items()}
    options = {**defaults, **solver.tune(node.states), **(options or {})}
    labels, complexity, justification, _ = solver.claims(node.view, options)
    for name, _ in node.chain:
        cost = get_action(name).COST
        if _growth(ctx, cost) > _growth(ctx, complexity):
            complexity = cost
    order = list(SOLVERS).index(solver.NAME)
    rank, rate = _growth(ctx, complexity)
    # rates of exponentials are not comparable between models of different sizes: fewer steps first;
    # a generic fallback (elimination) after any named mapping of the same growth, however long
    return Plan(tuple(node.chain), solver.NAME, options, tuple(labels), complexity, justification,
                (rank, rate if rank == 0 else 0.0, int(solver.fallback), len(node.chain), rate, order))


def _search(ctx: DerivationContext, root: _Node, max_nodes: int, max_depth: int):
    plans: list = []
    failed: list[Step] = []
    findings: list[str] = []
    queue: list = []
    explored: list[_Node] = []
    counter = 0

    def offer(node: _Node):
        nonlocal counter
        explored.append(node)
        for solver in SOLVERS.values():
            if solver.applies(node.view) is None:
                p = _plan(ctx, node, solver)
                node.plans.append(p)
                plans.append((node, p))
        if node.view.frustration and not findings:            # the first proof is enough
            findings.append(f"after {' -> '.join(a for a, _ in node.chain) or 'reading'}: proof of frustration: "
                            f"{node.view.frustration} (no gauge makes every coupling ferromagnetic)")
        best = min((p.cost[:2] for p in node.plans), default=(9, math.inf))     # (rank, poly degree)
        heapq.heappush(queue, (best, len(node.chain), counter, node))
        counter += 1

    offer(root)
    expanded = 0
    while queue and expanded < max_nodes:
        cheapest = min((p.cost[:3] for _, p in plans), default=(9, math.inf, 0))
        # a linear fallback does not end the search at once: a named mapping may lie a few steps on
        if cheapest <= GOOD_ENOUGH + (0,) or (cheapest[0] == 0 and expanded >= POLYNOMIAL_PATIENCE):
            break
        _, depth, _, node = heapq.heappop(queue)
        if depth >= max_depth:
            continue
        expanded += 1
        for action in ACTIONS.values():
            if action.admits(node.view) is not None:
                continue
            if node.view.statistic == "mean_energy" and not action.PRESERVES_ENERGY:
                continue
            child, step = _apply(ctx, node, action, {k: v[0] for k, v in action.OPTION_SPACE.items()})
            if child is None:
                failed.append(step)
                continue
            offer(child)
    plans.sort(key=lambda np_: np_[1].cost)
    return plans, failed, findings, explored


# -- the program and its claims ------------------------------------------------------------------------

def _finish(ctx: DerivationContext, out: Derivation, node: _Node, plan: Plan) -> None:
    task = ctx.task
    out.steps, out.plan = node.steps, plan
    polynomial = plan.cost[0] == 0
    labels = [lab for name, _ in plan.actions for lab in get_action(name).LABELS] + list(plan.labels)
    if not polynomial:
        labels = ["no_efficient_known"] + labels
    family = family_structure(task)
    chosen = next((lab for lab in labels if admissible(lab, family)[0]), None)
    if chosen is None:
        chosen = labels[0]
        out.notes.append(f"no label of the chain ({', '.join(labels)}) is admissible for the task's family; "
                         f"claiming {chosen} anyway")
    out.tractable_class, out.complexity_O = chosen, plan.complexity
    out.confidence = 0.9 if polynomial else 0.6
    chain_text = "; ".join(f"({k + 1}) {s.action}: {s.summary} [check {s.check.text()}]"
                           for k, s in enumerate(node.steps))
    out.justification = (f"Derived from the formula alone by a checked chain of transformations: {chain_text}. "
                         f"Solver {plan.solver}: {plan.justification}")
    actions = [(get_action(a), o) for a, o in plan.actions]
    header = (f'"""Derivation proposer: task {task.id}, {out.source}.\n\n'
              f"Chain: {out.chain}.\nClaims: {chosen}, {plan.complexity}.\n"
              + "".join(f"  step {k}: {s.action} - {s.summary}\n" for k, s in enumerate(node.steps))
              + '"""')
    out.program = render.program(header, ctx.reader.source, actions, get_solver(plan.solver), plan.solver_options,
                                 ctx.signed)
