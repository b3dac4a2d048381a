"""A task's family of models: one instance per size, and how its structure grows with n.

``family_structure(task, sizes)`` analyses one instance per size (``tasks.structure.analyse``)
and says how the treewidth and pathwidth bounds grow (bounded, ~sqrt(n), ~n), whether fields,
frustration or planarity ever appear, and so on; class consistency reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tasks.structure import Structure, analyse

#: family_structure's default sizes stop here (analysis is milliseconds per size below it)
DEFAULT_MAX_N = 100_000
GROWTH_KINDS = ("bounded", "sqrt", "linear", "unknown")


@dataclass(frozen=True)
class FamilyStructure:
    """What one instance per size says about a task's family of models.

    Growth of a width w(n): "bounded" when the least-squares slope e of log w against log n over
    the upper half of the sizes (n >= sqrt(n_min n_max)) is below 0.25 (constants and logarithms,
    for which 2^w is polynomial in n); otherwise "sqrt" (2D lattices, w ~ L = sqrt n) or "linear"
    (expanders such as random regular graphs, treewidth Theta(n)), whichever of w = a + b sqrt(n)
    and w = a + b n fits all sizes better (the intercept absorbs the small-n offsets that make log-log
    slopes of random families noisy). Two sizes only: e < 0.75 is "sqrt". One size: "unknown".
    """

    task_id: str
    sizes: tuple[int, ...]
    treewidth: tuple[int, ...]          # upper bound per size
    pathwidth: tuple[int, ...]          # upper bound per size
    treewidth_growth: str               # one of GROWTH_KINDS
    pathwidth_growth: str
    treewidth_exponent: float           # the fitted slope e
    pathwidth_exponent: float
    has_fields: bool                    # some instance has a non-zero field
    max_order: int                      # largest term order over all instances
    planar: bool | None                 # planar at every size (None: undetermined at some size)
    toroidal: bool                      # every instance is a nearest-neighbour model on a torus (genus <= 1)
    boundary: str | None                # common boundary of the lattices, "mixed" if they differ, None if none
    chain: bool                         # every instance has max degree <= 2
    bounded_degree: bool                # max degree the same at every size
    rank_one: bool                      # every instance is a Mattis rank-one block
    gauge_uniform: bool                 # every instance's signs are gauge-equivalent to ferromagnetic
    disorder: str                       # "uniform" (equal couplings) | "gauge" (removable) | "frustrated"
    uniform_magnitude: bool             # one |J| within each instance
    nishimori: bool = False             # bonds drawn on the Nishimori line (the task says so: Task.nishimori_line)
    independent_terms: bool = False     # every instance's terms own private spins (a product after a change of variables)
    #: with fields: a ghost spin joined to the field-carrying spins keeps every tested instance planar (None:
    #: no fields, or no instance small enough to test)
    ghost_planar: bool | None = None
    structures: tuple[Structure, ...] = field(default=(), compare=False, repr=False)


def width_growth(sizes, widths) -> tuple[str, float]:
    """(kind, exponent) of widths against sizes; see :class:`FamilyStructure`."""
    n = np.asarray(sizes, dtype=float)
    w = np.maximum(np.asarray(widths, dtype=float), 1.0)
    if len(np.unique(n)) < 2:
        return "unknown", float("nan")
    upper = n >= np.sqrt(n.min() * n.max()) * (1 - 1e-12)
    if upper.sum() < 2:
        upper = n >= np.sort(n)[-2]
    e = float(np.polyfit(np.log(n[upper]), np.log(w[upper]), 1)[0])
    if e < 0.25 or len(n) < 3:
        return ("bounded" if e < 0.25 else "sqrt" if e < 0.75 else "linear"), e
    residual = {}
    for kind, x in (("sqrt", np.sqrt(n)), ("linear", n)):
        design = np.stack([np.ones_like(x), x], 1)
        coef = np.linalg.lstsq(design, w, rcond=None)[0]
        residual[kind] = float(np.sum((design @ coef - w) ** 2))
    return min(residual, key=residual.get), e


def default_sizes(task, max_n: int = DEFAULT_MAX_N) -> tuple[int, ...]:
    """The task's probe and ladder sizes up to ``max_n``."""
    return tuple(sorted({int(n) for n in (*task.probe_sizes, *task.ladder_sizes) if n <= max_n}))


_FAMILY_CACHE: dict[tuple, FamilyStructure] = {}


