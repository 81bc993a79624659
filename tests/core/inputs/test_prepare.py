"""`prepare_prompts`, every recipe's data step: each chosen reward's own declared data step runs on the rows before
any model loads, registered rewards and a user's own alike; data loading names no reward."""

import json

import pytest

from core.errors import DataError
from core.inputs.arguments import PromptArguments
from core.inputs.prepare import prepare_prompts
from tests.conftest import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures"

USER_MODULE = '''
from rewards.declare import prepares


def only_short_units(dataset, source):
    if any(len(unit) > 3 for unit in dataset["answer"]):
        raise ValueError(f"{source}: a unit longer than 3 characters")
    return dataset.map(lambda row: {"unit": row["answer"].upper()})


@prepares(only_short_units)
def unit_reward(completions, answer, unit=None, **kwargs):
    """Reads `answer` (required of the data) and `unit`, which its data step adds.

    >>> unit_reward(["KG"], answer=["kg"], unit=["KG"])
    [1.0]"""
    return [float(c == u) for c, u in zip(completions, unit)]
'''


def args(data, **more) -> PromptArguments:
    return PromptArguments(dataset_name=str(data), **more)


def test_code_tests_maps_its_test_columns_and_refuses_a_dataset_without_them(tmp_path):
    mbpp = prepare_prompts(args(FIXTURES / "mbpp_sample.jsonl", prompt_column="text"), ["code_tests"]).dataset
    assert {"tests", "setup", "code_prefix"} <= set(mbpp.column_names) and mbpp[0]["tests"] == mbpp[0]["test_list"]
    with pytest.raises(DataError, match=r"gsm8k_sample.jsonl has no code tests for code_tests: it has columns"):
        prepare_prompts(args(FIXTURES / "gsm8k_sample.jsonl"), ["code_tests"])
    # the same rows under math_accuracy: no code step runs
    math = prepare_prompts(args(FIXTURES / "gsm8k_sample.jsonl"), ["math_accuracy"]).dataset
    assert "tests" not in math.column_names


def test_a_users_reward_declares_its_own_data_step_with_itself(tmp_path, monkeypatch):
    (tmp_path / "unitrewards.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    data = tmp_path / "units.jsonl"
    data.write_text('{"question": "mass?", "answer": "kg"}\n{"question": "length?", "answer": "m"}\n')
    prepared = prepare_prompts(args(data), ["format", "unitrewards.unit_reward"]).dataset
    assert prepared["unit"] == ["KG", "M"]
    data.write_text('{"question": "mass?", "answer": "grams"}\n')
    with pytest.raises(DataError, match=r"units.jsonl: a unit longer than 3 characters"):
        prepare_prompts(args(data), ["unitrewards.unit_reward"])


def test_shown_tests_are_held_back_before_the_test_columns_are_mapped_and_too_few_are_refused():
    mbpp = FIXTURES / "mbpp_sample.jsonl"
    shown = prepare_prompts(args(mbpp, prompt_column="text", shown_tests=1), ["code_tests"]).dataset
    # the first assert shown, the rest scored: mapped into `tests` after they were held back
    first = json.loads(mbpp.read_text().splitlines()[0])["test_list"]
    assert shown[0]["tests_shown"] == first[0] and shown[0]["tests"] == first[1:]
    assert all(row["tests"] == row["test_list"] and row["tests_shown"] not in row["tests"] for row in shown)
    with pytest.raises(DataError, match=r"mbpp_sample.jsonl: a row with 3 test\(s\) .*; lower shown_tests \(3\)"):
        prepare_prompts(args(mbpp, prompt_column="text", shown_tests=3), ["code_tests"])


def test_heldout_data_is_prepared_as_the_training_rows_are(tmp_path):
    mbpp = FIXTURES / "mbpp_sample.jsonl"
    prompts = prepare_prompts(args(mbpp, prompt_column="text"), ["code_tests"], limit=2, heldout_data=str(mbpp))
    assert len(prompts.dataset) == 2 and len(prompts.held) == sum(1 for _ in open(mbpp))  # all of it, no limit
    assert prompts.held["tests"] == prompts.held["test_list"]  # code_tests' own step ran on it too
    # without heldout_data, nothing is held out
    assert prepare_prompts(args(mbpp, prompt_column="text"), ["code_tests"]).held is None
