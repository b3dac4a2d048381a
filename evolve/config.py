"""One typed config tree for a search run, loaded from YAML.

Every key is a dataclass field below and every field is used by the runtime; an unknown key,
a wrong type or an out-of-range value is a ``ConfigError`` naming the key's full path
(``budgets.proposals``). ``configs/example.yaml`` shows every key with its default.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

import yaml


class ConfigError(ValueError):
    """A config problem; the message names the key."""


@dataclass
class Budgets:
    proposals: int = 64                  # candidates proposed (parse failures included)
    evaluations: int = 64                # candidates judged by the evaluators
    wall_time_s: float = 300.0           # the run stops starting new work after this
    tokens: int | None = None            # LLM tokens (prompt + completion), None = unlimited
    usd: float | None = None             # LLM cost in USD, None = unlimited
    stop_when_accepted: bool = False     # end the run at the first accepted program


@dataclass
class Proposers:
    structural: float = 1.0              # mixing weight of the offline structural proposer
    llm: float = 0.0                     # mixing weight of the LLM proposer (needs the `llm` section)


@dataclass
class Evaluator:
    samples: int = 3                     # parameter samples per probe size
    timeout_s: float = 30.0              # probe run wall clock
    memory_mb: int = 2048                # address-space limit per sandbox run
    ladder: bool = True                  # climb the promotion ladder
    rung_timeout_s: float = 20.0
    ladder_total_s: float = 60.0
    judge: bool = True                   # complexity, class and physics checks


@dataclass
class RayConfig:
    address: str | None = None           # None: embedded local cluster; "auto" or "ray://host:port" to join one
    num_evaluators: int = 2              # evaluator actors (CPU bound, one sandbox each)
    num_proposers: int = 2               # proposer actors (I/O bound for LLMs)
    evaluator_cpus: float = 1.0          # CPUs reserved per evaluator actor
    batch_size: int = 4                  # proposals per generation (evaluated in parallel)


@dataclass
class RunConfig:
    root: str = "runs"                   # where run directories are created
    checkpoint_interval: int = 1         # generations between snapshots


@dataclass
class Database:
    islands: int = 2
    selection: str = "softmax"           # softmax | power_law | weighted | uniform
    temperature: float = 0.1
    migration_interval: int = 16         # evaluations between ring migrations
    reset_interval: int = 0              # evaluations between resets of the weaker half (0 = never)
    stagnation_patience: int = 32        # evaluations without improvement before an island is reset
    max_per_cluster: int = 1
    num_inspirations: int = 2


@dataclass
class TreeConfig:
    exploration_c: float = 1.2           # c of the flat PUCT rule (strategy: tree)
    fresh_drafts: bool = True            # the root competes in PUCT: slots may still draft programs from scratch


@dataclass
class Tune:
    params: dict = field(default_factory=dict)   # "section.key": {low, high, log} or {choices: [...]} (evolve tune)
    objective: str = "evaluations_to_first_accept"   # evaluations_to_first_accept (minimised) | best_score (maximised)
    parallel_trials: int = 2             # trials running at once, each a Ray task (evolve tune --parallel overrides)


@dataclass
class Config:
    task: str = "P04"
    task_files: list[str] = field(default_factory=list)  # user task files (Python, defining TASK); relative to the config file
    variant: str = "canonical"           # canonical | paraphrased task description for LLM prompts
    seed: int = 0
    strategy: str = "islands"            # islands | tree (ERA-style flat PUCT over all judged programs)
    budgets: Budgets = field(default_factory=Budgets)
    proposers: Proposers = field(default_factory=Proposers)
    evaluator: Evaluator = field(default_factory=Evaluator)
    database: Database = field(default_factory=Database)
    ray: RayConfig = field(default_factory=RayConfig)
    run: RunConfig = field(default_factory=RunConfig)
    tree: TreeConfig = field(default_factory=TreeConfig)
    tune: Tune = field(default_factory=Tune)
    llm: dict | None = None              # search.llm_config.LLMConfig fields (models, selection, retries, ...)
    prompts: dict | None = None          # search.prompt_builder.PromptConfig fields (hints, negative, ...)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


STRATEGIES = ("islands", "tree")
OBJECTIVES = ("evaluations_to_first_accept", "best_score")
SELECTIONS = ("softmax", "power_law", "weighted", "uniform")

# (path, predicate, explanation) checked after types
_RANGES = [
    ("variant", lambda c: c.variant in ("canonical", "paraphrased"), "must be canonical or paraphrased"),
    ("strategy", lambda c: c.strategy in STRATEGIES, f"must be one of {', '.join(STRATEGIES)}"),
    ("budgets.proposals", lambda c: c.budgets.proposals >= 1, "must be at least 1"),
    ("budgets.evaluations", lambda c: c.budgets.evaluations >= 1, "must be at least 1"),
    ("budgets.wall_time_s", lambda c: c.budgets.wall_time_s > 0, "must be positive"),
    ("budgets.tokens", lambda c: c.budgets.tokens is None or c.budgets.tokens > 0, "must be positive"),
    ("budgets.usd", lambda c: c.budgets.usd is None or c.budgets.usd > 0, "must be positive"),
    ("proposers", lambda c: c.proposers.structural >= 0 and c.proposers.llm >= 0
     and c.proposers.structural + c.proposers.llm > 0, "weights must be >= 0 and not all zero"),
    ("proposers.llm", lambda c: c.proposers.llm == 0 or c.llm is not None, "is set but there is no `llm` section"),
    ("evaluator.samples", lambda c: 1 <= c.evaluator.samples <= 50, "must be in [1, 50]"),
    ("evaluator.timeout_s", lambda c: c.evaluator.timeout_s > 0, "must be positive"),
    ("evaluator.memory_mb", lambda c: c.evaluator.memory_mb >= 256, "must be at least 256"),
    ("evaluator.rung_timeout_s", lambda c: c.evaluator.rung_timeout_s > 0, "must be positive"),
    ("evaluator.ladder_total_s", lambda c: c.evaluator.ladder_total_s > 0, "must be positive"),
    ("database.islands", lambda c: 1 <= c.database.islands <= 64, "must be in [1, 64]"),
    ("database.selection", lambda c: c.database.selection in SELECTIONS, f"must be one of {', '.join(SELECTIONS)}"),
    ("database.temperature", lambda c: c.database.temperature > 0, "must be positive"),
    ("database.migration_interval", lambda c: c.database.migration_interval >= 0, "must be >= 0"),
    ("database.reset_interval", lambda c: c.database.reset_interval >= 0, "must be >= 0"),
    ("database.stagnation_patience", lambda c: c.database.stagnation_patience >= 1, "must be at least 1"),
    ("database.max_per_cluster", lambda c: c.database.max_per_cluster >= 1, "must be at least 1"),
    ("database.num_inspirations", lambda c: c.database.num_inspirations >= 0, "must be >= 0"),
    ("ray.num_evaluators", lambda c: c.ray.num_evaluators >= 1, "must be at least 1"),
    ("ray.num_proposers", lambda c: c.ray.num_proposers >= 1, "must be at least 1"),
    ("ray.evaluator_cpus", lambda c: c.ray.evaluator_cpus > 0, "must be positive"),
    ("ray.batch_size", lambda c: c.ray.batch_size >= 1, "must be at least 1"),
    ("run.checkpoint_interval", lambda c: c.run.checkpoint_interval >= 1, "must be at least 1"),
    ("tree.exploration_c", lambda c: c.tree.exploration_c >= 0, "must be >= 0"),
    ("tune.objective", lambda c: c.tune.objective in OBJECTIVES, f"must be one of {', '.join(OBJECTIVES)}"),
    ("tune.parallel_trials", lambda c: c.tune.parallel_trials >= 1, "must be at least 1"),
]


def load_config(path: str | Path, overrides: dict | None = None) -> Config:
    """Read, validate and return the config at ``path`` (YAML)."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys")
    return config_from_dict({**raw, **(overrides or {})}, base_dir=path.parent)


