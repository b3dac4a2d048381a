"""The pictures of a report in docs/reports.md: a real search (islands on Ray, the scripted model of
doubles.scripted_scenario on P01 mixed with the structural proposer, negative prompting on), its
report, and two screenshots taken by headless Chromium.

    cd tests && ../.venv/bin/python -m benchmarks.report_screenshot --out ../docs
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
from pathlib import Path

from browser import Browser
from doubles.scripted_scenario import rules
from doubles.scripted_server import ScriptedServer
from evolve.config import config_from_dict
from evolve.engine.progress import Progress
from evolve.engine.runtime import drive
from evolve.report.run_report import write_run_report
from evolve.store.run_store import RunStore

KEY_ENV = "SCRIPTED_TEST_KEY"


def search(root: Path, seed: int) -> Path:
    os.environ.setdefault(KEY_ENV, "sk-scripted-test")
    with ScriptedServer(rules(seed)) as server:
        cfg = config_from_dict({
            "task": "P01", "seed": seed, "strategy": "islands",
            "budgets": {"proposals": 24, "evaluations": 24, "wall_time_s": 900},
            "proposers": {"llm": 1.0, "structural": 0.2},
            "evaluator": {"samples": 2, "rung_timeout_s": 5, "ladder_total_s": 20},
            "strategies": {"islands": {"islands": 2, "migration_interval": 8}},
            "prompts": {"negative": {"enabled": True, "start_after_accepted": None, "start_after_failures": 1}},
            "ray": {"num_evaluators": 2, "num_proposers": 1, "batch_size": 4, "evaluator_cpus": 0.5},
            "llm": {"models": [{"name": "openai/scripted", "api_base": server.base_url, "api_key_env": KEY_ENV,
                                "input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}],
                    "retries": 0, "request_timeout_s": 30}})
        store = RunStore.create(root, cfg.to_dict(), cfg.task)
        try:
            drive(cfg, store, progress=Progress(cfg.budgets, stream=io.StringIO()))
        finally:
            store.close()
    return store.path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="../docs")
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    run_dir = search(Path(tempfile.mkdtemp(prefix="report-shot-")), args.seed)
    written = write_run_report(run_dir)
    print(f"run {run_dir}, report {written.path}")
    with Browser(1300, 1000) as b:
        b.open(written.path)
        b.screenshot(out / "report.png", 0, b.top_of("verdicts"))
        # the best program a model rewrote from a parent: its panel shows a diff, a prompt and a response
        shown = b.js("return JSON.parse(document.getElementById('report-data').textContent).inlined_programs;")
        def has(p, *words):
            return b.js("var t = document.getElementById(arguments[0]).textContent;"
                        "return arguments[1].every(function (w) { return t.indexOf(w) >= 0; });", f"prog-{p}", list(words))
        pid = next((p for p in shown if has(p, "Diff from parent", "Response")), None) or \
            next(p for p in shown if has(p, "Diff from parent"))
        b.js("openProgram(arguments[0]); var d = document.getElementById(arguments[0]).querySelectorAll('details');"
             "for (var i = 0; i < d.length; i++) { if (/^(Diff|Verdict|Prompt)/.test(d[i].firstChild.textContent)) "
             "{ d[i].open = true; } } window.scrollTo(0, 0);", f"prog-{pid}")
        top = b.top_of("lineage")
        b.screenshot(out / "report-lineage.png", top, min(top + 1500, b.top_of("models")))
        errors = b.errors()
    print(f"wrote {out / 'report.png'} and {out / 'report-lineage.png'}; script errors: {len(errors)}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
