"""Reward functions in TRL's signature, `f(completions, **columns) -> list[float | None]`, and their registry.

`None` means "not applicable to this sample". Recipes pick rewards by name (a key of `REWARDS`) or by dotted
import path (`mypkg.rewards.my_reward`) in YAML, with optional weights and keyword arguments.
"""

import importlib
import inspect
import numbers
import time
import traceback
from math import isfinite  # not `import math`: the submodule rewards.math takes that name here
from pathlib import Path

from rewards import time_limit
from rewards.code import code_format, code_tests
from rewards.declare import data_step, is_sandboxed
from rewards.format import cosine_length, format_reward, length_reward, reasoning_steps, repetition_penalty
from rewards.math import math_accuracy
from rewards.sandbox import SandboxUnavailable as SandboxUnavailable  # re-exported for the recipes
from rewards.sandbox import isolation_mode
from rewards.time_limit import REWARD_TIMEOUT_SECONDS, Expired, limited

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

# What TRL passes every reward function itself: never dataset columns.
PASSED_BY_TRAINER = {
    "completions",
    "prompts",
    "completion_ids",
    "trainer_state",
    "log_extra",
    "log_metric",
    "environments",
}


class RewardError(ValueError):
    """A reward function raised, or returned something other than one finite number (or None) per completion."""


class RewardTimeout(RewardError):
    """A reward call ran past its time limit (`reward_timeout`)."""


def declared_columns(func) -> list[str]:
    """The dataset columns a reward of your own reads: its named parameters without a default, beyond what the
    trainer passes itself (`completions`, `prompts`, ...).

    >>> def needs_unit(completions, unit, prompts=None, **kwargs): ...
    >>> declared_columns(needs_unit)
    ['unit']
    """
    call = func if inspect.isfunction(func) or inspect.ismethod(func) else type(func).__call__
    parameters = list(inspect.signature(call).parameters.values())
    if not (inspect.isfunction(func) or inspect.ismethod(func)):
        parameters = parameters[1:]  # a callable class's `self`
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [
        p.name
        for p in parameters
        if p.kind in named and p.default is inspect.Parameter.empty and p.name not in PASSED_BY_TRAINER
    ]


def _resolvable(names) -> list:
    """The rewards among `names` that resolve (an unresolvable name is get_reward_funcs' error to report)."""
    funcs = []
    for name in names:
        try:
            funcs.append(get_reward_func(name))
        except ValueError:
            continue
    return funcs


def required_columns(names) -> list[str]:
    """Dataset columns the named rewards read, in order, without repeats: each reward's named parameters
    (`declared_columns`), registered or of your own alike.

    >>> required_columns(["format", "math_accuracy", "length"])
    ['answer']
    """
    return list(dict.fromkeys(column for func in _resolvable(names) for column in declared_columns(func)))


def data_steps(names) -> list:
    """The data steps the named rewards declared (`rewards.declare.prepares`), each once, in the rewards' order.

    >>> [step.__name__ for step in data_steps(["code_tests", "math_accuracy", "length"])]
    ['with_test_columns', 'warn_unparseable_golds']
    """
    return list(dict.fromkeys(step for step in map(data_step, _resolvable(names)) if step is not None))


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


def weighted_sum(reward_funcs, weights, completions, timeout=REWARD_TIMEOUT_SECONDS, **columns) -> list[float]:
    """Per completion, the weighted sum of the rewards, a `None` ("not applicable") counting 0; each reward called
    by `call_reward`, under `timeout` seconds.

    >>> funcs = [REWARDS["math_accuracy"], REWARDS["format"]]
    >>> weighted_sum(funcs, [1.0, 0.5], ["#### 4", "#### 5"], answer=["4", "4"])
    [1.0, 0.0]
    """
    totals = [0.0] * len(completions)
    for func, weight in zip(reward_funcs, weights, strict=True):
        for i, score in enumerate(call_reward(func, completions, timeout=timeout, **columns)):
            totals[i] += weight * (0.0 if score is None else score)
    return totals


def reward_name(func) -> str:
    return getattr(func, "__name__", type(func).__name__)


def _one_row(columns: dict, i: int, n: int) -> dict:
    return {
        key: [value[i]] if isinstance(value, list | tuple) and len(value) == n else value
        for key, value in columns.items()
    }


