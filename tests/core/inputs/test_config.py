"""Settings no run can use end in one line naming the value and where it came from, before any model loads."""

import sys

import pytest

from tests.conftest import REPO_ROOT, entry_point_error, start_command


def run(*args: str, config: str = "recipes/configs/tiny/grpo.yaml", module: str = "recipes.grpo") -> tuple[int, str]:
    """(exit status, output) of `python -m <module> --config <config> <args>`, a process of its own forked from one
    that imported the libraries (`start_command`)."""
    started = start_command([sys.executable, "-m", module, "--config", config, *args])
    output, _ = started.communicate(timeout=300)
    return started.returncode, output


@pytest.mark.parametrize(
    "args,message",
    [
        (["--learning_rate", "0"], "error: learning_rate 0 (from the command line) must be > 0"),
        (["--learning_rate=-1e-4"], "error: learning_rate -0.0001 (from the command line) must be > 0"),
        (["--max_steps", "0"], "error: max_steps 0 (from the command line) would train a full epoch"),
        (["--max_completion_length", "0"], "error: max_completion_length 0 (from the command line) must be > 0"),
        (
            ["--model_name_or_path", "artifacts/tiny/modl"],
            "error: model_name_or_path 'artifacts/tiny/modl' (from the command line) does not exist",
        ),
        (
            ["--model_name_or_path", "tests/fixtures"],
            "error: model_name_or_path 'tests/fixtures' (from the command line) holds no config.json: not a model "
            "folder",
        ),
    ],
)
def test_bad_settings_are_one_line_before_any_model_loads(tiny_world, args, message):
    config = "recipes/configs/tiny/grpo.yaml"
    error = entry_point_error("recipes.grpo", "--config", config, *args, "--output_dir", "/nonexistent/never-written")
    assert error.startswith(message) and "\n" not in error, error


def test_a_bad_setting_ends_the_process_in_one_line_without_a_traceback(tiny_world):
    returncode, output = run("--learning_rate", "0", "--output_dir", "/nonexistent/never-written")
    assert returncode == 1 and "Traceback" not in output, output[-2000:]
    assert output.strip().splitlines()[-1] == "error: learning_rate 0 (from the command line) must be > 0"


def test_a_yaml_value_is_named_with_its_file(tiny_world, tmp_path):
    config = tmp_path / "zero.yaml"
    config.write_text(
        (REPO_ROOT / "recipes/configs/tiny/dpo.yaml").read_text().replace("learning_rate:", "learning_rate: 0.0 #")
    )
    error = entry_point_error("recipes.dpo", "--config", str(config))
    assert error == f"error: learning_rate 0 (from {config}) must be > 0"


def test_an_adapter_is_not_a_base_model_and_eval_names_a_missing_adapter(tiny_world, tmp_path):
    adapter = tmp_path / "run"
    (adapter / "checkpoint-4").mkdir(parents=True)
    (adapter / "checkpoint-4" / "adapter_config.json").write_text("{}")
    config = "recipes/configs/tiny/grpo.yaml"
    error = entry_point_error(
        "recipes.grpo", "--config", config, "--model_name_or_path", str(adapter / "checkpoint-4")
    )
    assert error.endswith("is a LoRA adapter, not a base model: give the base model it was trained on")
    evaluated = entry_point_error(
        "eval.run", "--model", "artifacts/tiny/model", "--task", "tiny", "--adapter", f"{adapter}"
    )
    assert evaluated == (
        f"error: adapter {adapter} holds no adapter_config.json: not a LoRA adapter folder; its checkpoints hold "
        f"adapters: {adapter / 'checkpoint-4'}"
    )
