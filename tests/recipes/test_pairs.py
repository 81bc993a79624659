import json

import pytest

import recipes.pairs as pairs
from rewards.math import math_accuracy
from tests.conftest import FULL_PRECISION
from tests.recipes.helpers import run_recipe


def test_pairs_are_valid_trl_preference_rows_scored_by_the_same_reward(tiny_pairs):
    rows = [json.loads(line) for line in tiny_pairs.read_text().splitlines()]
    assert len(rows) >= 8
    for row in rows:
        assert row["prompt"][-1]["role"] == "user"
        assert row["chosen"][0]["role"] == row["rejected"][0]["role"] == "assistant"
        assert row["score_chosen"] - row["score_rejected"] >= 0.5
    chosen_scores = math_accuracy([r["chosen"] for r in rows], answer=[r["answer"] for r in rows])
    rejected_scores = math_accuracy([r["rejected"] for r in rows], answer=[r["answer"] for r in rows])
    assert chosen_scores == [r["score_chosen"] for r in rows]
    assert rejected_scores == [r["score_rejected"] for r in rows]


def test_parquet_output_and_bad_output_name(tiny_world, tmp_path):
    out = tmp_path / "pairs.parquet"
    # a reward that pairs every prompt: how many pairs the model's own answers give depends on the CPU's numerics
    rows = run_recipe(
        pairs,
        "recipes/configs/tiny/pairs.yaml",
        *("--max_prompts", "8", "--num_samples", "4", "--output", str(out)),
        *("--reward_funcs", "tests.recipes.reward_probes.alternating"),
    )
    import datasets

    assert len(rows) == 8
    assert len(datasets.load_dataset("parquet", data_files=str(out), split="train")) == len(rows)
    # beside the pairs, what sampling them took: 4 completions of 8 prompts, each some tokens and none past the limit
    sampled = json.loads((tmp_path / "pairs.cost.json").read_text())
    assert {k: sampled[k] for k in ("prompts", "samples", "completions_generated")} == {
        "prompts": 8,
        "samples": 4,
        "completions_generated": 32,
    }
    assert 32 < sampled["tokens_generated"] <= 32 * pairs.PairsArguments.max_new_tokens
    assert sampled["sampling_cpu_seconds"] > 0  # the sampling's own, what DPO's compute counts (matched compute)
    with pytest.raises(SystemExit, match="use a .jsonl or .parquet"):
        run_recipe(pairs, "recipes/configs/tiny/pairs.yaml", "--output", str(tmp_path / "pairs.csv"))


def test_best_and_worst_respects_the_margin():
    assert pairs.best_and_worst(["a", "bb", "c"], [1.0, 0.0, 1.0], 0.5) == ("a", "bb", 1.0, 0.0)
    assert pairs.best_and_worst(["a", "b"], [1.0, 0.8], 0.5) is None


def test_code_pairs_chosen_passes_more_tests_than_rejected(tiny_code_world, tmp_path):
    from rewards.code import code_tests

    out = tmp_path / "code-pairs.jsonl"
    # in full precision: its subject is the sandbox's verdicts on the kept pairs
    rows = run_recipe(
        pairs, "recipes/configs/tiny-code/pairs.yaml", *FULL_PRECISION, "--max_prompts", "24", "--output", str(out)
    )
    assert len(rows) >= 3 and len(rows) == len(out.read_text().splitlines())
    # the pairs keep MBPP's own columns: the same tests score them again here, in the sandbox
    chosen = code_tests(
        [r["chosen"] for r in rows],
        test_list=[r["test_list"] for r in rows],
        test_setup_code=[r["test_setup_code"] for r in rows],
    )
    rejected = code_tests(
        [r["rejected"] for r in rows],
        test_list=[r["test_list"] for r in rows],
        test_setup_code=[r["test_setup_code"] for r in rows],
    )
    assert all(c > r for c, r in zip(chosen, rejected, strict=True)), list(zip(chosen, rejected, strict=True))


@pytest.mark.slow
def test_no_pair_is_an_error_with_its_causes_and_no_file(tiny_world, tmp_path):
    from core.errors import UserError

    out = tmp_path / "pairs.parquet"
    with pytest.raises(UserError) as refusal:
        run_recipe(
            pairs,
            "recipes/configs/tiny/pairs.yaml",
            *("--max_prompts", "4", "--num_samples", "2", "--max_new_tokens", "8"),
            *("--reward_funcs", "tests.recipes.reward_probes.always_zero", "--output", str(out)),
        )
    assert str(refusal.value).startswith(
        "no prompt produced a pair: every prompt's 2 samples scored within 0.5 of each other, so DPO and ORPO would "
        "have nothing to learn from; nothing written; likely causes: "
    )
    assert not out.exists() and list(tmp_path.iterdir()) == []  # no file, no partial one, for make dpo to trip on
