"""Every method's recipe, two real steps in 4-bit on the tiny world, as `make <method>` runs it (parsed as the CLI
parses): a saved adapter that loads and generates, metrics for each step, the printed summary with held-out
accuracy before -> after; and what each method holds (PPO's same-size critic, DPO's and ORPO's missing second
model)."""

import json

import pytest

import recipes.dpo as dpo
import recipes.grpo as grpo
import recipes.orpo as orpo
import recipes.ppo as ppo
from core.runs.provenance import commit, cpu
from core.training.plan import PLANS
from tests.recipes.helpers import (
    assert_adapter_loads_and_generates,
    assert_run_summary,
    count_4bit,
    metrics_steps,
    run_recipe,
)

RECIPES = {"grpo": grpo, "ppo": ppo, "dpo": dpo, "orpo": orpo}
PAIRS = {"dpo", "orpo"}  # trained on the tiny world's preference pairs


def holds_grpo(trainer, out):
    assert count_4bit(trainer.model) == 4 * 7
    assert trainer.state.global_step == 2
    for name in ("adapter_model.safetensors", "adapter_config.json", "tokenizer.json", "config.yaml", "versions.json"):
        assert (out / name).exists(), name
    versions = json.loads((out / "versions.json").read_text())
    assert versions["trl"] == "1.12.0" and versions["sandbox_isolation"] == "root"
    assert versions["commit"].split("+")[0] == commit().split("+")[0] and versions["cpu"] == cpu()["cpu"]


def holds_ppo(trainer, out):
    wrapper = trainer.accelerator.unwrap_model(trainer.model)
    assert count_4bit(wrapper.policy) == 4 * 7 and count_4bit(wrapper.value_model) == 4 * 7  # same-size critic
    assert isinstance(trainer.reward_model, ppo.RewardFunctionModel)
    critic_trainable = {n for n, p in wrapper.value_model.named_parameters() if p.requires_grad}
    assert any("lora_" in n for n in critic_trainable) and any("score" in n for n in critic_trainable)
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert all(0.0 <= row["objective/scores"] <= 1.0 for row in rows if "objective/scores" in row)
    # PPO logs only the weighted total; the recipe logs each reward's own mean beside it (one reward: the same)
    scored = [row for row in rows if "objective/scores" in row]
    assert [row["rewards/math_accuracy/mean"] for row in scored] == pytest.approx(
        [r["objective/scores"] for r in scored]
    )
    assert (out / "checkpoint-2" / "value_model.safetensors").exists()


def holds_dpo(trainer, out):
    assert count_4bit(trainer.model) == 4 * 7
    assert trainer.ref_model is None  # the reference is the base with the adapter disabled, not a second copy


def holds_orpo(trainer, out):
    assert count_4bit(trainer.model) == 4 * 7
    assert getattr(trainer, "ref_model", None) is None  # no reference at all


HOLDS = {"grpo": holds_grpo, "ppo": holds_ppo, "dpo": holds_dpo, "orpo": holds_orpo}


@pytest.mark.parametrize("method", RECIPES)
def test_two_steps_in_4bit_save_an_adapter_that_generates(method, tiny_world, tiny_pairs, tmp_path, capsys):
    out = tmp_path / "run"
    data = ["--dataset_name", str(tiny_pairs)] if method in PAIRS else []
    trainer = run_recipe(
        RECIPES[method],
        f"recipes/configs/tiny/{method}.yaml",
        *data,
        "--max_steps",
        "2",
        "--logging_steps",
        "1",
        "--output_dir",
        str(out),
        "--heldout_task",
        "tiny",
        "--heldout_limit",
        "20",
    )
    HOLDS[method](trainer, out)
    assert metrics_steps(out) == [1, 2]
    printed = capsys.readouterr().out
    # before the first step, what the run will cost, from the trainer's own settings (the formulas: plan.py's doctests)
    assert PLANS[method](trainer.args, len(trainer.train_dataset), 2, 1) in printed.splitlines()
    assert_run_summary(out, method, printed, heldout=True)
    assert_adapter_loads_and_generates(out, tiny_world / "model")
