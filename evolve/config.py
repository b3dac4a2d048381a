"""One typed config tree for a search run, loaded from YAML.

The run's own sections (budgets, evaluator, ray, run, tune) are dataclasses here; the sections of
components are those components' own dataclasses, so a default lives in exactly one place:

- ``proposers:``  name -> that proposer's ``Options`` (search.proposers registry; each has a ``weight``,
  the proposer's share of the slots); a bare number is the weight. Without the section the default
  mix runs (the structural and derivation proposers); a section lists the mix, and the proposers it
  does not name are off;
- ``strategies:`` name -> that strategy's ``Options`` (search.strategies registry); ``strategy:``
  names the one that runs;
- ``llm:`` :class:`search.llm.config.LLMConfig` (models to call, or null), ``prompts:``
  :class:`search.prompt_builder.PromptConfig`.

Unknown keys, wrong types and out-of-range values are a ``ConfigError`` naming the key's full path
(``strategies.islands.temperature``): booleans are not numbers, integers fit in 64 bits, floats
are finite, strings hold no NUL character, and ``seed`` is in [0, 2**63). A config file must name
its ``task``: an empty file is refused rather than silently running the default search. ``configs/example.yaml`` shows every key with its default.
Configs written before these sections existed still load: top-level ``database:`` and ``tree:``
are read as ``strategies.islands`` and ``strategies.tree`` (tuned keys such as
``database.temperature`` likewise).
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from evaluators.checks.judgement import JudgeBudget
from evaluators.ladder import LadderBudget
from evaluators.oracles.contraction.executor_rates import ExecutorRates
from evaluators.verify import VerifyOptions
from evolve.tuning.space import parse_space
from search.llm.config import LLMConfig, refuse_key_fields
from search.prompt_builder import PromptConfig
from search.proposers import proposer_class, proposer_names
from search.strategies import strategy_class, strategy_names
from tasks.registry import TaskFileError, get_task, register_task_file


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
class Evaluator:
    samples: int = 3                     # parameter samples per probe size
    timeout_s: float = 30.0              # probe run wall clock
    memory_mb: int = 2048                # address-space limit per sandbox run
    ladder: bool = True                  # climb the promotion ladder
    rung_timeout_s: float = 20.0
    ladder_total_s: float = 60.0
    ladder_max_n: int | None = None      # climb no size above this (quick runs); None: the task's whole ladder
    judge: bool = True                   # complexity, class and physics checks

    def verify_options(self, seed: int, executor_rates: ExecutorRates | None = None) -> VerifyOptions:
        """The verifier's options; ``executor_rates``: the run's recorded rates (``RunStore.executor_rates``)."""
        return VerifyOptions(seed=seed, samples=self.samples, timeout_s=self.timeout_s, memory_mb=self.memory_mb,
                             ladder=self.ladder, judge=self.judge, executor_rates=executor_rates,
                             ladder_budget=LadderBudget(rung_timeout_s=self.rung_timeout_s, memory_mb=self.memory_mb,
                                                        total_s=self.ladder_total_s, max_n=self.ladder_max_n),
                             judge_budget=JudgeBudget(memory_mb=self.memory_mb))


@dataclass
class RayConfig:
    address: str | None = None           # None: embedded local cluster; "auto" or "host:port" to join one
    num_evaluators: int = 2              # evaluator actors (CPU bound, one sandbox each)
    num_proposers: int = 2               # proposer actors (I/O bound for LLMs)
    evaluator_cpus: float = 1.0          # CPUs reserved per evaluator actor
    batch_size: int = 4                  # proposals per generation (evaluated in parallel)


@dataclass
class RunConfig:
    root: str = "runs"                   # where run directories are created
    checkpoint_interval: int = 1         # generations between snapshots
    overlap_generations: bool = True     # launch generation g+1 while g's evaluations finish (islands, tree)


@dataclass
class Tune:
    params: dict = field(default_factory=dict)   # "section.key": {low, high, log} or {choices: [...]} (evolve tune)
    objective: str = "evaluations_to_first_accept"   # evaluations_to_first_accept (minimised) | best_score (maximised)
    parallel_trials: int = 2             # trials running at once, each a Ray task (evolve tune --parallel overrides)


def _default_proposers() -> dict:
    """Every registered proposer with its default options (only the structural one has a weight)."""
    return {name: proposer_class(name).Options() for name in proposer_names()}


def _default_strategies() -> dict:
    return {name: strategy_class(name).Options() for name in strategy_names()}


@dataclass
class Config:
    task: str = "P04"
    task_files: list[str] = field(default_factory=list)  # user task files (Python, defining TASK); relative to the config file
    variant: str = "canonical"           # canonical | paraphrased task description for LLM prompts
    seed: int = 0
    strategy: str = "islands"            # a registered strategy (search.strategies): islands | tree | refine
    budgets: Budgets = field(default_factory=Budgets)
    proposers: dict = field(default_factory=_default_proposers)     # name -> proposer Options
    strategies: dict = field(default_factory=_default_strategies)   # name -> strategy Options
    evaluator: Evaluator = field(default_factory=Evaluator)
    ray: RayConfig = field(default_factory=RayConfig)
    run: RunConfig = field(default_factory=RunConfig)
    tune: Tune = field(default_factory=Tune)
    llm: LLMConfig | None = None
    prompts: PromptConfig = field(default_factory=PromptConfig)

    @property
    def strategy_options(self):
        """The options of the strategy that runs."""
        return self.strategies[self.strategy]

    def weights(self) -> dict[str, float]:
        """Proposer name -> mixing weight, in config order."""
        return {name: float(options.weight) for name, options in self.proposers.items()}

    def to_dict(self) -> dict:
        """Plain data (lists, not tuples), ready for YAML; ``config_from_dict`` reads it back."""
        return _plain(dataclasses.asdict(self))


STRATEGY_SECTIONS_BEFORE = {"database": "islands", "tree": "tree"}   # top-level sections of older configs
OBJECTIVES = ("evaluations_to_first_accept", "best_score")

# (path, predicate, explanation) checked after types
_RANGES = [
    ("variant", lambda c: c.variant in ("canonical", "paraphrased"), "must be canonical or paraphrased"),
    ("seed", lambda c: 0 <= c.seed < 2 ** 63, "must be in [0, 2**63)"),
    ("budgets.proposals", lambda c: c.budgets.proposals >= 1, "must be at least 1"),
    ("budgets.evaluations", lambda c: c.budgets.evaluations >= 1, "must be at least 1"),
    ("budgets.wall_time_s", lambda c: c.budgets.wall_time_s > 0, "must be positive"),
    ("budgets.tokens", lambda c: c.budgets.tokens is None or c.budgets.tokens > 0, "must be positive"),
    ("budgets.usd", lambda c: c.budgets.usd is None or c.budgets.usd > 0, "must be positive"),
    ("proposers", lambda c: all(w >= 0 for w in c.weights().values()) and sum(c.weights().values()) > 0,
     "weights must be >= 0 and not all zero"),
    ("evaluator.samples", lambda c: 1 <= c.evaluator.samples <= 50, "must be in [1, 50]"),
    ("evaluator.timeout_s", lambda c: c.evaluator.timeout_s > 0, "must be positive"),
    ("evaluator.memory_mb", lambda c: c.evaluator.memory_mb >= 256, "must be at least 256"),
    ("evaluator.rung_timeout_s", lambda c: c.evaluator.rung_timeout_s > 0, "must be positive"),
    ("evaluator.ladder_total_s", lambda c: c.evaluator.ladder_total_s > 0, "must be positive"),
    ("evaluator.ladder_max_n", lambda c: c.evaluator.ladder_max_n is None or c.evaluator.ladder_max_n > 0,
     "must be a positive spin count or null"),
    ("ray.num_evaluators", lambda c: c.ray.num_evaluators >= 1, "must be at least 1"),
    ("ray.num_proposers", lambda c: c.ray.num_proposers >= 1, "must be at least 1"),
    ("ray.evaluator_cpus", lambda c: c.ray.evaluator_cpus > 0, "must be positive"),
    ("ray.batch_size", lambda c: c.ray.batch_size >= 1, "must be at least 1"),
    ("run.checkpoint_interval", lambda c: c.run.checkpoint_interval >= 1, "must be at least 1"),
    ("tune.objective", lambda c: c.tune.objective in OBJECTIVES, f"must be one of {', '.join(OBJECTIVES)}"),
    ("tune.parallel_trials", lambda c: c.tune.parallel_trials >= 1, "must be at least 1"),
]


def load_config(path: str | Path, overrides: dict | None = None) -> Config:
    """Read, validate and return the config at ``path`` (YAML). The file must name its ``task``."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"config {path} is not a text file (not UTF-8): a run config is YAML") from None
    except ValueError as exc:          # a path holding a NUL byte
        raise ConfigError(f"cannot read config {path!r}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {' '.join(str(exc).split())}") from None
    if raw is None or raw == {}:
        raise ConfigError(f"config {path} is empty: a run config names at least its `task` "
                          "(configs/example.yaml lists every key with its default)")
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys")
    if "task" not in raw:
        raise ConfigError(f"config {path} names no `task` (e.g. `task: P04`; `evolve tasks` lists them)")
    return config_from_dict({**raw, **(overrides or {})}, base_dir=path.parent)


