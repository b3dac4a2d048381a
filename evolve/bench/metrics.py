"""The paper's Table 3 metrics, and ours, computed from bench trial records.

Everything is per (model, variant) over that group's finished trials (one per task); rounds are
numbered from 0, as in the paper ("saturates within one verifier round" is k* = 1). Readings:

TC0  first-round class accuracy: % of trials whose round-0 answer claims the task's gold class
     (``task.gold.tractable_class``). An answer that did not parse claims nothing: wrong.
NM0  first-round numerical pass rate: % of trials whose round-0 Verdict has
     ``numerical.passed`` (probes within 1e-6, and with the ladder on, every ladder rung too,
     which is stricter than the paper's probe-only check). No code, no pass.
O    post-hoc complexity honesty, as in the paper: the audit judges the *paper's final answer*,
     the one the paper's loop would stop at (the first numerically passing round's; the last
     round's when none passed), and O is the % of trials whose audit did not find it dishonest
     (``complexity.honest`` is not False: True, or None when it could not be judged, e.g. no
     code, a wrong answer, an unreadable claim). The paper's audit likewise only lowers O on a
     detected mismatch. n/a when the bench ran without the judge (no audit).
k*   saturation round: the first round index k at which the cumulative numerical pass rate of
     the group reaches 100% (Figure 2 counts a trial first passing at round j as passed for all
     k >= j), i.e. the max over tasks of each trial's first numerically passing round. NM0 = 100%
     gives k* = 0. Undefined (shown as a dash) when some trial never passed.
Time total wall-clock seconds of the group's trials (proposals, verification, judging).
Cost total USD over every round's proposal (litellm's accounting; 0 for ``structural``).

Ours, which the paper's loop does not measure:
NM   % of trials that passed numerically in some round (the paper's omitted final pass rate).
Acc  % of trials accepted by the full verifier (numbers, and with the judge on: complexity
     honesty, class consistency, physical assertions); k*acc: the max over tasks of the
     accepting round (dash unless every trial was accepted).
Cls  % of trials whose final answer (last round's) has ``class.consistent`` True (strict).
Phys % of trials whose final answer has ``physics.passed`` True (strict: checks ran and passed).
n    median over trials of the final answer's largest verified n (0 without a Verdict).
"""

from __future__ import annotations

from statistics import median

from evolve.bench.trial import RefineRound, RefineTrace


def _num_passed(rnd: RefineRound | None) -> bool:
    return bool(rnd is not None and rnd.verdict is not None and rnd.verdict.numerical.passed)


def trial_summary(rec: dict) -> dict:
    """The per-trial facts the metrics are made of (``rec``: a trial record of evolve.bench.protocol)."""
    trace = RefineTrace.from_dict(rec["trace"])
    rounds = trace.rounds
    first = rounds[0] if rounds else None
    last = rounds[-1] if rounds else None
    first_num = next((r.index for r in rounds if _num_passed(r)), None)
    paper_final = next((r for r in rounds if r.index == first_num), last)
    paper_v = paper_final.verdict if paper_final is not None else None
    final_v = last.verdict if last is not None else None
    claimed0 = first.candidate.get("tractable_class") if first else None
    return {
        "model": rec["model"], "task": rec["task"], "variant": rec["variant"],
        "gold_class": rec["gold_class"], "class0": claimed0,
        "tc0": claimed0 is not None and claimed0 == rec["gold_class"],
        "nm0": _num_passed(first), "first_numerical_round": first_num,
        "honest": paper_v.complexity.honest if paper_v else None,
        "accepted_round": trace.accepted_round,
        "class_consistent": final_v.class_.consistent if final_v else None,
        "physics_passed": final_v.physics.passed if final_v else None,
        "largest_n": final_v.numerical.largest_n_verified if final_v else 0,
        "rounds": len(rounds), "seconds": float(rec["wall_seconds"]), "cost_usd": sum(r.cost_usd for r in rounds),
        "judge": bool(rec["settings"]["judge"]), "max_rounds": int(rec["settings"]["rounds"]),
    }


def _pct(flags: list[bool]) -> float:
    return 100.0 * sum(bool(f) for f in flags) / len(flags)


def _saturation(rounds: list[int | None]) -> int | None:
    return None if any(r is None for r in rounds) else max(rounds)


def group_metrics(summaries: list[dict]) -> dict:
    """Table 3's metrics and ours for one (model, variant) group (see the module docstring).

    Percentages are 0..100 floats; undefined values are None. ``nm_by_round[k]`` is the
    cumulative numerical pass rate after round k (the paper's Figure 2).
    """
    s = summaries
    if not s:
        return {"trials": 0}
    judged = all(x["judge"] for x in s)
    max_rounds = max(x["max_rounds"] for x in s)
    firsts = [x["first_numerical_round"] for x in s]
    return {
        "trials": len(s),
        "TC0": _pct([x["tc0"] for x in s]),
        "NM0": _pct([x["nm0"] for x in s]),
        "O": _pct([x["honest"] is not False for x in s]) if judged else None,
        "k_star": _saturation(firsts),
        "time_s": sum(x["seconds"] for x in s),
        "cost_usd": sum(x["cost_usd"] for x in s),
        "NM": _pct([f is not None for f in firsts]),
        "Acc": _pct([x["accepted_round"] is not None for x in s]),
        "k_star_acc": _saturation([x["accepted_round"] for x in s]),
        "Cls": _pct([x["class_consistent"] is True for x in s]) if judged else None,
        "Phys": _pct([x["physics_passed"] is True for x in s]) if judged else None,
        "n_verified": float(median(x["largest_n"] for x in s)),
        "nm_by_round": [_pct([f is not None and f <= k for f in firsts]) for k in range(max_rounds)],
    }


def bench_table(records: list[dict], models: list[str], variants: list[str], tasks: list[str]) -> list[dict]:
    """One row per (model, variant) in the given order: ``model``, ``variant``, ``expected``
    (trials in the grid) and :func:`group_metrics` over the finished records of that group."""
    summaries = [trial_summary(r) for r in records if r["task"] in tasks]
    rows = []
    for m in models:
        for v in variants:
            group = [x for x in summaries if x["model"] == m and x["variant"] == v]
            rows.append({"model": m, "variant": v, "expected": len(tasks), **group_metrics(group)})
    return rows
