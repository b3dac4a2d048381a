"""Reading finished (or live) runs back for analysis: re-judging every proposal with today's
verifier from the recorded responses (``evolve replay``, :mod:`.rejudge`) and exporting one
record per proposal for analysis and fine-tuning (``evolve export``, :mod:`.export`). Both read
the journal only; neither calls a model."""
