"""`evolve perf search`: a tiny fixed search reports judged programs per minute and a stage
breakdown whose parts are real measurements (positive, never more than the time they sit in)."""

import json

from evaluators.profile import StageTime
from evaluators.verdict import Verdict
from evolve.cli import main
from evolve.store.events import EvaluationEvent, decode, encode
from search.records import Evaluation


def test_perf_search_reports_throughput_and_where_the_time_goes(capsys):
    assert main(["perf", "search", "--json", "--tasks", "P01", "--evaluations", "1", "--workers", "1"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert {"judged_per_minute", "judged", "search_wall_s", "tasks", "stages", "evaluation_seconds"} <= set(r)
    assert r["judged"] == 1 and r["tasks"][0]["task"] == "P01"
    assert r["judged_per_minute"] == 60.0 * r["judged"] / r["search_wall_s"] > 0
    stages = r["stages"]
    # every part of the cascade is there: probes, each ladder rung, references, the judge, each assertion
    assert {"probes", "probe_references", "timing_fit", "complexity_audit", "class_analysis", "physics_run",
            "physics:unseen_parameters", "physics:convexity_in_beta", "physics:low_temperature"} <= set(stages)
    assert {f"ladder_call n={n}" for n in (100, 1000, 10000, 100000)} <= set(stages)
    assert {f"reference n={n}" for n in (100, 1000, 10000, 100000)} <= set(stages)
    assert all(s["seconds"] > 0 and s["count"] >= 1 for s in stages.values())
    # the candidate's own seconds are part of the sandbox stage that ran them
    assert stages["probes"]["candidate_s"] <= stages["probes"]["seconds"]
    # stages do not overlap: together they fit in the evaluation, which fits in the search
    assert sum(s["seconds"] for s in stages.values()) <= r["evaluation_seconds"] <= r["search_wall_s"]
    assert r["tasks"][0]["sandbox_start_s"] > 0   # started before the clock, not inside an evaluation
    # P01's gold-like program climbs every rung within budget: nothing was killed at a frontier
    assert r["ladder_killed_at_budget_s"] == 0.0
    assert all(sum(s["notes"].values()) == s["count"] for k, s in stages.items() if k.startswith("reference "))


def test_perf_search_rejects_an_unknown_task(capsys):
    assert main(["perf", "search", "--tasks", "P99"]) == 2
    assert "unknown task" in capsys.readouterr().err


def test_an_evaluations_profile_survives_the_journal_codec():
    profile = (StageTime("probes", 0.25, candidate_s=0.125), StageTime("ladder_call", 20.0, n=4096, draw="cold",
                                                                    note="time", candidate_s=0.0))
    ev = Evaluation("g0s0", Verdict(task="P04"), (1.0, 2.0), 21.5, "host:1", "", profile)
    back = decode(encode(EvaluationEvent(ev))).evaluation
    assert back.profile == profile and back.seconds == 21.5
    record = encode(EvaluationEvent(ev))
    del record["profile"]                       # a run from before profiles
    assert decode(record).evaluation.profile == ()
