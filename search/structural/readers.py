"""Readers: how a generated program turns the task's own params dict into arrays.

Generated programs receive ``(params, n)`` exactly as the paper's ``Z_efficient`` does, so each
one embeds its task's reader, a self-contained numpy function: the reader compiled from the task's
formula (tasks/formula_reader.py) behind a small adapter, or, for a task without a formula, one the
task module declares as the class attribute ``reader_source`` (a declared reader takes precedence)::

    def _read(params, n) -> (edges, J, h, rank_one, positions[, constant])

    edges      (m, 2) int array of coupled pairs (repeats allowed: they add)
    J          (m,) float couplings
    h          (n,) float fields
    rank_one   list of (u, a): all-to-all blocks adding -(a/2)[(u.s)^2 - |u|^2] to H, kept unexpanded
    positions  (n, 2) straight-line planar embedding, or None
    constant   optional energy constant (H gains -constant, log Z gains beta * constant; default 0)

in the project's sign convention, H = -(constant + sum J s_i s_j + sum h s_i + rank-one terms), with beta
read separately from ``params["beta"]``. ``read_model_arrays`` puts the model IR in the same
normal form, so a reader can be checked against ``task.to_model``.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from tasks.base import Task
from tasks.formula import Formula
from tasks.formula_reader import compile_reader
from tasks.model import IsingModel

#: the adapter from the compiled reader's dict to the templates' arrays (pairs and fields only)
ADAPTER = '''

def _read(params, n):
    """(edges, J, h, rank_one, positions, constant) from the reader compiled from the task's formula."""
    read = _read_formula(params, n)
    edges, J, h = np.zeros((0, 2), dtype=np.int64), np.zeros(0), np.zeros(read["n"])
    for idx, w in read["terms"]:
        if idx.shape[1] == 1:
            np.add.at(h, idx[:, 0], w)
        elif idx.shape[1] == 2:
            edges, J = idx, w
        else:
            raise ValueError(f"the reader compiled from the formula gives terms on {idx.shape[1]} spins; "
                             "the structural templates take pairs and fields")
    return edges, J, h, list(read["rank_one"]), read["positions"], read["constant"]
'''


class NoReader(LookupError):
    """The task has neither a formula nor a ``reader_source``: the structural proposer cannot write programs for it."""


def reader_source(task: Task) -> str:
    """The task's reader source: its declared ``reader_source``, else the one compiled from its formula
    (NoReader when it has neither, or its formula cannot be compiled)."""
    src = getattr(task, "reader_source", None)
    if isinstance(src, str) and "def _read(" in src:
        return src
    if isinstance(task.formula, Formula):
        try:
            return _compiled_source(task.formula)
        except ValueError as exc:
            raise NoReader(f"task {task.id}: its formula cannot be compiled into a reader ({exc})") from None
    if task.formula is not None:          # a ConstrainedSum or DisorderAverage (tasks/formula_extras.py)
        raise NoReader(f"task {task.id}: its formula is {_KINDS.get(type(task.formula).__name__, 'not a Formula')}, "
                       "which the structural templates do not read directly (they take a Z over one set of spins), "
                       "and it declares no reader_source")
    raise NoReader(f"task {task.id} has no formula (tasks/formula.py) and declares no reader_source")


#: what a formula that is not a plain Z is, in the words of the NoReader message
_KINDS = {"ConstrainedSum": "a constrained sum (a sum restricted by parity conditions, tasks/formula_extras.py)",
          "DisorderAverage": "a disorder average (tasks/formula_extras.py)"}


@lru_cache(maxsize=256)
def _compiled_source(formula: Formula) -> str:
    return compile_reader(formula).source + ADAPTER


def load_reader(source: str):
    """The ``_read`` function of a reader source, executed in a fresh namespace."""
    namespace: dict = {}
    exec(compile(source, "<reader>", "exec"), namespace)  # noqa: S102 - our own task's source
    return namespace["_read"]


def read(task: Task, params: dict, n: int):
    """Run the task's reader on ``params``."""
    return load_reader(reader_source(task))(params, n)


def normal_form(n: int, edges, J, h, rank_one):
    """(edges (m, 2) with i < j sorted and merged, zero couplings dropped; J; h (n,); rank-one list)."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    J = np.asarray(J, dtype=np.float64).reshape(-1)
    lo, hi = np.minimum(edges[:, 0], edges[:, 1]), np.maximum(edges[:, 0], edges[:, 1])
    key, inv = np.unique(lo * n + hi, return_inverse=True)
    Jm = np.bincount(inv.ravel(), weights=J, minlength=len(key))
    keep = Jm != 0.0
    merged = np.stack([key[keep] // n, key[keep] % n], 1).astype(np.int64).reshape(-1, 2)
    blocks = [(np.asarray(u, dtype=np.float64).reshape(-1), float(a)) for u, a in rank_one]
    return merged, Jm[keep], np.asarray(h, dtype=np.float64).reshape(n), blocks


def read_model_arrays(model: IsingModel):
    """The model IR in the reader's normal form (pair terms only; rank-one blocks kept apart)."""
    if model.higher_order:
        raise ValueError("the model has terms on three or more spins, which readers do not carry")
    pairs = [(t, w) for t, w in zip(model.terms, model.weights) if len(t) == 2]
    edges = np.array([t for t, _ in pairs], dtype=np.int64).reshape(-1, 2)
    J = np.array([w for _, w in pairs], dtype=np.float64)
    return normal_form(model.n, edges, J, model.fields, model.rank_one)


def reader_disagreement(task: Task, params: dict, n: int) -> str | None:
    """None when the reader and ``task.to_model`` give the same couplings, fields, rank-one
    blocks and energy constant (to 1e-12), else what differs."""
    out = read(task, params, n)
    edges, J, h, rank_one, positions = out[:5]
    constant = float(out[5]) if len(out) > 5 else 0.0
    got = normal_form(n, edges, J, h, rank_one)
    model = task.to_model(params, n)
    want = read_model_arrays(model)
    if abs(constant - model.constant) > 1e-12 * max(1.0, abs(model.constant)):
        return f"energy constants differ ({constant:.6g} from the reader, {model.constant:.6g} in the model)"
    if got[0].shape != want[0].shape or not np.array_equal(got[0], want[0]):
        return f"coupled pairs differ ({len(got[0])} from the reader, {len(want[0])} in the model)"
    if not np.allclose(got[1], want[1], rtol=0.0, atol=1e-12):
        return "coupling values differ"
    if not np.allclose(got[2], want[2], rtol=0.0, atol=1e-12):
        return "fields differ"
    if len(got[3]) != len(want[3]):
        return f"{len(got[3])} rank-one blocks from the reader, {len(want[3])} in the model"
    for (u, a), (v, b) in zip(got[3], want[3]):
        if not (np.allclose(u, v, rtol=0.0, atol=1e-12) and abs(a - b) <= 1e-12):
            return "rank-one blocks differ"
    if positions is not None and np.asarray(positions).shape != (n, 2):
        return f"positions have shape {np.asarray(positions).shape}, expected ({n}, 2)"
    return None
