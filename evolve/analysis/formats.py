"""The output formats of ``evolve export`` (:mod:`evolve.analysis.export`), in a module of their own
so that the command line offers them (``--format``) without importing the exporter."""

FORMATS = ("jsonl",)
