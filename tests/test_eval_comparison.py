"""`make compare`: a small-budget run on the tiny world produces every file with every field, measured."""

import json

import pytest

from eval.comparison import METHODS, steps_for
from recipes.common import first_last

FIELDS = ("method", "accuracy", "accuracy_ci95", "peak_memory_mb", "train_seconds", "seconds_per_step",
          "samples_per_second", "train_steps", "models_in_memory", "trainable_params", "reward_first", "reward_last",
          "completion_length_mean", "completion_length_base", "greedy_accuracy", "greedy_ci95", "sampled_pass1",
          "sampled_pass1_ci95")


def test_writes_summary_table_and_plots(compare_results):
    for name in ("summary.json", "settings.json", "summary.md"):
        assert (compare_results / name).stat().st_size > 0, name
    for name in ("memory.png", "accuracy.png", "rewards.png"):
        data = (compare_results / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, name
    records = json.loads((compare_results / "summary.json").read_text())
    assert [r["method"] for r in records] == ["base", *METHODS]
    for record in records:
        assert set(FIELDS) <= record.keys(), (record["method"], set(FIELDS) - record.keys())
        for metric, ci in (("greedy_accuracy", "greedy_ci95"), ("sampled_pass1", "sampled_pass1_ci95")):
            assert 0 <= record[ci][0] <= record[metric] <= record[ci][1] <= 1, (record["method"], metric)
        assert record["accuracy"] == record["sampled_pass1"]  # the headline, as settings.json says
    settings = json.loads((compare_results / "settings.json").read_text())
    assert settings["headline"] == "sampled pass@1" and settings["eval_n"] == 24 and settings["prompts"] == 16
    table = (compare_results / "summary.md").read_text()
    for method in ("base", *METHODS):
        assert f"| {method} |" in table
    assert settings["versions"]["trl"] in table and "## Settings" in table


def test_records_measured_costs_per_method(compare_results):
    records = {r["method"]: r for r in json.loads((compare_results / "summary.json").read_text())}
    assert records["base"]["peak_memory_mb"] is None  # nothing trained, nothing to measure
    # 16 prompts once each: GRPO 8 prompts (64 completions) a step, PPO 8 prompts a step
    assert records["grpo"]["train_steps"] == 2 and records["ppo"]["train_steps"] == 2
    assert records["grpo"]["samples"] == 16 * 8 and records["ppo"]["samples"] == 16
    pairs = sum(1 for _ in open(compare_results / "pairs.jsonl"))
    assert 1 <= records["dpo"]["train_steps"] == records["orpo"]["train_steps"] == -(-pairs // 8)
    for method in METHODS:
        r = records[method]
        assert r["peak_memory_mb"] > r["runtime_memory_mb"] > 100, method  # measured RSS, above the runtime alone
        assert r["train_seconds"] > 0 and r["seconds_per_step"] == pytest.approx(r["train_seconds"] / r["train_steps"])
        assert r["trainable_params"] > 0 and r["reward_first"] is not None and r["reward_curve"]
        assert r["estimated_gb"] > 0
        assert isinstance(r["flag_reward_up_accuracy_not"], bool)
        ci = r["sampled_vs_base_ci95"]
        assert ci[0] <= r["sampled_vs_base"] <= ci[1]
    # PPO holds the critic, a second 4-bit base; the others one base (the reference is the adapter switched off)
    assert records["ppo"]["models_in_memory"] == 2
    assert all(records[m]["models_in_memory"] == 1 for m in ("grpo", "dpo", "orpo"))
    assert records["ppo"]["trainable_params"] > records["grpo"]["trainable_params"]  # the critic's LoRA and head
    assert records["ppo"]["estimated_gb"] > records["grpo"]["estimated_gb"]


def test_budget_and_curve_summaries():
    config = {"per_device_train_batch_size": 32, "gradient_accumulation_steps": 2, "num_generations": 8}
    assert steps_for("grpo", config, 80) == 10  # 8 prompts x 8 completions a step
    assert steps_for("ppo", {"per_device_train_batch_size": 8, "num_mini_batches": 2}, 80) == 5
    assert first_last([(i, float(i)) for i in range(10)]) == (0.5, 8.5)  # mean of the first and last fifth
    assert first_last([]) == (None, None)


def test_the_code_comparison_writes_the_same_schema_plus_reward_costs(code_compare_results):
    records = {r["method"]: r for r in json.loads((code_compare_results / "summary.json").read_text())}
    assert list(records) == ["base", *METHODS]
    for record in records.values():
        assert set(FIELDS) <= record.keys(), (record["method"], set(FIELDS) - record.keys())
    for method in ("grpo", "ppo"):  # they score completions while training: the sandbox's time is theirs
        r = records[method]
        assert 0 < r["reward_seconds"] < r["train_seconds"] and 0 < r["reward_share"] < 1
        assert r["sandbox_programs_per_second"] > 1 and r["reward_time"]["code_tests"]["completions"] == r["samples"]
    for method in ("dpo", "orpo"):  # their pairs were scored before training
        assert records[method]["reward_seconds"] == 0 and records[method]["sandbox_programs_per_second"] is None
    settings = json.loads((code_compare_results / "settings.json").read_text())
    assert settings["profile"] == "tiny-code" and settings["task"] == "tiny-code" and settings["eval_n"] == 24
    for name in ("memory.png", "accuracy.png", "rewards.png", "summary.md"):
        assert (code_compare_results / name).stat().st_size > 1000
    assert "sandbox programs/s" in (code_compare_results / "summary.md").read_text()
