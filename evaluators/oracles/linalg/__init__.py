"""The linear algebra behind the Pfaffian oracles: ln |Pf A| (and its sign) of sparse real skew-symmetric
matrices by a multifrontal skew elimination along a nested-dissection order, in float64 or double-double.

``skew_pfaffian`` (the entry point, ``log_abs_pfaffian``) and ``skew_signed`` (with the sign) drive the
elimination; ``nested_dissection`` orders it, ``front_stack`` holds the contribution blocks,
``skew_front`` / ``skew_front_half`` / ``skew_front_split`` eliminate one dense front, ``subtree_threads``
runs independent subtrees in threads, ``double_double`` is the numba double-double arithmetic. Nothing
here knows an Ising model or imports the contraction package: the planar and torus oracles
(``evaluators.oracles.planar``, ``torus_sparse``) build the matrices.
"""
