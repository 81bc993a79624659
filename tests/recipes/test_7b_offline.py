"""Every 7B config's own code path, one step, offline: only the model and the data are swapped for local stand-ins
(the tiny models, a GSM8K-format and an MBPP-format fixture, on-policy pairs), plus `use_cpu`. bf16 compute stays
on, as on a GPU (PyTorch runs it on a CPU, slowly): a dtype mismatch under bf16 + 4-bit, like the one TRL's PPO
adapter casting caused, fails here, not on a rented GPU. Its system prompt, prompt template, reward columns, LoRA
targets, 8-bit optimizer, activation checkpointing and lengths run as written, so the YAMLs are known to work before
anyone rents a GPU for them."""

import json
import shutil
from importlib import import_module

import pytest
import yaml

from core.evaluation.benchmarks import TASKS, prepare_row
from core.report.summary import PROFILE_TASKS
from tests.conftest import FIXTURES, REPO_ROOT
from tests.recipes.helpers import run_recipe

pytestmark = pytest.mark.slow  # a step of each, in bf16 on a CPU

CONFIGS = sorted((REPO_ROOT / "recipes" / "configs").glob("7b*/*.yaml"))
SEVEN_B = REPO_ROOT / "recipes" / "models" / "qwen2.5-7b-instruct.json"
TRAINER_CPU = ["--use_cpu", "true", "--max_steps", "1", "--logging_steps", "1", "--save_strategy", "no"]
# One step as small as the config allows: its micro-batch as written, accumulated only as far as a method needs (GRPO:
# one prompt's group of k = 8 completions, two micro-batches of 4; the others one micro-batch), not the 16-32
# sequences a 7B step accumulates. The lengths, dtype and every other setting stay the config's.
SMALLEST_STEP = {"grpo": 2}


def stand_in(tiny_model, folder):
    """The tiny model with the 7B's context (its rotary positions extend to it): the prompt-length check sees the
    room a 7B has, and the configs' lengths run as written."""
    shutil.copytree(tiny_model, folder)
    config = json.loads((folder / "config.json").read_text())
    config["max_position_embeddings"] = json.loads(SEVEN_B.read_text())["max_position_embeddings"]
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_one_step_of_each_7b_config_with_local_stand_ins(path, tiny_world, tiny_code_world, tiny_pairs, tmp_path):
    config = yaml.safe_load(path.read_text())
    code = path.parent.name.endswith("code")
    model = stand_in(tiny_code_world / "model" if code else tiny_world / "model", tmp_path / "model")
    # the fixture's rows repeated to a few batches' worth (a 7B config's batch is larger than the fixture)
    fixture = {"7b-code": "mbpp_sample.jsonl", "7b-math": "math500_sample.jsonl"}.get(path.parent.name, "gsm8k_sample")
    rows_text = (FIXTURES / fixture.removesuffix(".jsonl")).with_suffix(".jsonl").read_text().splitlines()
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join((rows_text * 64)[:64]) + "\n")
    method = path.stem
    out = tmp_path / "out"
    script = "dpo" if method == "ipo" else method
    overrides = ["--model_name_or_path", str(model)]
    if "exclude_problems" in config:  # the evaluation set's stand-in: the fixture's first problem, never trained on
        excluded = tmp_path / "excluded.jsonl"
        excluded.write_text(rows_text[0] + "\n")
        overrides += ["--exclude_problems", str(excluded)]
    if method == "pairs":
        overrides += [
            "--dataset_name",
            str(data),
            "--max_prompts",
            "2",
            "--num_samples",
            "2",
            "--min_margin",
            "0",
            "--output",
            str(out / "pairs.jsonl"),
        ]
    else:
        dataset = tiny_pairs if method in ("dpo", "ipo", "orpo") else data
        accumulate = str(SMALLEST_STEP.get(method, 1))
        overrides += ["--dataset_name", str(dataset), *TRAINER_CPU, "--gradient_accumulation_steps", accumulate]
        overrides += ["--output_dir", str(out)]
    # in this process, parsed as the CLI parses (YAML + flags), held-out evaluation as the config has it
    run_recipe(import_module(f"recipes.{script}"), str(path), *overrides, heldout=True)
    if method == "pairs":
        rows = [json.loads(line) for line in (out / "pairs.jsonl").read_text().splitlines()]
        assert rows
        # prompted as the profile's make eval task prompts the same rows (GSM8K: Qwen's instruction; MBPP: one assert)
        task = TASKS[PROFILE_TASKS[path.parent.name]]
        sources = [prepare_row(task, json.loads(line)) for line in rows_text[:2]]
        assert rows[0]["prompt"] in [task.messages(row) for row in sources]
        return
    resolved = yaml.safe_load((out / "config.yaml").read_text())
    for key in (
        "optim",
        "activation_checkpointing",
        "lora_target_modules",
        "learning_rate",
        "system_prompt",
        "prompt_template",
        "reward_funcs",
        "max_completion_length",
        "response_length",
        "max_length",
        "loss_type",
        "beta",
    ):
        if key in config:  # the 7B settings themselves ran, not CPU defaults
            assert resolved[key] == config[key], key
    assert resolved["per_device_train_batch_size"] == config["per_device_train_batch_size"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 1 and summary["signal_first"] is not None
    assert summary["method"] == method  # an IPO run is named IPO, in its folder's records and its summary
