import math

import recipes.dpo as dpo
from tests.conftest import FULL_PRECISION
from tests.recipes.helpers import assert_run_summary, run_recipe

CONFIG = "recipes/configs/tiny/dpo.yaml"


def test_ipo_is_dpo_with_the_squared_loss_named_ipo(tiny_world, tiny_pairs, tmp_path, capsys):
    """`make ipo`: the DPO script with recipes/configs/tiny/ipo.yaml. At the first step the adapter is the identity
    (LoRA's B starts at zero), so every log-ratio is 0 and IPO's loss is (0 - 1/(2 beta))^2 (0.25 at beta 1), where
    DPO's sigmoid loss would be log 2."""
    import json

    import yaml

    out = tmp_path / "run"
    run_recipe(
        dpo,
        "recipes/configs/tiny/ipo.yaml",
        *FULL_PRECISION,  # its subject is the loss at the first step
        "--dataset_name",
        str(tiny_pairs),
        "--max_steps",
        "2",
        "--logging_steps",
        "1",
        "--output_dir",
        str(out),
    )
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    first = next(row for row in rows if "loss" in row)
    beta = yaml.safe_load(open("recipes/configs/tiny/ipo.yaml"))["beta"]
    assert abs(first["loss"] - (1 / (2 * beta)) ** 2) < 1e-3, first
    assert_run_summary(out, "ipo", capsys.readouterr().out)


def test_dpo_by_epochs_says_its_pairs_epochs_and_steps_before_the_first_step(tiny_world, tiny_pairs, tmp_path, capsys):
    """The 7B and real-model preference configs train by epochs: the run says, before its first step, how many pairs
    it has, the epochs and the steps they make, and trains exactly those steps."""
    pairs = len(tiny_pairs.read_text().splitlines())
    trainer = run_recipe(
        dpo,
        CONFIG,
        *FULL_PRECISION,  # its subject is the plan and the steps
        "--dataset_name",
        str(tiny_pairs),
        "--max_steps",
        "-1",
        "--num_train_epochs",
        "2",
        "--per_device_train_batch_size",
        "16",
        "--output_dir",
        str(tmp_path / "run"),
    )
    per_epoch = math.ceil(pairs / 16)
    assert trainer.state.global_step == 2 * per_epoch
    line = f"plan: {pairs} pairs, 2 epochs of {per_epoch} steps (16 pairs per step) = {2 * per_epoch} steps"
    assert f"{line}; nothing generated" in capsys.readouterr().out.splitlines()