def family_structure(task, sizes=None, seed: int = 0, nishimori: bool | None = None) -> FamilyStructure:
    """Analyse ``task.to_model(task.probe_params(n, seed, 0), n)`` for each size (default:
    :func:`default_sizes`) and summarise. Cached by (task, sizes, seed). Whether the bonds lie on
    the Nishimori line is not visible in one instance: it comes from ``task.nishimori_line``
    unless ``nishimori`` overrides it."""
    if nishimori is None:
        nishimori = bool(getattr(task, "nishimori_line", False))
    sizes = default_sizes(task) if sizes is None else tuple(sorted({int(n) for n in sizes}))
    if not sizes:
        raise ValueError(f"{task.id}: no sizes to analyse")
    key = (task.id, type(task).__qualname__, sizes, int(seed), bool(nishimori))
    if key in _FAMILY_CACHE:
        return _FAMILY_CACHE[key]
    ss = tuple(analyse(task.to_model(task.probe_params(n, seed, 0), n)) for n in sizes)
    fam = summarise(task.id, sizes, ss, bool(nishimori))
    _FAMILY_CACHE[key] = fam
    return fam


def side_is_sqrt_n(task, claim: str | None) -> bool:
    """Whether an "L" in a complexity claim about ``task`` is the side of an L x L lattice, n = L^2:
    the task says so (``square_lattice``), or, for a claim that names L, every model the family
    analysis reads (:func:`family_structure`) is an L x L lattice, or its formula's variables are an
    L x L array at every size. A user's grid task that does not set
    the flag gets the same reading as the catalogue's: a derived program's "O(L^2 2^(L))" was priced with
    L = n, so a cheap rung was refused as 1e12 s."""
    if task.square_lattice:
        return True
    if not claim or "L" not in claim:
        return False
    try:
        fam = family_structure(task)
        shapes = [s.lattice_shape for s in fam.structures]
        formula = getattr(task, "formula", None)
        if any(s is None for s in shapes) and formula is not None and len(formula.shape) == 2:
            shapes = [formula.shape_at(task.probe_params(n, 0, 0), n) for n in fam.sizes]   # a formula's L x L array
    except Exception:  # noqa: BLE001 - a task whose models do not build is refused where they are built
        return False
    return bool(shapes) and all(s is not None and s[0] == s[1] and s[0] > 1 for s in shapes)


def _ghost_planar(ss) -> bool | None:
    """False if a tested instance with fields is not ghost-planar, True if every tested one is, else None."""
    tested = [s.ghost_planar for s in ss if s.ghost_planar is not None]
    if not tested:
        return None
    return all(tested)


def summarise(task_id: str, sizes: tuple[int, ...], ss: tuple[Structure, ...], nishimori: bool = False) -> FamilyStructure:
    """The family summary of one analysed model per size (``ss[k]`` at ``sizes[k]``): also used for
    models that are not a task's own, such as those a derivation step leaves (search/derivation)."""
    tw_kind, tw_e = width_growth(sizes, [s.treewidth for s in ss])
    pw_kind, pw_e = width_growth(sizes, [s.pathwidth for s in ss])
    planar_all = [s.planar for s in ss]
    boundaries = {s.boundary for s in ss}
    gauge_all = all(s.gauge_uniform for s in ss)
    return FamilyStructure(
        task_id=task_id, sizes=tuple(sizes),
        treewidth=tuple(s.treewidth for s in ss), pathwidth=tuple(s.pathwidth for s in ss),
        treewidth_growth=tw_kind, pathwidth_growth=pw_kind, treewidth_exponent=tw_e, pathwidth_exponent=pw_e,
        has_fields=any(s.has_fields for s in ss), max_order=max(s.max_order for s in ss),
        planar=False if False in planar_all else (None if None in planar_all else True),
        toroidal=all(s.torus for s in ss),
        boundary=boundaries.pop() if len(boundaries) == 1 else ("mixed" if None not in boundaries else None),
        chain=all(s.is_chain for s in ss), bounded_degree=len({s.max_degree for s in ss}) == 1,
        rank_one=all(s.rank_one for s in ss), gauge_uniform=gauge_all,
        disorder="uniform" if all(s.uniform_couplings for s in ss) else "gauge" if gauge_all else "frustrated",
        uniform_magnitude=all(s.uniform_magnitude for s in ss), nishimori=bool(nishimori),
        independent_terms=all(s.independent_terms for s in ss), structures=tuple(ss), ghost_planar=_ghost_planar(ss),
    )
