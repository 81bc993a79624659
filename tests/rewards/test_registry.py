import inspect

import pytest

import rewards
from rewards import REQUIRED_COLUMNS, REWARDS, get_reward_func, get_reward_funcs


@pytest.mark.parametrize("name", sorted(REWARDS))
def test_every_registered_reward_resolves_and_has_a_docstring_example(name):
    func = get_reward_func(name)
    assert func is REWARDS[name]
    assert func.__name__ == name
    assert ">>>" in (inspect.getdoc(func) or inspect.getdoc(type(func)))


def test_required_columns_name_registered_rewards():
    assert set(REQUIRED_COLUMNS) <= set(REWARDS)


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
