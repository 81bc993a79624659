import recipes.dpo as dpo
from tests.recipes.helpers import (
    assert_adapter_loads_and_generates,
    assert_run_summary,
    count_4bit,
    metrics_steps,
    run_recipe,
)

CONFIG = "recipes/configs/tiny/dpo.yaml"


def test_two_steps_in_4bit_with_the_adapterless_base_as_reference(tiny_world, tiny_pairs, tmp_path, capsys):
    out = tmp_path / "run"
    trainer = run_recipe(
        dpo,
        CONFIG,
        "--dataset_name",
        str(tiny_pairs),
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
    assert count_4bit(trainer.model) == 4 * 7
    assert trainer.ref_model is None  # the reference is the base with the adapter disabled, not a second copy
    assert metrics_steps(out) == [1, 2]
    assert_run_summary(out, "dpo", capsys.readouterr().out, heldout=True)
    assert_adapter_loads_and_generates(out, tiny_world / "model")
