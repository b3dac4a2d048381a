"""`evolve threshold`: the decoding threshold of a Tier 2 decoding task, estimated from the
maximum-likelihood decoder's success over sampled errors at several sizes.

- the codes (how errors are drawn, classes, the exact decoder) are :mod:`evaluators.decoding.codes`;
  :func:`.run.threshold_code` says which tasks have a threshold here (T21; T18 refused, saying why).
- :mod:`.records`: the run's settings and its journal records (versioned msgpack).
- :mod:`.batches`: one unit of work: a seeded batch of errors at one (L, p), decoded.
- :mod:`.stats`: success estimators with confidence intervals, curve crossings, finite-size scaling.
- :mod:`.run`: the run directory (journal, resume, Ray, progress, summary).
- :mod:`.report`: the self-contained HTML report.
"""
