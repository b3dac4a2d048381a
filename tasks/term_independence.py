"""Independent terms: when every term of a model owns a private spin, a change of variables
to the term products makes Z a product (see :func:`peels_to_nothing`)."""

from __future__ import annotations


def peels_to_nothing(n: int, terms: list[tuple[int, ...]]) -> bool:
    """True when the terms can be removed one by one, each through a spin no other remaining term
    contains. Then the products tau_k = prod_{i in S_k} s_i are independent variables (each term
    owns a private spin), s -> tau is 2^(n - m) to one, and Z = 2^(n - m) prod_k 2 cosh(beta w_k):
    the change of variables behind open chains without fields and the open plaquette model.
    Sufficient, not necessary, for GF(2) independence; linear in the total term size."""
    if len(terms) > n:
        return False                  # more products than spins cannot be independent
    holders: list[list[int]] = [[] for _ in range(n)]
    for k, t in enumerate(terms):
        for i in t:
            holders[i].append(k)
    count = [len(h) for h in holders]
    alive = [True] * len(terms)
    queue = [i for i in range(n) if count[i] == 1]
    removed = 0
    while queue:
        i = queue.pop()
        if count[i] != 1:
            continue
        k = next(k for k in holders[i] if alive[k])
        alive[k] = False
        removed += 1
        for j in terms[k]:
            count[j] -= 1
            if count[j] == 1:
                queue.append(j)
    return removed == len(terms)
