import inspect

import pytest

import rewards
from rewards import REWARDS, get_reward_func, get_reward_funcs, required_columns
from rewards.declare import data_step, is_sandboxed


@pytest.mark.parametrize("name", sorted(REWARDS))
def test_every_registered_reward_resolves_and_has_a_docstring_example(name):
    func = get_reward_func(name)
    assert func is REWARDS[name]
    assert func.__name__ == name
    assert ">>>" in (inspect.getdoc(func) or inspect.getdoc(type(func)))


def test_each_registered_reward_declares_its_columns_data_step_and_sandbox_with_itself():
    # the columns are the signature's: nothing beside it to keep equal
    assert {name: required_columns([name]) for name in REWARDS if required_columns([name])} == {
        "math_accuracy": ["answer"],
        "length": ["answer"],
        "cosine_length": ["answer"],
    }
    steps = {name: data_step(func).__name__ for name, func in REWARDS.items() if data_step(func)}
    assert steps == {
        "math_accuracy": "warn_unparseable_golds",
        "length": "warn_unparseable_golds",
        "cosine_length": "warn_unparseable_golds",
        "code_tests": "with_test_columns",
    }
    assert [name for name, func in REWARDS.items() if is_sandboxed(func)] == ["code_tests"]
    # a reward built from YAML keyword arguments keeps its class's declarations
    assert data_step(get_reward_func("cosine_length", {"max_len": 50})).__name__ == "warn_unparseable_golds"


def test_dotted_path_and_kwargs():
    assert get_reward_func("rewards.math.math_accuracy") is REWARDS["math_accuracy"]
    custom = get_reward_funcs(["reasoning_steps"], {"reasoning_steps": {"min_steps": 5}})[0]
    assert custom.min_steps == 5 and REWARDS["reasoning_steps"].min_steps == 3


@pytest.mark.parametrize(
    "names,kwargs,message",
    [
        (["no_such_reward"], None, "unknown reward 'no_such_reward'"),
        (["nopkg.nomod.func"], None, "cannot import"),
        (["math_accuracy"], {"math_accuracy": {"x": 1}}, "takes no arguments"),
        (["reasoning_steps"], {"reasoning_steps": {"bogus": 1}}, "bad arguments"),
        (["format"], {"length": {}}, "not selected"),
    ],
)
def test_bad_reward_specs_are_clear_errors(names, kwargs, message):
    with pytest.raises(ValueError, match=message):
        get_reward_funcs(names, kwargs)


def test_registry_is_one_literal_dict():
    source = inspect.getsource(rewards)
    assert source.count("REWARDS = {") == 1
