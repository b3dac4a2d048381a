"""Independent evaluators of what a compiled reader returns (tasks/formula_reader.py), by enumeration
over every assignment, written from the dict's documented meaning only (no project oracle):

* kind "z":  log Z = log sum_s exp(beta W(s)),  W = constant + sum_k w_k prod s[idx_k]
             + sum over blocks (a/2)[(u.s)^2 - |u|^2],  s in {-1, +1}^n;
* kind "constrained": log sum over the +-1 forms s of the variables whose 0/1 values x = (1 + s)/2
             satisfy every parity row (sum of x[var] over the row = rhs mod 2) of exp(W(s));
* kind "disorder": sum over sign patterns e of exp(C(e)) * A(e), with the spins s after the signs
             (index N + i), A the mean energy -<W> at the reference beta ("mean") or, for "ratio", the
             log of sum_e exp(C(e)) Z_beta(e) / Z_ref(e).
"""

import math

import numpy as np
from scipy.special import logsumexp


def spins(count: int) -> np.ndarray:
    """(2^count, count) every assignment of ``count`` +-1 variables."""
    idx = np.arange(2**count, dtype=np.int64)
    return np.where((idx[:, None] >> np.arange(count)) & 1 == 1, 1.0, -1.0)


def weight(S: np.ndarray, terms, constant: float, rank_one=()) -> np.ndarray:
    """W on every row of S (states x variables)."""
    W = np.full(len(S), float(constant))
    for idx, w in terms:
        idx = np.asarray(idx)
        assert idx.ndim == 2 and idx.shape[0] == len(w) and idx.shape[1] >= 1, idx.shape
        W += S[:, idx].prod(axis=2) @ np.asarray(w, dtype=np.float64)
    for u, a in rank_one:
        m = S @ np.asarray(u, dtype=np.float64)
        W += 0.5 * float(a) * (m * m - float(np.dot(u, u)))
    return W


def log_z(read: dict) -> float:
    S = spins(int(read["n"]))
    return float(logsumexp(float(read["beta"]) * weight(S, read["terms"], read["constant"], read["rank_one"])))


def log_constrained(read: dict) -> float:
    S = spins(int(read["n_vars"]))
    X = ((S + 1) / 2).astype(np.int64)
    keep = np.ones(len(S), dtype=bool)
    for c in read["constraints"]:
        rows = len(c["rhs"])
        assert len(c["row_of"]) == len(c["var"]) and len(c["coords"]) == rows, "one coords row per condition row"
        for r in range(rows):
            total = X[:, np.asarray(c["var"])[np.asarray(c["row_of"]) == r]].sum(axis=1)
            keep &= total % 2 == int(c["rhs"][r]) % 2
    if not keep.any():
        return -math.inf
    return float(logsumexp(weight(S[keep], read["terms"], read["constant"])))


def disorder_value(read: dict) -> float:
    N, n = int(read["n_disorder"]), int(read["n"])
    E, S = spins(N), spins(n)
    C = weight(E, read["disorder"]["terms"], read["disorder"]["constant"])
    b_ref, beta = float(read["reference_beta"]), float(read["beta"])
    parts = []
    for e, c in zip(E, C):
        W = weight(np.hstack([np.broadcast_to(e, (len(S), N)), S]), read["inner"]["terms"], read["inner"]["constant"])
        if read["statistic"] == "mean":
            p = np.exp(b_ref * (W - W.max()))
            parts.append(math.exp(c) * float(-(W * p).sum() / p.sum()))
        else:
            parts.append(c + logsumexp(beta * W) - logsumexp(b_ref * W))
    return float(sum(parts)) if read["statistic"] == "mean" else float(logsumexp(parts))


def value(read: dict) -> float:
    """The reader's quantity: log Z, the log of a constrained sum, or a disorder average's value."""
    kind = read["kind"]
    return log_z(read) if kind == "z" else log_constrained(read) if kind == "constrained" else disorder_value(read)
