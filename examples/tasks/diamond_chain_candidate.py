# Reference candidate for the DIAMOND user task (examples/tasks/diamond_chain.py).
# Decoration-iteration: summing out a_k, b_k leaves a 2x2 transfer matrix T_k between sigma_k and
# sigma_{k+1}; Z is the product of the L matrices between the nodal field weights. O(n), in logs.
import math

import numpy as np

SPINS = np.array([1.0, -1.0])


def log_Z(params, n):
    beta = float(params["beta"])
    J = np.asarray(params["J"], dtype=float)                  # (L, 4)
    K = np.asarray(params["K"], dtype=float)                  # (L,)
    h_node = np.asarray(params["h_node"], dtype=float)        # (L + 1,)
    h_dec = np.asarray(params["h_dec"], dtype=float)          # (L, 2)
    s, t, a, b = np.meshgrid(SPINS, SPINS, SPINS, SPINS, indexing="ij")   # sigma_k, sigma_{k+1}, a_k, b_k
    cell = lambda x: x[:, None, None, None, None]             # noqa: E731 - one value per diamond
    x = beta * (cell(J[:, 0]) * s * a + cell(J[:, 1]) * s * b + cell(J[:, 2]) * a * t + cell(J[:, 3]) * b * t
                + cell(K) * a * b + cell(h_dec[:, 0]) * a + cell(h_dec[:, 1]) * b)   # (L, 2, 2, 2, 2)
    top = x.max(axis=(3, 4), keepdims=True)
    log_T = (top + np.log(np.exp(x - top).sum(axis=(3, 4), keepdims=True)))[..., 0, 0].tolist()
    field = (beta * h_node).tolist()
    up, down = field[0], -field[0]                            # log weights of sigma_k = +1, -1
    for k, T in enumerate(log_T):
        up, down = (float(np.logaddexp(up + T[0][0], down + T[1][0])) + field[k + 1],
                    float(np.logaddexp(up + T[0][1], down + T[1][1])) - field[k + 1])
    return float(np.logaddexp(up, down))


def Z_efficient(params, n):
    return math.exp(log_Z(params, n))
