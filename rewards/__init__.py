"""Reward functions in TRL's signature, `f(completions, **columns) -> list[float | None]`, and their registry.

`None` means "not applicable to this sample". Recipes pick rewards by name (a key of `REWARDS`) or by dotted
import path (`mypkg.rewards.my_reward`) in YAML, with optional weights and keyword arguments.
"""

import importlib
import inspect

from rewards.code import code_format, code_tests
from rewards.format import cosine_length, format_reward, length_reward, reasoning_steps, repetition_penalty
from rewards.math import math_accuracy
from rewards.sandbox import SandboxUnavailable as SandboxUnavailable  # re-exported for the recipes
from rewards.sandbox import isolation_mode

REWARDS = {
    "math_accuracy": math_accuracy,
    "format": format_reward,
    "reasoning_steps": reasoning_steps,
    "length": length_reward,
    "cosine_length": cosine_length,
    "repetition_penalty": repetition_penalty,
    "code_tests": code_tests,
    "code_format": code_format,
}

# Dataset columns each reward reads (beyond `completions`), for pre-flight checks before a model is loaded.
# code_tests reads any of three formats (rewards.code.TEST_COLUMN_STYLES), checked by `require_code_tests`.
REQUIRED_COLUMNS = {
    "math_accuracy": ["answer"],
    "length": ["answer"],
    "cosine_length": ["answer"],
}

# Rewards that execute model output: resolving them checks that the sandbox can isolate it here (before any model
# loads), raising `SandboxUnavailable` with the cause and the fixes where it cannot.
SANDBOXED = {"code_tests"}


def required_columns(names) -> list[str]:
    """Dataset columns the named rewards read, in order, without repeats (user rewards declare none)."""
    return list(dict.fromkeys(column for name in names for column in REQUIRED_COLUMNS.get(name, [])))


def get_reward_func(name: str, kwargs: dict | None = None):
    """A registered reward by name, or any function by dotted import path; kwargs configure class-based rewards."""
    if name in REWARDS:
        func = REWARDS[name]
    elif "." in name:
        module_name, _, attr = name.rpartition(".")
        try:
            func = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as error:
            raise ValueError(f"reward {name!r}: cannot import it ({error})") from error
    else:
        raise ValueError(f"unknown reward {name!r}; known: {', '.join(REWARDS)} (or a dotted path mod.func)")
    if kwargs:
        if inspect.isfunction(func):
            raise ValueError(f"reward {name!r} takes no arguments, got {sorted(kwargs)}")
        try:
            func = type(func)(**kwargs)
        except TypeError as error:
            raise ValueError(f"reward {name!r}: bad arguments {kwargs}: {error}") from error
    return func


def weighted_sum(reward_funcs, weights, completions, **columns) -> list[float]:
    """Per completion, the weighted sum of the rewards, a `None` ("not applicable") counting 0.

    >>> funcs = [REWARDS["math_accuracy"], REWARDS["format"]]
    >>> weighted_sum(funcs, [1.0, 0.5], ["#### 4", "#### 5"], answer=["4", "4"])
    [1.0, 0.0]
    """
    totals = [0.0] * len(completions)
    for func, weight in zip(reward_funcs, weights, strict=True):
        for i, score in enumerate(func(completions, **columns)):
            totals[i] += weight * (0.0 if score is None else float(score))
    return totals


def get_reward_funcs(names, kwargs: dict[str, dict] | None = None) -> list:
    """Resolve a list of names (see `get_reward_func`); `kwargs` maps a name to its keyword arguments.

    Raises ValueError for an unknown name or bad arguments, `SandboxUnavailable` for a code reward on a machine
    where untrusted code cannot be isolated (see `rewards.sandbox`)."""
    kwargs = kwargs or {}
    unknown = set(kwargs) - set(names)
    if unknown:
        raise ValueError(f"reward_kwargs for rewards not selected: {sorted(unknown)}")
    funcs = [get_reward_func(name, kwargs.get(name)) for name in names]
    if SANDBOXED & set(names):
        isolation_mode()
    return funcs
