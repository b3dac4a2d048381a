"""CPU seconds of one log_Z call of the structural proposer's P04 program (planar_pfaffian template),
a baseline git revision's program against this tree's, in one process, on the ladder's own draws
(seed 0: typical and cold) and on the cold draw moved to beta |J| = 13 and 20 (the ground-state line).

    .venv/bin/python tests/benchmarks/p04_cold_pfaffian.py [--baseline REV] [sizes ...]

The baseline's program is rendered by a subprocess on ``git archive REV`` (its templates, its
proposer), so both programs are the text a search would judge."""

from __future__ import annotations

import argparse
import time

from evaluators.ladder import ladder_draws
from tasks.registry import get_task
from baseline_programs import log_z_of, rendered, rendered_at  # a script: its own folder is on sys.path

RENDER = ("from tasks.registry import get_task\n"
          "from search.structural.proposer import StructuralProposer, make_plan, assemble\n"
          "task = get_task('P04')\n"
          "print(assemble(task, make_plan(StructuralProposer(0).view(task), 'planar_pfaffian', {})))\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="main")
    parser.add_argument("sizes", nargs="*", type=int, default=[256, 1024, 4096])
    args = parser.parse_args()
    programs = {"baseline": log_z_of(rendered_at(args.baseline, RENDER), "baseline"),
                "this tree": log_z_of(rendered(RENDER), "this tree")}
    task = get_task("P04")
    print(f"{'n':>5} {'draw':9} {'baseline s':>10} {'this tree s':>11} {'ratio':>6} {'rel diff':>8}")
    for n in args.sizes:
        draws = ladder_draws(task, n, 0)
        cold = next(d for d in draws if d.kind == "cold")
        beta_j = float(cold.note.split("=")[-1])          # "cold: beta = 9.892, beta*|J| = 9.89"
        cases = [(d.kind, d.params) for d in draws]
        cases += [(f"bJ = {t:g}", task.with_beta(cold.params, cold.params["beta"] * t / beta_j)) for t in (13.0, 20.0)]
        for label, params in cases:
            seconds, values = [], []
            for log_z in programs.values():
                start = time.process_time()
                values.append(log_z(params, n))
                seconds.append(time.process_time() - start)
            print(f"{n:5d} {label:9} {seconds[0]:10.2f} {seconds[1]:11.2f} {seconds[0] / seconds[1]:6.2f} "
                  f"{abs(values[0] - values[1]) / abs(values[0]):8.1e}", flush=True)


if __name__ == "__main__":
    main()
