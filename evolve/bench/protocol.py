"""The StatMechBench-v0 evaluation protocol (Section 3.3 of the paper) as one resumable run.

For every model x task x variant, one *trial*: the paper's propose-verify-revise loop (the
engine with the ``refine`` strategy, :mod:`evolve.bench.trial`) with the paper's prompts and
feedback (or, with ``prompts="evolve"``, this project's), ``rounds`` rounds at most. Before the
first trial of an LLM model, one preflight call checks that it answers
(:mod:`search.llm.preflight`); a model that does not leaves its trials unfinished with the reason,
without calling it again.
Models are litellm model strings (``openai/gpt-5.4-mini``); ``structural`` is the offline
structural proposer run through the same loop: round 0 is its best plan, every later round
re-proposes with the previous candidate as parent, i.e. a mutation of its plan (the prompt is
built and its id recorded, but the structural proposer does not read it; no LLM is called).

Each finished trial is written atomically to ``<out>/trials/<model>__<task>__<variant>.json``
(model slug: every character outside ``[A-Za-z0-9._-]`` becomes ``_``): the settings, the gold
class, the bench's wall seconds and the refine trace (per round: prompt id, raw response,
parsed candidate, Verdict dict, tokens, cost, seconds, and the prompt messages sent). A trial is finished when its loop ended
by acceptance or by running out of rounds; a provider failure or a verifier crash leaves it
unfinished (its partial record goes to ``<name>.error.json``) and the next run retries it. A
rerun with the same ``out`` skips finished trials; a finished trial run with other settings
(rounds, samples, seed, ladder, judge, timeout) is a conflict, refused before anything runs.
The metrics are in :mod:`evolve.bench.metrics`, the reports in :mod:`evolve.bench.report`.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from evaluators.sandbox import Sandbox
from evaluators.verify import VerifyOptions, probe_set
from evolve.bench.trial import run_refine_trial
from evolve.engine.evaluator_worker import EvaluatorWorker
from evolve.engine.proposer_worker import ProposerWorker
from search.llm.client import load_litellm
from search.llm.config import LLMConfig, ModelSpec
from search.llm.preflight import preflight
from search.prompt_builder import PromptConfig
from search.proposers import ProposerContext, proposer_class
from tasks.base import STATMECHBENCH_CITATION, Task
from tasks.registry import all_tasks

SCHEMA = 1
STRUCTURAL = "structural"
VARIANTS = ("canonical", "paraphrased")
PROMPTS = ("paper", "evolve")


class BenchError(ValueError):
    """Bad input to the bench (unknown model or task, unusable output directory, conflicts)."""


@dataclass(frozen=True)
class BenchSettings:
    """Everything that makes two trials comparable; stored in every trial record."""

    rounds: int = 5          # the paper's k
    samples: int = 5         # parameter samples per probed n
    seed: int = 0            # probe parameters and the structural proposer
    ladder: bool = True
    judge: bool = True
    timeout_s: float = 30.0  # the paper's per-trial (probe run) timeout
    prompts: str = "paper"   # paper (StatMechBench-v0, Appendix A) | evolve (ours: interface, parent, failed checks)

    def __post_init__(self):
        if self.rounds < 1 or self.samples < 1 or self.timeout_s <= 0:
            raise BenchError("rounds and samples must be at least 1 and the timeout positive")
        if self.prompts not in PROMPTS:
            raise BenchError(f"prompts must be one of {', '.join(PROMPTS)}, got {self.prompts!r}")

    def verify_options(self) -> VerifyOptions:
        return VerifyOptions(seed=self.seed, samples=self.samples, timeout_s=self.timeout_s,
                             ladder=self.ladder, judge=self.judge)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Trial:
    model: str
    task: Task
    variant: str

    @property
    def name(self) -> str:
        return f"{model_slug(self.model)}__{self.task.id}__{self.variant}"


@dataclass
class BenchResult:
    records: list = field(default_factory=list)   # finished trial records, in grid order
    ran: int = 0
    skipped: int = 0
    unfinished: list = field(default_factory=list)  # (trial name, reason)


def default_task_ids() -> list[str]:
    """The StatMechBench-v0 tasks (P01-P06): catalogued tasks carrying the benchmark's citation."""
    return [t.id for t in all_tasks() if t.citation == STATMECHBENCH_CITATION]