def config_from_dict(raw: dict, base_dir: str | Path | None = None) -> Config:
    """Validate ``raw``; relative ``task_files`` are taken from ``base_dir`` (default: the working
    directory) and stored absolute, and every one is registered (tasks.registry) before ``task``
    is looked up."""
    if not isinstance(raw, dict):
        raise ConfigError("a config is a mapping of keys")
    raw = _upgrade(raw)
    proposers, strategies = raw.pop("proposers", None), raw.pop("strategies", None)
    cfg = _build(Config, raw, "")
    # no section: the default mix; a section lists the mix, so the proposers it does not name are off
    defaults = _default_proposers() if proposers is None else {
        name: dataclasses.replace(options, weight=0.0) for name, options in _default_proposers().items()}
    cfg.proposers = _with_defaults(_registered(proposers, "proposers", proposer_class, proposer_names), defaults)
    cfg.strategies = _with_defaults(_registered(strategies, "strategies", strategy_class, strategy_names),
                                    _default_strategies())
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    cfg.task_files = [str((base / Path(p).expanduser()).resolve()) for p in cfg.task_files]
    if cfg.strategy not in cfg.strategies:
        raise ConfigError(f"config key `strategy` must be one of {', '.join(strategy_names())}, got {cfg.strategy!r}")
    for key, ok, why in _RANGES:
        if not ok(cfg):
            raise ConfigError(f"config key `{key}` {why}")
    for name, options in cfg.proposers.items():
        for section in proposer_class(name).requires:
            if options.weight > 0 and getattr(cfg, section) is None:
                raise ConfigError(f"config key `proposers.{name}` has a weight but there is no `{section}` section")
    _check_task(cfg)
    if cfg.tune.params:
        try:
            parse_space(cfg.tune.params, cfg.to_dict())
        except ValueError as exc:
            raise ConfigError(f"config section `tune.params`: {exc}") from None
    return cfg


