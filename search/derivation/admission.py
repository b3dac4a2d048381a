"""What the structure analysis admits for a task, a few steps ahead: the actions and solvers a chain may use.

Starting from the task's compiled formula (its states at the view sizes, context.root_states), every
admitted action is applied in-process with its default options, breadth first, up to
:data:`MAX_DEPTH` steps and :data:`MAX_VIEWS` analysed prefixes; for each action and each solver the
shortest chain after which it applies is kept. Nothing is checked here: the chain a model proposes is
checked step by step when it is applied (engine.derive_plan). Only the formula, the task's sampler and
its sizes are read, never its gold answer.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from search.derivation.actions import ACTIONS
from search.derivation.context import root_states, state_view
from search.derivation.engine import MAX_DEPTH
from search.derivation.solvers import SOLVERS

#: how many chain prefixes are analysed at most (each is a structure analysis at every view size)
MAX_VIEWS = 16


@dataclass(frozen=True)
class Admission:
    """Action / solver name -> the shortest chain of action names after which it applies (() = on the
    model as read), for those the structure analysis admits somewhere within the explored chains."""

    actions: dict
    solvers: dict
    explored: int            # chain prefixes analysed
    depth: int               # the longest chain explored


def admission(task, formula=None, seed: int = 0, max_depth: int = MAX_DEPTH, max_views: int = MAX_VIEWS) -> Admission:
    """The actions and solvers that apply to ``task`` (from ``formula``, default its own), and after which chain."""
    ctx, states = root_states(task, formula, seed)
    queue = deque([((), states, state_view(ctx, states))])
    actions: dict = {}
    solvers: dict = {}
    explored, depth = 1, 0
    while queue:
        chain, states, view = queue.popleft()
        depth = max(depth, len(chain))
        for name, solver in SOLVERS.items():
            if name not in solvers and solver.applies(view) is None:
                solvers[name] = chain
        for name, action in ACTIONS.items():
            if action.admits(view) is not None:
                continue
            if view.kind == "model" and view.statistic == "mean_energy" and not action.PRESERVES_ENERGY:
                continue                      # the engine's search takes only bijections on a mean energy
            actions.setdefault(name, chain)
            if len(chain) >= max_depth or explored >= max_views or (chain and chain[-1] == name):
                continue
            options = {k: v[0] for k, v in action.OPTION_SPACE.items()}
            try:
                after = [action.ENTRY(s, options) for s in states]
                queue.append((chain + (name,), after, state_view(ctx, after)))
            except (ValueError, MemoryError, FloatingPointError):
                continue                      # it would fail its check; the model hears why if it tries
            explored += 1
    return Admission(actions, solvers, explored, depth)