def model_slug(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", model)


def check_model(model: str) -> str | None:
    """None when ``model`` is ``structural`` or a model string litellm can route, else why not."""
    if model == STRUCTURAL:
        return None
    if not model or model != model.strip() or any(c.isspace() for c in model):
        return f"model {model!r} is not a litellm model string (e.g. openai/gpt-5.4-mini) or '{STRUCTURAL}'"
    try:
        name, _provider, *_ = load_litellm().get_llm_provider(model)
    except Exception:
        name = ""
    if not name:
        return (f"model {model!r}: litellm knows no provider for it; write provider/name "
                f"(e.g. openai/gpt-5.4-mini, anthropic/claude-haiku-4-5) or '{STRUCTURAL}'")
    return None


class LLMSettings:
    """Per-model settings from an ``LLMConfig``-format mapping (``models`` plus retries, timeouts,
    backoff); also accepted: a run config, whose ``llm`` section is used. Models not listed get
    ``ModelSpec(name)`` with the common settings. Strings in exponent notation become numbers
    (YAML 1.1 reads ``3e-6``, without a dot, as a string)."""

    def __init__(self, raw: dict | None = None):
        d = dict(raw or {})
        if "llm" in d and "models" not in d:
            if not isinstance(d["llm"] or {}, dict):
                raise BenchError("llm config: the `llm` section must be a mapping")
            d = dict(d["llm"] or {})
        models = d.pop("models", None) or []
        if not isinstance(models, list):
            raise BenchError("llm config: `models` must be a list")
        d = _numbers(d)
        models = [_numbers(m) if isinstance(m, dict) else m for m in models]
        try:
            self.specs = {s.name: s for s in (ModelSpec.from_dict(m) for m in models)}
            LLMConfig.from_dict({**d, "models": ["placeholder/model"]})  # the common fields are valid
        except (TypeError, ValueError) as exc:
            raise BenchError(f"llm config: {exc}") from None
        self.common = d

    def config_for(self, model: str) -> LLMConfig:
        return LLMConfig(models=(self.specs.get(model) or ModelSpec(model),), **self.common)


def _numbers(d: dict) -> dict:
    return {k: float(v) if isinstance(v, str) and _EXPONENT.match(v) else v for k, v in d.items()}


_EXPONENT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+$")


def prepare_out(out: str | os.PathLike) -> Path:
    """Create ``out/trials`` and prove it writable (BenchError otherwise)."""
    out = Path(out)
    try:
        (out / "trials").mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out / "trials", prefix=".probe-"):
            pass
    except OSError as exc:
        raise BenchError(f"output directory {str(out)!r} is not writable: {exc.strerror or exc}") from None
    return out


def write_json_atomic(path: Path, data: dict) -> None:
    """Write ``data`` to ``path`` so that the file is either absent/old or complete."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, default=_plain)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _plain(x):
    if hasattr(x, "item"):  # numpy scalars
        return x.item()
    raise TypeError(f"{type(x).__name__} is not JSON serialisable")


def load_finished(path: Path, trial: Trial, settings: BenchSettings) -> dict | None:
    """The finished record at ``path`` (None when absent or unreadable); BenchError when it was
    run with other settings or belongs to another trial."""
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get("schema") != SCHEMA:
        return None
    if (rec.get("model"), rec.get("task"), rec.get("variant")) != (trial.model, trial.task.id, trial.variant):
        raise BenchError(f"{path} holds trial {rec.get('model')}/{rec.get('task')}/{rec.get('variant')}, "
                         f"not {trial.model}/{trial.task.id}/{trial.variant} (two models share a file name?)")
    stored = {"prompts": "paper", **(rec.get("settings") or {})}   # records from before --prompts used the paper's
    if stored != settings.to_dict():
        diff = ", ".join(f"{k}={stored.get(k)!r}" for k, v in settings.to_dict().items() if stored.get(k) != v)
        raise BenchError(f"{path.parent.parent} holds trials run with other settings ({diff}); "
                         "rerun with those settings or use another --out")
    return rec


def run_trial(trial: Trial, settings: BenchSettings, sandbox, llm: LLMSettings, evaluator=None) -> dict:
    """One trial of the paper's loop; the record (finished or not, see ``record["finished"]``).
    ``evaluator`` replaces the verifier (anything with ``evaluate(candidate) -> Evaluation``)."""
    name = STRUCTURAL if trial.model == STRUCTURAL else "llm"
    context = ProposerContext(seed=settings.seed, variant=trial.variant, prompts=PromptConfig(),
                              llm=None if name == STRUCTURAL else llm.config_for(trial.model))
    proposer = ProposerWorker(trial.task.id, {name: proposer_class(name).Options(weight=1.0)}, context)
    evaluator = evaluator or EvaluatorWorker(trial.task.id, settings.verify_options(), sandbox=sandbox)
    started = time.time()
    t0 = time.perf_counter()
    trace = run_refine_trial(trial.task.id, trial.variant, settings.rounds, proposer, evaluator, seed=settings.seed,
                             prompts=settings.prompts)
    for r in trace.rounds:  # the offline proposer names no model: the trial's model column does
        r.model = r.model or trial.model
    return {"schema": SCHEMA, "model": trial.model, "task": trial.task.id, "variant": trial.variant,
            "gold_class": trial.task.gold.tractable_class, "gold_complexity": trial.task.gold.complexity,
            "settings": settings.to_dict(), "finished": trace.finished,
            "wall_seconds": time.perf_counter() - t0, "started": started, "ended": time.time(),
            "trace": trace.to_dict()}


def preflight_failure(config: LLMConfig) -> str | None:
    """Why the model of ``config`` failed its preflight call (None when it answered or the check is off)."""
    if not config.preflight:
        return None
    bad = [r for r in preflight(config) if not r.ok]
    return f"preflight failed: {bad[0].error}" if bad else None


def _warm_up(tasks: list[Task], settings: BenchSettings):
    """A started sandbox, and the probes' exact values cached, so that the first trial of each
    task does not pay for them in its time (ladder oracle values are still cached on first use)."""
    sandbox = Sandbox()
    sandbox.run("def Z_efficient(params, n):\n    return 1.0\n", [])
    for task in {t.id: t for t in tasks}.values():
        probe_set(task, settings.seed, settings.samples)
    return sandbox


def describe(rec: dict) -> str:
    """One progress line's tail for a trial record."""
    tr = rec["trace"]
    rounds, cost = len(tr["rounds"]), tr["cost_usd"]
    outcome = f"accepted at round {tr['accepted_round']}" if tr["accepted"] else tr["stopped"]
    return f"{outcome} ({rounds} round{'s' * (rounds != 1)}, {rec['wall_seconds']:.1f} s, ${cost:.4f})"


