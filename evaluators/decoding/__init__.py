"""Exact maximum-likelihood decoding of the planar surface code in polynomial time.

- :mod:`evaluators.decoding.gaussian`: fermionic Gaussian states of 2m Majorana modes (covariance
  matrix and log norm) and the one gate the transfer needs, c (1 + t A) with A = -i g_a g_b, in
  float64 and in double-double arithmetic.
- :mod:`evaluators.decoding.planar_code`: the class probabilities P(a, S) of the planar code of
  distance L under independent bit flips (task T21's quantity) by the column transfer of
  Bravyi, Suchara and Vargo (2014), exact at every p in [0, 1/2].
- :mod:`evaluators.decoding.sampling`: errors, syndromes and classes drawn from the noise model,
  and the decoder's outcome on each.
"""
