"""A config names its task (tasks/registry.py) and gets how its problems are asked; it cannot say otherwise."""

import pytest

from core.inputs.arguments import PromptArguments
from tasks.registry import TASKS
from tests.conftest import entry_point_error


def test_a_task_gives_its_prompt_column_template_system_prompt_and_shown_tests():
    smol = PromptArguments(dataset_name="rows.jsonl", task="smol")
    assert (smol.prompt_column, smol.prompt_template, smol.system_prompt) == (
        "question",
        None,
        TASKS["smol"].system_prompt,
    )
    hidden = PromptArguments(dataset_name="rows.jsonl", task="mbpp-hidden", prompt_column="text")  # the same: kept
    assert hidden.shown_tests == 1 and "{tests_shown}" in hidden.prompt_template
    assert PromptArguments(dataset_name="rows.jsonl").prompt_column == "question"  # no task: as before


def test_a_setting_that_differs_from_its_task_or_an_unknown_task_is_refused():
    with pytest.raises(ValueError, match=r"system_prompt 'Be brief.' differs from task smol's 'You are"):
        PromptArguments(dataset_name="rows.jsonl", task="smol", system_prompt="Be brief.")
    with pytest.raises(ValueError, match=r"task 'gsm9k' is not a task; the tasks: gsm8k, math500"):
        PromptArguments(dataset_name="rows.jsonl", task="gsm9k")


def test_a_recipe_refuses_a_prompt_its_config_s_task_does_not_ask_in_one_line(tiny_world):
    error = entry_point_error(
        "recipes.grpo", "--config", "recipes/configs/tiny/grpo.yaml", "--prompt_template", "{question} Think."
    )
    assert error.startswith("error: ") and "prompt_template '{question} Think.' differs from task tiny's None" in error