def _upgrade(raw: dict) -> dict:
    """Older configs: strategy sections at the top level; ``prompts: null``."""
    raw = dict(raw)
    for old, name in STRATEGY_SECTIONS_BEFORE.items():
        if old in raw:
            section = raw.pop(old)
            if not isinstance(raw.get("strategies") or {}, dict):
                raise ConfigError("config key `strategies` must be a mapping of names to sections")
            strategies = dict(raw.get("strategies") or {})
            if name in strategies:
                raise ConfigError(f"config sections `{old}` and `strategies.{name}` are the same; keep only the second")
            strategies[name] = section
            raw["strategies"] = strategies
    params = (raw.get("tune") or {}).get("params") if isinstance(raw.get("tune"), dict) else None
    if isinstance(params, dict):
        raw["tune"] = {**raw["tune"], "params": {_upgrade_key(k): v for k, v in params.items()}}
    if raw.get("prompts", 0) is None:
        raw.pop("prompts")
    return raw


def _upgrade_key(name) -> str:
    """A tuned key of an older config (``database.temperature``) in today's layout."""
    head, _, rest = str(name).partition(".")
    return f"strategies.{STRATEGY_SECTIONS_BEFORE[head]}.{rest}" if head in STRATEGY_SECTIONS_BEFORE and rest else name


