"""The model IR: one Ising-type model under every task, oracle and check.

Convention (used everywhere in this project)::

    H(s) = -(constant + sum_k w_k prod_{i in S_k} s_i),   s_i in {-1, +1}
    Z    = sum_s exp(-beta H(s)),                          log Z is natural log

Fields are 1-spin terms, couplings 2-spin terms, plaquettes 4-spin terms. A model carries
its inverse temperature ``beta`` so an oracle needs nothing else; ``with_beta`` gives the
same interactions at another temperature.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from itertools import chain

import networkx as nx
import numpy as np


@dataclass(frozen=True)
class Lattice:
    """Geometry hint for models that live on a rows x cols grid.

    Site (r, c) is spin ``r * cols + c``. ``periodic_rows`` means the grid wraps
    vertically (row rows-1 couples to row 0), ``periodic_cols`` horizontally.
    Oracles may use it to choose a sweep order; nothing may rely on it for correctness.
    """

    rows: int
    cols: int
    periodic_rows: bool = False
    periodic_cols: bool = False

    def site(self, r: int, c: int) -> int:
        return r * self.cols + c

    @property
    def torus(self) -> bool:
        return self.periodic_rows and self.periodic_cols

    def positions(self) -> np.ndarray:
        """(n, 2) float array of (x, y) = (c, -r): a straight-line embedding of the open grid."""
        r, c = np.divmod(np.arange(self.rows * self.cols), self.cols)
        return np.stack([c, -r], axis=1).astype(float)


@dataclass(frozen=True, eq=False)
class IsingModel:
    """n spins and k-spin interaction terms; see the module docstring for the sign convention.

    terms:    tuple of tuples of distinct spin indices in [0, n); a term may repeat (weights add)
    weights:  float64 array, one weight per term (energy units; beta multiplies them)
    beta:     inverse temperature
    constant: energy offset folded in as -constant (so log Z gains beta * constant)
    rank_one: all-to-all blocks (u, a), each adding -(a/2) [(u.s)^2 - |u|^2] = -a sum_{i<j} u_i u_j s_i s_j
              to H; kept unexpanded so dense rank-1 couplings (Mattis, Curie-Weiss) stay O(n) in memory.
              ``couplings`` and ``graph`` include them expanded; methods that know better read them here.
    lattice:  optional geometry hint
    positions: optional (n, 2) straight-line planar embedding (for planar methods)
    """

    n: int
    terms: tuple[tuple[int, ...], ...]
    weights: np.ndarray
    beta: float
    constant: float = 0.0
    rank_one: tuple[tuple[np.ndarray, float], ...] = ()
    lattice: Lattice | None = None
    positions: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        w = np.asarray(self.weights, dtype=np.float64).reshape(-1)
        object.__setattr__(self, "weights", w)
        object.__setattr__(self, "terms", tuple(tuple(int(i) for i in t) for t in self.terms))
        if self.n < 1:
            raise ValueError(f"a model needs at least one spin, got n={self.n}")
        if len(self.terms) != len(w):
            raise ValueError(f"{len(self.terms)} terms but {len(w)} weights")
        if not np.all(np.isfinite(w)) or not np.isfinite(self.beta):
            raise ValueError("weights and beta must be finite")
        for t in self.terms:
            if not t or len(set(t)) != len(t) or min(t) < 0 or max(t) >= self.n:
                raise ValueError(f"bad term {t} for n={self.n}: indices must be distinct and in [0, n)")
        blocks = []
        for u, a in self.rank_one:
            u = np.asarray(u, dtype=np.float64).reshape(-1)
            if u.shape != (self.n,) or not np.all(np.isfinite(u)) or not np.isfinite(a):
                raise ValueError("a rank-one block needs a finite vector of length n and a finite weight")
            blocks.append((u, float(a)))
        object.__setattr__(self, "rank_one", tuple(blocks))
        if self.lattice is not None and self.lattice.rows * self.lattice.cols != self.n:
            raise ValueError("lattice size does not match n")

    # -- constructors -------------------------------------------------------------------
    @classmethod
    def from_arrays(cls, n: int, beta: float, edges=(), J=(), h=None, **kw) -> "IsingModel":
        """Build from pair couplings ``edges`` (m, 2) with weights ``J`` (m,) and fields ``h`` (n,)."""
        edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        J = np.broadcast_to(np.asarray(J, dtype=np.float64), (len(edges),))
        terms = [tuple(e) for e in edges.tolist()]
        weights = list(J)
        if h is not None:
            h = np.broadcast_to(np.asarray(h, dtype=np.float64), (n,))
            nz = np.flatnonzero(h)
            terms += [(int(i),) for i in nz]
            weights += list(h[nz])
        return cls(n=n, terms=tuple(terms), weights=np.asarray(weights, dtype=np.float64), beta=float(beta), **kw)

    def with_beta(self, beta: float) -> "IsingModel":
        return replace(self, beta=float(beta))

    def with_weights(self, weights: np.ndarray) -> "IsingModel":
        return replace(self, weights=np.asarray(weights, dtype=np.float64))

    # -- views ----------------------------------------------------------------------------
    def _terms_of_order(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(spins (m, k) int64, weights (m,)) of the k-spin terms, in the order of ``terms``. Built
        with np.fromiter rather than a Python loop per term (a star of 10^5 spins spent 0.3 s here)."""
        lens = np.fromiter(map(len, self.terms), np.int64, len(self.terms))
        rows = np.flatnonzero(lens == k)
        flat = np.fromiter(chain.from_iterable(self.terms[i] for i in rows.tolist()), np.int64, k * len(rows))
        return flat.reshape(-1, k), self.weights[rows]

    @cached_property
    def fields(self) -> np.ndarray:
        """(n,) total 1-spin weight per spin."""
        spins, w = self._terms_of_order(1)
        # each spin's weights summed in term order, as the loop this replaces did (float64 even when empty)
        return np.bincount(spins[:, 0], weights=w, minlength=self.n).astype(np.float64)

    @cached_property
    def couplings(self) -> tuple[np.ndarray, np.ndarray]:
        """(edges (m, 2) int64 with i < j, sorted; J (m,)) with repeated pairs merged; zero couplings kept out."""
        pairs, w = self._terms_of_order(2)
        key, inv = np.unique(pairs.min(axis=1) * self.n + pairs.max(axis=1), return_inverse=True)
        J = np.bincount(inv.reshape(-1), weights=w, minlength=len(key))  # repeats added in term order
        keep = J != 0.0
        edges = np.stack([key[keep] // self.n, key[keep] % self.n], 1).astype(np.int64).reshape(-1, 2)
        J = J[keep].astype(np.float64)
        if self.rank_one:
            dense = np.zeros((self.n, self.n))
            dense[edges[:, 0], edges[:, 1]] = J
            for u, a in self.rank_one:
                dense += a * np.outer(u, u)
            i, j = np.triu_indices(self.n, 1)
            keep = dense[i, j] != 0.0
            edges, J = np.stack([i[keep], j[keep]], 1).astype(np.int64), dense[i, j][keep]
        return edges, J

    @cached_property
    def higher_order(self) -> tuple[tuple[tuple[int, ...], float], ...]:
        """Terms on three or more spins, as (indices, weight)."""
        return tuple((t, float(w)) for t, w in zip(self.terms, self.weights) if len(t) >= 3)

    @property
    def max_order(self) -> int:
        return max((len(t) for t in self.terms), default=0)

    @property
    def has_fields(self) -> bool:
        return bool(np.any(self.fields != 0.0))

    @property
    def is_pairwise(self) -> bool:
        return self.max_order <= 2

    def integer_energies(self) -> bool:
        """True when every weight and the constant are integers (density-of-states methods apply)."""
        vals = np.append(self.weights, self.constant)
        if self.rank_one:
            vals = np.append(vals, self.couplings[1])
        return bool(np.all(vals == np.round(vals)))

    def energy_bound(self) -> float:
        """A lower bound on H: -(|constant| + sum |w_k|)."""
        bound = abs(self.constant) + float(np.abs(self.weights).sum())
        for u, a in self.rank_one:
            bound += abs(a) * float(np.sum(np.abs(u))) ** 2 / 2
        return -bound

    def energy(self, spins: np.ndarray) -> np.ndarray:
        """H(s) for spins of shape (..., n) with entries +-1; returns shape (...)."""
        s = np.asarray(spins, dtype=np.float64)
        total = np.full(s.shape[:-1], self.constant)
        for t, w in zip(self.terms, self.weights):
            total = total + w * np.prod(s[..., list(t)], axis=-1)
        for u, a in self.rank_one:
            total = total + 0.5 * a * ((s @ u) ** 2 - float(u @ u))
        return -total

    def graph(self) -> nx.Graph:
        """Primal interaction graph: spins are nodes; each term joins its spins pairwise.

        Pair edges carry ``J`` (merged coupling, 0.0 where only a k>=3 term joins them);
        nodes carry ``h`` (field).
        """
        g = nx.Graph()
        h = self.fields
        g.add_nodes_from((i, {"h": float(h[i])}) for i in range(self.n))
        edges, J = self.couplings
        g.add_edges_from((int(a), int(b), {"J": float(j)}) for (a, b), j in zip(edges, J))
        for t, _ in self.higher_order:  # k-spin terms join their spins pairwise
            for a in range(len(t)):
                for b in range(a + 1, len(t)):
                    if not g.has_edge(t[a], t[b]):
                        g.add_edge(t[a], t[b], J=0.0)
        return g

    def embedding(self) -> np.ndarray | None:
        """(n, 2) straight-line planar embedding if one is known (explicit positions or an open lattice)."""
        if self.positions is not None:
            return np.asarray(self.positions, dtype=float)
        if self.lattice is not None and not (self.lattice.periodic_rows or self.lattice.periodic_cols):
            return self.lattice.positions()
        return None
