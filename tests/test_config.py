"""The run config: every shipped file loads; every error names its key."""

import glob

import pytest
import yaml

from evolve.config import Config, ConfigError, config_from_dict, load_config


@pytest.mark.parametrize("path", sorted(glob.glob("configs/*.yaml")))
def test_shipped_configs_load(path):
    assert isinstance(load_config(path), Config)


def test_example_lists_every_key_with_its_default():
    example = yaml.safe_load(open("configs/example.yaml"))
    defaults = Config().to_dict()
    assert set(example) == set(defaults)
    for section, values in defaults.items():
        if isinstance(values, dict):
            assert example[section] == values, section


@pytest.mark.parametrize(
    "raw,key",
    [
        ({"budgets": {"proposal": 3}}, "budgets.proposal"),
        ({"colour": "red"}, "colour"),
        ({"budgets": {"proposals": "many"}}, "budgets.proposals"),
        ({"budgets": {"proposals": 0}}, "budgets.proposals"),
        ({"evaluator": {"ladder": "yes"}}, "evaluator.ladder"),
        ({"evaluator": {"ladder_max_n": 0}}, "evaluator.ladder_max_n"),
        ({"strategies": {"islands": {"islands": 0}}}, "strategies.islands.islands"),
        ({"database": {"selection": "tournament"}}, "strategies.islands.selection"),   # an older config's section
        ({"strategies": {"tree": {"exploration_c": -1}}}, "strategies.tree.exploration_c"),
        ({"strategies": {"refine": {"rounds": 0}}}, "strategies.refine.rounds"),
        ({"strategies": {"annealing": {}}}, "strategies.annealing"),
        ({"proposers": {"oracle": 1.0}}, "proposers.oracle"),
        ({"proposers": {"structural": {"weight": "high"}}}, "proposers.structural.weight"),
        ({"strategy": "annealing"}, "strategy"),
        ({"task": "P99"}, "task"),
        ({"proposers": {"llm": 1.0}}, "proposers.llm"),
        ({"llm": {"models": [{"name": "openai/x", "api_key": "sk-123"}]}}, "llm"),
        ({"ray": {"batch_size": 2.5}}, "ray.batch_size"),
        ({"budgets": 5}, "budgets"),
    ],
)
def test_bad_values_name_the_key(raw, key):
    with pytest.raises(ConfigError, match=f"`{key.replace('.', '[.]')}"):
        config_from_dict(raw)


def test_ints_are_accepted_for_floats_and_nulls_for_optionals():
    cfg = config_from_dict({"budgets": {"wall_time_s": 10, "usd": None}})
    assert cfg.budgets.wall_time_s == 10.0 and isinstance(cfg.budgets.wall_time_s, float)


def test_unreadable_and_invalid_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("task: [P01\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
