import recipes.orpo as orpo
from tests.recipes.helpers import (
    assert_adapter_loads_and_generates,
    assert_run_summary,
    count_4bit,
    metrics_steps,
    run_recipe,
)

CONFIG = "recipes/configs/tiny/orpo.yaml"


def test_two_steps_in_4bit_without_a_reference(tiny_world, tiny_pairs, tmp_path, capsys):
    out = tmp_path / "run"
    trainer = run_recipe(
        orpo,
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
    assert getattr(trainer, "ref_model", None) is None
    assert metrics_steps(out) == [1, 2]
    assert_run_summary(out, "orpo", capsys.readouterr().out, heldout=True)
    assert_adapter_loads_and_generates(out, tiny_world / "model")


def test_missing_preference_columns_fail_before_loading(tiny_world, tmp_path):
    import pytest

    with pytest.raises(ValueError, match=r"missing column\(s\) \['prompt', 'chosen', 'rejected'\]"):
        run_recipe(
            orpo,
            CONFIG,
            "--dataset_name",
            str(tiny_world / "data" / "train.jsonl"),
            "--output_dir",
            str(tmp_path / "x"),
        )
