"""What the engine knows about the states a chain of steps leaves: one instance per size, analysed.

A chain prefix is run in-process on the task's own parameter draws (``task.probe_params``) at the
probe sizes and the ladder sizes up to :data:`VIEW_MAX_N`, with the same functions the program
renders. The states that are spin models are turned into :class:`tasks.model.IsingModel` and analysed
(tasks/structure.py, tasks/family.py: planarity, widths and their growth, fields, rank one, signs,
independent terms); the facts the actions and solvers ask about are collected in a :class:`StateView`.
For the cheap exact solvers (Kaufman, product, magnetisation) and the first steps of the Tier-2
problems, "applies" means that the step or solver itself accepts every instance: the code that will
run decides, and its error message is the reason when it does not. ``describe_state`` says what a
state is in words, for the derivation's record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from search.derivation.actions.summing_out import degree_counts
from search.derivation.runtime import _rt_grid, _rt_neighbour_pairs, _rt_torus_bonds
from search.derivation.solvers.elimination import ELIM_MAX_WIDTH, widths as elimination_widths
from search.structural.proposer import TaskView
from tasks.family import FamilyStructure, summarise
from tasks.model import IsingModel, Lattice
from tasks.rotation_system import drawing_is_planar
from tasks.structure import analyse, pair_gauge

#: the view runs a chain on instances up to this size (structure analysis stays cheap)
VIEW_MAX_N = 1100


@dataclass
class StateView:
    """Facts about the states one chain prefix leaves, across sizes (see the module docstring)."""

    kind: str                                  # "model" | "constrained" | "disorder"
    sizes: tuple[int, ...]
    statistic: str = "log_z"
    family: FamilyStructure | None = None
    task_view: TaskView | None = None
    max_order: int = 0
    has_fields: bool = False
    has_pairs: bool = False
    rank_one: bool = False
    rank_one_positive: bool = False            # one block, u in {0, c} with c > 0
    uniform_block_fields: bool = False         # the same field on every spin of the block
    negative_signs: bool = False               # a negative pair coupling, or a rank-one vector of mixed signs
    gauge_balanced: bool = True                # pair signs removable by a gauge in every instance
    frustration: str | None = None             # an odd cycle, when they are not
    has_positions: bool = False
    drawing_planar: bool = False               # every instance's drawing passes Euler's formula
    independent_terms: bool = False
    degrees: set = field(default_factory=set)
    lone_spins: bool = False                   # some spin shares no term with another
    all_lone: bool = False                     # no spin shares a term with another
    n_spins: tuple[int, ...] = ()
    #: the width of the elimination solver's order on each state (search/derivation/solvers/elimination.py),
    #: and why it has none on some state (wider than its cap, rank-one blocks) or None
    elimination_widths: tuple[int, ...] = ()
    elimination_reason: str | None = None
    #: the same up to the program's own cap (ELIM_MAX_WIDTH) on models with terms on three or more spins (the
    #: exponential route, search/derivation/solvers/wide_elimination.py); empty on pair models
    wide_widths: tuple[int, ...] = ()
    wide_reason: str | None = None
    #: None when every state is a zero-field nearest-neighbour torus with both sides >= 3, else why not
    nn_torus: str | None = "not measured"
    #: solver or step name -> None when it accepts every instance, else its reason
    accepts: dict = field(default_factory=dict)

    # the reasons the cheap solvers / first steps read
    def reason(self, name: str) -> str | None:
        return self.accepts.get(name, f"{name} was not tried on these states")



def to_ising(model: dict) -> IsingModel:
    """The runtime model as the IR: weights K at beta = 1, log_shift as the constant."""
    terms, weights = [], []
    for idx, w in model["terms"]:
        terms += [tuple(r) for r in idx.tolist()]
        weights.append(np.asarray(w, dtype=np.float64))
    grid = _rt_grid(model)
    n = int(model["n"])
    lattice = None
    if grid is not None and grid["rows"] * grid["cols"] == n:
        lattice = Lattice(grid["rows"], grid["cols"], grid["wrap_rows"], grid["wrap_cols"])
    pos = model.get("positions")
    return IsingModel(n=n, terms=tuple(terms), weights=np.concatenate(weights) if weights else np.zeros(0),
                      beta=1.0, constant=float(model["log_shift"]), rank_one=tuple(model["rank_one"]),
                      lattice=lattice, positions=None if pos is None else np.asarray(pos, dtype=np.float64))


def odd_cycle(n: int, edges: np.ndarray, K: np.ndarray) -> list[int] | None:
    """A cycle with an odd number of negative couplings (the proof of frustration), or None."""
    g = nx.Graph()
    g.add_nodes_from(range(n))
    for (a, b), k in zip(edges.tolist(), K.tolist()):
        g.add_edge(a, b, neg=k < 0)
    side: dict[int, int] = {}
    parent: dict[int, int] = {}
    for root in g.nodes:
        if root in side:
            continue
        side[root] = 0
        parent[root] = root
        for u, v in nx.bfs_edges(g, root):
            side[v] = side[u] ^ g[u][v]["neg"]
            parent[v] = u
    for a, b, d in g.edges(data=True):
        if side[a] ^ side[b] ^ d["neg"]:
            pa, pb = [a], [b]
            while parent[pa[-1]] != pa[-1]:
                pa.append(parent[pa[-1]])
            while parent[pb[-1]] != pb[-1]:
                pb.append(parent[pb[-1]])
            common = next(x for x in pa if x in set(pb))
            return pa[:pa.index(common) + 1] + pb[:pb.index(common)][::-1]
    return None


def view_of(task_id: str, sizes: tuple[int, ...], states: list[dict], nishimori: bool,
            cheap_solvers=(), first_steps=()) -> StateView:
    """The StateView of ``states`` (one per size). ``cheap_solvers`` / ``first_steps`` are modules
    whose ENTRY is tried on every state: None in ``accepts`` when none raises."""
    kind = states[0].get("kind", "model")          # runtime models carry no kind; problems do
    v = StateView(kind=kind, sizes=tuple(sizes))
    if kind != "model":
        for step in first_steps:
            v.accepts[step.NAME] = _try_all(step.ENTRY, states)
        return v
    v.statistic = states[0]["statistic"]
    models = [to_ising(m) for m in states]
    structures = tuple(analyse(m) for m in models)
    v.family = summarise(task_id, tuple(sizes), structures, nishimori)
    v.n_spins = tuple(m.n for m in models)
    v.elimination_widths, v.elimination_reason = elimination_widths(states)
    v.max_order = max(m.max_order for m in models)
    if v.max_order > 2 and v.statistic == "log_z":
        v.wide_widths, v.wide_reason = elimination_widths(states, ELIM_MAX_WIDTH)
    v.has_fields = any(m.has_fields for m in models)
    v.has_pairs = any(len(m.couplings[0]) and not m.rank_one for m in models) or any(
        any(len(t) == 2 for t in m.terms) for m in models)
    v.rank_one = any(m.rank_one for m in models)
    blocks = [m.rank_one for m in models]
    v.rank_one_positive = all(len(b) == 1 and _positive_block(b[0][0]) for b in blocks)
    v.uniform_block_fields = v.rank_one_positive and all(
        _uniform_on(m.fields, b[0][0]) for m, b in zip(models, blocks))
    v.negative_signs = any(np.any(_rt_pairs_safe(s)[1] < 0) for s in states) or any(
        len(b) == 1 and np.any(b[0][0] < 0) for b in blocks)
    v.gauge_balanced, v.frustration = True, None
    for s in states:
        edges, K = _rt_pairs_safe(s)
        if pair_gauge(s["n"], edges, K) is None:
            v.gauge_balanced = False
            cycle = odd_cycle(s["n"], edges, K)
            v.frustration = (f"at n = {s['n']} the cycle {cycle} carries an odd number of negative couplings"
                             if cycle else "a cycle carries an odd number of negative couplings")
            break
    v.has_positions = all(m.positions is not None for m in models)
    v.drawing_planar = v.has_positions and all(
        drawing_is_planar(m.n, _pair_graph(s), m.positions) for m, s in zip(models, states))
    v.nn_torus = _try_all(_rt_torus_bonds, states)
    v.independent_terms = all(st.independent_terms for st in structures)
    v.degrees = degree_counts(states)
    lone = [_lone(s) for s in states]
    v.lone_spins = any(x.any() for x in lone)
    v.all_lone = all(x.all() for x in lone)
    side = [st.lattice_shape for st in structures]
    v.task_view = TaskView(
        task_id=task_id, family=v.family, max_order=v.max_order, has_fields=v.has_fields, planar=v.family.planar,
        chain=v.family.chain, rank_one=v.rank_one,
        rank_one_uniform=v.rank_one and all(len(b) == 1 and _constant_magnitude(b[0][0]) for b in blocks),
        has_pairs=v.has_pairs, has_positions=v.has_positions,
        lattice_side=all(s is not None and s[0] == s[1] and s[0] > 1 for s in side), torus=v.family.toroidal)
    for solver in cheap_solvers:
        v.accepts[solver.NAME] = _try_all(solver.ENTRY, states)
    return v


def _try_all(entry, states) -> str | None:
    for s in states:
        try:
            entry(s, {})
        except (ValueError, FloatingPointError, MemoryError) as exc:
            return str(exc)
    return None


def _rt_pairs_safe(model: dict):
    """(edges, K) of the pair terms (ignoring other orders)."""
    for idx, w in model["terms"]:
        if idx.shape[1] == 2:
            return idx, w
    return np.zeros((0, 2), dtype=np.int64), np.zeros(0)


def _pair_graph(model: dict) -> np.ndarray:
    a, b = _rt_neighbour_pairs(model)
    return np.stack([a, b], 1)


def _lone(model: dict) -> np.ndarray:
    joined = np.zeros(model["n"], dtype=bool)
    a, b = _rt_neighbour_pairs(model)
    joined[a] = True
    joined[b] = True
    for u, _ in model["rank_one"]:
        if np.count_nonzero(u) > 1:
            joined |= u != 0.0
    return ~joined


def _positive_block(u) -> bool:
    u = np.asarray(u)
    nz = u[u != 0.0]
    return bool(len(nz) and np.all(nz > 0) and np.all(nz == nz[0]))


def _constant_magnitude(u) -> bool:
    a = np.abs(np.asarray(u))
    a = a[a != 0.0]
    return bool(len(a) == 0 or np.allclose(a, a[0], rtol=1e-12, atol=0.0))


def _uniform_on(fields, u) -> bool:
    h = np.asarray(fields)[np.asarray(u) != 0.0]
    return bool(len(h) == 0 or np.all(h == h[0]))


__all__ = ["StateView", "VIEW_MAX_N", "odd_cycle", "to_ising", "view_of"]


def describe_state(state: dict) -> str:
    """A state in words: what kind of sum it is and its terms."""
    kind = state.get("kind", "model")
    if kind == "constrained":
        rows = sum(len(c["rhs"]) for c in state["constraints"])
        return f"a sum over {state['n_vars']} 0/1 variables under {rows} parity conditions (n = {state['n']})"
    if kind == "disorder":
        return (f"a {state['statistic']} over {state['n_disorder']} random signs of a model on {state['n']} spins")
    parts = []
    for idx, w in state["terms"]:
        k = idx.shape[1]
        what = {1: "fields", 2: "pair couplings"}.get(k, f"{k}-spin terms")
        signs = " (all > 0)" if np.all(w > 0) else " (all < 0)" if np.all(w < 0) else " (mixed signs)"
        parts.append(f"{len(w)} {what}{signs}")
    parts += [f"a rank-one block over {int(np.count_nonzero(u))} spins" for u, _ in state["rank_one"]]
    grid = _rt_grid(state)
    where = ""
    if grid is not None:
        where = f" on a {grid['rows']} x {grid['cols']} " + ("torus" if grid["wrap_rows"] and grid["wrap_cols"] else
                                                             "grid" if not (grid["wrap_rows"] or grid["wrap_cols"])
                                                             else "cylinder")
    what = "mean energy" if state.get("statistic") == "mean_energy" else "model"
    return f"a {what} of {state['n']} spins{where}: " + (", ".join(parts) if parts else "no terms")