def config_from_dict(raw: dict, base_dir: str | Path | None = None) -> Config:
    """Validate ``raw``; relative ``task_files`` are taken from ``base_dir`` (default: the working
    directory) and stored absolute, and every one is registered (tasks.registry) before ``task``
    is looked up."""
    cfg = _build(Config, raw, "")
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    cfg.task_files = [str((base / Path(p).expanduser()).resolve()) for p in cfg.task_files]
    for key, ok, why in _RANGES:
        if not ok(cfg):
            raise ConfigError(f"config key `{key}` {why}")
    _check_sections(cfg)
    return cfg


def _check_sections(cfg: Config) -> None:
    """Sections owned by other modules are validated by those modules' own parsers."""
    from tasks.registry import TaskFileError, get_task, register_task_file

    for i, path in enumerate(cfg.task_files):
        try:
            register_task_file(path)
        except TaskFileError as exc:
            raise ConfigError(f"config key `task_files[{i}]`: {exc}") from None
    try:
        get_task(cfg.task)
    except KeyError as exc:
        raise ConfigError(f"config key `task`: {exc.args[0]}") from None
    if cfg.tune.params:
        from evolve.tune import parse_space

        try:
            parse_space(cfg.tune.params, cfg.to_dict())
        except ValueError as exc:
            raise ConfigError(f"config section `tune.params`: {exc}") from None
    if cfg.llm is not None:
        from search.llm_config import LLMConfig

        try:
            LLMConfig.from_dict(cfg.llm)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"config section `llm`: {exc}") from None
    if cfg.prompts is not None:
        from search.prompt_builder import PromptConfig

        try:
            PromptConfig.from_dict(cfg.prompts)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"config section `prompts`: {exc}") from None


def _build(cls, raw, path: str):
    if not isinstance(raw, dict):
        raise ConfigError(f"config key `{path or 'top level'}` must be a mapping, got {type(raw).__name__}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(raw) - names)
    if unknown:
        where = f"`{path}`" if path else "the top level"
        raise ConfigError(f"unknown config key `{_join(path, unknown[0])}` in {where}; known keys: {', '.join(sorted(names))}")
    kwargs = {}
    for name, value in raw.items():
        kwargs[name] = _coerce(hints[name], value, _join(path, name))
    return cls(**kwargs)


def _coerce(tp, value, path: str):
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(arg, value, path)
            except ConfigError:
                pass
        raise ConfigError(f"config key `{path}` has the wrong type: {value!r}")
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, path)
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif tp is str:
        if isinstance(value, str):
            return value
    elif tp is dict or origin is dict:
        if isinstance(value, dict):
            return value
    elif origin is list:
        if isinstance(value, list):
            (item,) = typing.get_args(tp)
            return [_coerce(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
    raise ConfigError(f"config key `{path}` must be {getattr(tp, '__name__', tp)}, got {value!r}")


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
