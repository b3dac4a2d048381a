"""Reports: one self-contained HTML file per run (``evolve report RUN_DIR``) or per bench output
directory (``evolve report --bench DIR``), with plotly figures and plotly.js inlined.

- :mod:`.data`: a run's journal events, snapshot and config, indexed by program, with times;
- :mod:`.timeline`: the run as series over its evaluations, and why each program was rejected;
- :mod:`.lineage_tree`: which programs get panels (the best and their ancestors) and their layout;
- :mod:`.figures`: one module per figure (progress, verdicts, archive, tree, lineage, models, negative);
- :mod:`.programs`: one program's panel (code, diff, Verdict, derivation, prompt, response);
- :mod:`.page`: the HTML page around the sections;
- :mod:`.run_report`, :mod:`.bench_report`: the two reports.
"""