def run_bench(models: list[str], tasks: list[Task], variants: list[str], settings: BenchSettings,
              out: str | os.PathLike, llm: LLMSettings | None = None, log=print, evaluator=None,
              sandbox=None) -> BenchResult:
    """Run (or resume) the grid; every finished record, in model, task, variant order."""
    if not models or not tasks or not variants:
        raise BenchError("models, tasks and variants must each name at least one")
    slugs = {}
    for m in models:
        if slugs.setdefault(model_slug(m), m) != m:
            raise BenchError(f"models {slugs[model_slug(m)]!r} and {m!r} would share trial files")
    out, llm = prepare_out(out), llm or LLMSettings()
    grid = [Trial(m, t, v) for m in models for t in tasks for v in variants]
    done = {tr.name: load_finished(out / "trials" / f"{tr.name}.json", tr, settings) for tr in grid}
    result, own_sandbox = BenchResult(), sandbox is None
    checked: dict[str, str | None] = {}   # model -> why its preflight failed (None: it answered)
    try:
        for i, trial in enumerate(grid, 1):
            head = f"[{i}/{len(grid)}] {trial.model} {trial.task.id} {trial.variant}:"
            rec = done[trial.name]
            if rec is None and trial.model != STRUCTURAL and trial.model not in checked:
                checked[trial.model] = preflight_failure(llm.config_for(trial.model))
                if checked[trial.model]:
                    log(f"{trial.model}: {checked[trial.model]}")
            if rec is not None:
                result.skipped += 1
                log(f"{head} finished earlier, skipped")
            elif checked.get(trial.model):
                result.unfinished.append((trial.name, checked[trial.model]))
                log(f"{head} NOT RUN: {checked[trial.model]}")
                continue
            else:
                if sandbox is None:
                    sandbox = _warm_up([t.task for t in grid if done[t.name] is None], settings)
                rec = run_trial(trial, settings, sandbox, llm, evaluator)
                result.ran += 1
                path = out / "trials" / f"{trial.name}.json"
                if rec["finished"]:
                    write_json_atomic(path, rec)
                    path.with_suffix(".error.json").unlink(missing_ok=True)
                    log(f"{head} {describe(rec)}")
                else:
                    write_json_atomic(path.with_suffix(".error.json"), rec)
                    result.unfinished.append((trial.name, rec["trace"]["stopped"]))
                    log(f"{head} NOT FINISHED, retried on the next run: {describe(rec)}")
                    continue
            result.records.append(rec)
    finally:
        if own_sandbox and sandbox is not None:
            sandbox.close()
    return result