def _where(error: Exception) -> str:
    """The innermost frame of the reward's own code: file, line, function and source line."""
    ours = (__file__, time_limit.__file__)
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename not in ours]
    if not frames:
        return ""
    frame = frames[-1]
    return f" (at {Path(frame.filename).name}:{frame.lineno} in {frame.name}: {(frame.line or '').strip()})"


def call_reward(func, completions, row_labels=None, timeout=REWARD_TIMEOUT_SECONDS, **columns) -> list[float | None]:
    """Calls a reward as the project always does: one finite number (or None) per completion comes back within
    `timeout` seconds (`rewards.time_limit`; None: no limit), or a RewardError that names the reward, the row
    (`row_labels[i]`, else the completion's index in the batch) and what it returned or raised, with the line of the
    reward's own code that raised (or where it was when its time ran out).

    >>> call_reward(REWARDS["format"], ["<think>a</think><answer>1</answer>"])
    [1.0]
    >>> call_reward(lambda completions, **kw: "1.0", ["x"])
    Traceback (most recent call last):
    ...
    rewards.RewardError: reward '<lambda>' returned str '1.0', not a list of 1 number(s) or None
    >>> call_reward(lambda completions, **kw: [1.0, float("nan")], ["x", "y"])
    Traceback (most recent call last):
    ...
    rewards.RewardError: reward '<lambda>' returned nan on row 1: a reward must be a finite number (or None)
    """
    name, n = reward_name(func), len(completions)
    labels = row_labels or list(range(n))
    start = time.monotonic()
    try:
        with limited(name, n, timeout):
            scores = _scores_or_error(func, completions, labels, columns)
    except Expired as expired:
        if time_limit.INTERRUPTED["on"]:  # not the limit: the run is being stopped (a stuck step after SIGTERM)
            raise
        raise RewardTimeout(
            f"reward {name!r} ran {time.monotonic() - start:.1f} s on {n} completion(s) without returning, past "
            f"reward_timeout {timeout:g} s{_where(expired).replace(' (at ', ' (stopped at ', 1)}; raise "
            "reward_timeout if it needs longer"
        ) from None
    if isinstance(scores, str | bytes | dict) or not hasattr(scores, "__len__"):
        raise RewardError(
            f"reward {name!r} returned {type(scores).__name__} {str(scores)[:60]!r}, not a list of "
            f"{n} number(s) or None"
        )
    if len(scores) != n:
        raise RewardError(f"reward {name!r} returned {len(scores)} score(s) for {n} completion(s)")
    checked = []
    for label, score in zip(labels, scores, strict=True):
        if score is not None and not isinstance(score, numbers.Real):
            raise RewardError(
                f"reward {name!r} returned {score!r} ({type(score).__name__}) on row {label}, not a number or None"
            )
        if score is not None and not isfinite(score):
            raise RewardError(
                f"reward {name!r} returned {float(score)} on row {label}: a reward must be a finite number (or None)"
            )
        checked.append(None if score is None else float(score))
    return checked


def _scores_or_error(func, completions, labels, columns):
    """The reward's raw output, or a RewardError naming the first row that fails alone."""
    n = len(completions)
    try:
        return func(completions, **columns)
    except Exception as error:
        row = "?"
        for i in range(n):  # which row: the first that fails alone
            try:
                func([completions[i]], **_one_row(columns, i, n))
            except Exception:  # noqa: BLE001 - any exception of the user's code marks its row
                row = labels[i]
                break
        raise RewardError(
            f"reward {reward_name(func)!r} raised {type(error).__name__}: {error} on row {row}{_where(error)}"
        ) from error


def get_reward_funcs(names, kwargs: dict[str, dict] | None = None) -> list:
    """Resolve a list of names (see `get_reward_func`); `kwargs` maps a name to its keyword arguments.

    Raises ValueError for an unknown name or bad arguments, `SandboxUnavailable` for a code reward on a machine
    where untrusted code cannot be isolated (see `rewards.sandbox`)."""
    kwargs = kwargs or {}
    unknown = set(kwargs) - set(names)
    if unknown:
        raise ValueError(f"reward_kwargs for rewards not selected: {sorted(unknown)}")
    funcs = [get_reward_func(name, kwargs.get(name)) for name in names]
    if any(map(is_sandboxed, funcs)):
        isolation_mode()
    return funcs