def _with_defaults(given: dict, defaults: dict) -> dict:
    """The sections given, in their order, then the defaults of the others."""
    return {**given, **{k: v for k, v in defaults.items() if k not in given}}


def _registered(raw, path: str, lookup, names) -> dict:
    """name -> Options of a registry-typed section (a bare number is a proposer's weight)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"config key `{path}` must be a mapping of names to sections")
    out = {}
    for name, section in raw.items():
        try:
            cls = lookup(name)
        except KeyError:
            raise ConfigError(f"unknown name `{path}.{name}`; known: {', '.join(names())}") from None
        if isinstance(section, (int, float)) and not isinstance(section, bool) and path == "proposers":
            section = {"weight": section}
        out[name] = _build(cls.Options, section if section is not None else {}, f"{path}.{name}")
    return out


def _check_task(cfg: Config) -> None:
    for i, path in enumerate(cfg.task_files):
        try:
            register_task_file(path)
        except TaskFileError as exc:
            raise ConfigError(f"config key `task_files[{i}]`: {exc}") from None
    try:
        get_task(cfg.task)
    except KeyError as exc:
        raise ConfigError(f"config key `task`: {exc.args[0]}") from None


def _build(cls, raw, path: str):
    """An instance of dataclass ``cls`` from ``raw``, every field checked against its type; a
    component's own validation (ValueError in its __post_init__) becomes a ConfigError naming the section."""
    if not isinstance(raw, dict):
        raise ConfigError(f"config key `{path or 'top level'}` must be a mapping, got {type(raw).__name__}")
    if cls is LLMConfig or path.startswith("llm.models["):
        try:
            refuse_key_fields(raw, f"config section `{path}`")
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(raw) - names, key=str)
    if unknown:
        where = f"`{path}`" if path else "the top level"
        raise ConfigError(f"unknown config key `{_join(path, unknown[0])}` in {where}; known keys: {', '.join(sorted(names))}")
    kwargs = {name: _coerce(hints[name], value, _join(path, name)) for name, value in raw.items()}
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as exc:
        field_name, _, rest = str(exc).partition(" ")
        if field_name in names:  # components say "<field> must be ..."
            raise ConfigError(f"config key `{_join(path, field_name)}` {rest}") from None
        raise ConfigError(f"config section `{path or 'top level'}`: {exc}") from None


_EXPONENT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+$")   # YAML 1.1 reads 3e-6 (no dot) as a string


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
        if isinstance(value, str):  # a bare string names the first field (a model by its name)
            value = {dataclasses.fields(tp)[0].name: value}
        return _build(tp, value, path)
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            if not -2 ** 63 <= value < 2 ** 63:
                raise ConfigError(f"config key `{path}` must fit in 64 bits, got {value}")
            return value
    elif tp is float:
        if isinstance(value, str) and _EXPONENT.match(value):
            value = float(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                value = float(value)
            except OverflowError:          # an int beyond the float range
                value = math.inf
            if not math.isfinite(value):
                raise ConfigError(f"config key `{path}` must be a finite number, got {value!r}")
            return value
    elif tp is str:
        if isinstance(value, str):
            if "\x00" in value:
                raise ConfigError(f"config key `{path}` holds a NUL character")
            return value
    elif tp is dict or origin is dict:
        if isinstance(value, dict):
            return value
    elif origin in (list, tuple) or tp in (list, tuple):
        if isinstance(value, (list, tuple)):
            args = typing.get_args(tp)
            item = args[0] if args else typing.Any
            if item is typing.Any:
                return type(value)(value) if origin is None else (origin or list)(value)
            items = [_coerce(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
            return tuple(items) if (origin or tp) is tuple else items
    raise ConfigError(f"config key `{path}` must be {getattr(tp, '__name__', tp)}, got {value!r}")


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _plain(obj):
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj
