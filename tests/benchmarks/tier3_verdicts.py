"""What the offline derivation proposer's answers score on the Tier-3 tasks (docs/tier3.md):

    PYTHONPATH=. python -m tests.benchmarks.tier3_verdicts [TASK ...]      (default T22 T23 T24 T25)

For each task: the derivation from the task's formula, then the full verification cascade (probes, every
ladder rung within its budget) of its exact program and of each answer (bounds, approximation), printing
the verdict, the largest n checked exactly, and for an answer its gap or error per spin, with wall time.
"""

from __future__ import annotations

import sys
import time

from evaluators.bounds_check import describe
from evaluators.sandbox import Sandbox
from evaluators.verify import verify
from search.derivation import derive
from search.derivation.proposer import to_answer_candidate, to_candidate
from tasks.registry import get_task


def main(task_ids) -> None:
    sandbox = Sandbox()
    try:
        for tid in task_ids:
            task = get_task(tid)
            t0 = time.perf_counter()
            d = derive(task, sandbox=sandbox)
            print(f"\n{tid}: chain {d.chain} ({d.tractable_class}, {d.complexity_O}); derived in "
                  f"{time.perf_counter() - t0:.1f} s")
            cands = [("exact", to_candidate(d, "x", tid))] if d.program else []
            cands += [(a.kind, to_answer_candidate(d, a, a.kind, tid)) for a in d.answers]
            for kind, cand in cands:
                t0 = time.perf_counter()
                v = verify(task, cand.to_submission(), sandbox=sandbox)
                extra = f"; {describe(v.answer)}" if v.answer is not None else ""
                print(f"  {kind:13s} {v.verdict:7s} largest n verified {v.numerical.largest_n_verified}"
                      f"{extra} ({time.perf_counter() - t0:.0f} s)")
                if v.verdict != "accept":
                    print("    " + v.feedback.replace("\n", "\n    ")[:600])
    finally:
        sandbox.close()


if __name__ == "__main__":
    main(sys.argv[1:] or ["T22", "T23", "T24", "T25"])
