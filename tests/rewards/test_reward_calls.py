"""Rewards are checked where the project calls them (rewards.call_reward): a broken reward ends in one line that
names it, the row and what it returned or raised; a dotted-path reward's named parameters are its columns."""

import subprocess
import sys
import textwrap

import pytest

from rewards import RewardError, call_reward, declared_columns, get_reward_func, required_columns, weighted_sum
from tests.conftest import REPO_ROOT

USER_MODULE = textwrap.dedent('''
    def names_unit(completions, unit, prompts=None, **kwargs):
        """1.0 when the completion names the row's unit."""
        return [1.0 if u in c else 0.0 for c, u in zip(completions, unit)]

    def wrong_length(completions, **kwargs):
        return [1.0]

    def strings(completions, **kwargs):
        return ["1.0" for _ in completions]

    def text(completions, **kwargs):
        return "1.0"

    def raises_on_41(completions, **kwargs):
        return [1.0 / (0 if "41" in c else 1) for c in completions]

    class Scaled:
        __name__ = "scaled"

        def __init__(self, factor=1.0):
            self.factor = factor

        def __call__(self, completions, unit, **kwargs):
            return [self.factor for _ in completions]
''')
BROKEN = {
    "wrong_length": "reward 'wrong_length' returned 1 score(s) for 2 completion(s)",
    "strings": "reward 'strings' returned '1.0' (str) on row 1 of the file, not a number or None",
    "text": "reward 'text' returned str '1.0', not a list of 2 number(s) or None",
    "raises_on_41": "reward 'raises_on_41' raised ZeroDivisionError: float division by zero on row 2 of the file "
    '(at userrewards.py:16 in <listcomp>: return [1.0 / (0 if "41" in c else 1) for c in completions])',
}


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A reward module outside the project's folders, importable as a user's own would be."""
    (tmp_path / "userrewards.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_declared_columns_are_the_named_parameters(user_module):
    assert declared_columns(get_reward_func("userrewards.names_unit")) == ["unit"]
    assert declared_columns(get_reward_func("userrewards.Scaled")()) == ["unit"]
    assert required_columns(["math_accuracy", "userrewards.names_unit", "format"]) == ["answer", "unit"]
    assert required_columns(["no.such.reward"]) == []  # get_reward_funcs reports it


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_rewards_are_named_with_the_row(user_module, name):
    func = get_reward_func(f"userrewards.{name}")
    with pytest.raises(RewardError) as caught:
        call_reward(func, ["#### 42", "#### 41"], row_labels=["1 of the file", "2 of the file"])
    message = str(caught.value)
    if name == "raises_on_41":  # the comprehension's frame is named by the Python version
        assert message.startswith(BROKEN[name].split(" (at")[0]) and "userrewards.py:16" in message
    else:
        assert message == BROKEN[name]
    # weighted_sum (PPO's adapter, make pairs) goes through the same check
    with pytest.raises(RewardError, match=f"reward '{name}'"):
        weighted_sum([func], [1.0], ["#### 42", "#### 41"])


def test_good_scores_pass_through_as_floats(user_module):
    assert call_reward(get_reward_func("userrewards.names_unit"), ["3 apples", "3"], unit=["apples", "apples"]) == [
        1.0,
        0.0,
    ]
    assert call_reward(lambda completions, **kw: [None, True], ["a", "b"]) == [None, 1.0]


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_make_score_ends_in_one_line_naming_the_reward(user_module, tmp_path, name):
    samples = tmp_path / "samples.jsonl"
    samples.write_text('{"completion": "#### 42", "unit": "coins"}\n{"completion": "#### 41", "unit": "coins"}\n')
    result = subprocess.run(
        [sys.executable, "-m", "eval.score", str(samples), "--rewards", f"userrewards.{name}"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path), "HOME": str(tmp_path)},
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [f"error: {BROKEN[name]}"] or (
        name == "raises_on_41" and result.stderr.startswith(f"error: {BROKEN[name].split(' (at')[0]}")
    )
    assert result.stdout == ""  # nothing printed as scores before the error
