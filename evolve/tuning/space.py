"""The search space of `evolve tune`: dotted config keys mapped to ranges or choices.

``tune.params`` maps dotted config keys (``strategies.islands.temperature``) to ``{low, high, log}``
(a float or int range; ints when the key is an int) or ``{choices: [...]}``. This module parses
that mapping against a config's plain dict, applies sampled values to a copy, and asks an Optuna
trial for values; it imports nothing of the config, so the config can validate its own space.
"""

from __future__ import annotations

import copy

FROZEN = ("task", "task_files", "tune", "run", "seed")   # sections and keys a trial may not change


def parse_space(params: dict, config: dict) -> dict[str, dict]:
    """Validated search space: name -> {"choices": [...]} or {"low", "high", "log", "int"}."""
    space = {}
    for name, spec in params.items():
        if not isinstance(name, str) or name.split(".")[0] in FROZEN:
            raise ValueError(f"`{name}` cannot be tuned")
        current = _get(config, name)
        if not isinstance(spec, dict):
            raise ValueError(f"`{name}` must map to {{low, high, log}} or {{choices: [...]}}")
        unknown = set(spec) - {"low", "high", "log", "choices"}
        if unknown:
            raise ValueError(f"`{name}` has unknown keys {sorted(unknown)} (known: low, high, log, choices)")
        if "choices" in spec:
            if set(spec) != {"choices"} or not isinstance(spec["choices"], list) or not spec["choices"]:
                raise ValueError(f"`{name}`: choices is a non-empty list and comes alone")
            space[name] = {"choices": list(spec["choices"])}
            continue
        low, high, log = spec.get("low"), spec.get("high"), spec.get("log", False)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)) or low >= high:
            raise ValueError(f"`{name}` needs numbers low < high")
        if not isinstance(log, bool) or (log and low <= 0):
            raise ValueError(f"`{name}`: log is true or false, and a log range needs low > 0")
        is_int = isinstance(current, int) and not isinstance(current, bool)
        if is_int and not (float(low).is_integer() and float(high).is_integer()):
            raise ValueError(f"`{name}` is an integer key: low and high must be integers")
        space[name] = {"low": low, "high": high, "log": log, "int": is_int}
    return space


def _get(config: dict, name: str):
    node = config
    for part in name.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ValueError(f"`{name}` is not a config key")
        node = node[part]
    if isinstance(node, dict):
        raise ValueError(f"`{name}` is a section, not a key")
    return node


def apply(config: dict, values: dict) -> dict:
    """A deep copy of ``config`` with the dotted keys of ``values`` set."""
    out = copy.deepcopy(config)
    for name, value in values.items():
        node = out
        *path, last = name.split(".")
        for part in path:
            node = node[part]
        node[last] = value
    return out


def suggest(trial, space: dict[str, dict]) -> dict:
    values = {}
    for name, spec in space.items():
        if "choices" in spec:
            values[name] = trial.suggest_categorical(name, spec["choices"])
        elif spec["int"]:
            values[name] = trial.suggest_int(name, int(spec["low"]), int(spec["high"]), log=spec["log"])
        else:
            values[name] = trial.suggest_float(name, float(spec["low"]), float(spec["high"]), log=spec["log"])
    return values
