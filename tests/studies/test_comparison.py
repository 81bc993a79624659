"""`make compare`: a small-budget run on the tiny world produces every file with every field, measured."""

import copy
import json
import math
import random
import re
import shutil
import statistics
from pathlib import Path

import pytest
import yaml

from core.evaluation.accuracy import evaluate_model, load_for_eval
from core.evaluation.benchmarks import TASKS, load_task_data
from core.report.stats import crossed_difference, detectable_difference
from core.runs.metrics import first_last
from studies.comparison import matched, transfer, versus
from studies.comparison.__main__ import main, write_report
from studies.comparison.published import against_published, read_published
from studies.comparison.readme import MAIN_README_SHOWS, PART, filled, write_readme
from studies.comparison.report import compute_lines, headline_table
from studies.comparison.scores import read_scores
from studies.comparison.sharpening import sharpening
from studies.comparison.summary import (
    FROM_SCORES,
    MEASURED_ONLY_WHEN_TRAINED,
    from_scores,
    same_machine,
    summary_again,
)
from studies.comparison.sweep import chosen_settings, key_grid, sweep_plan, table_seeds, tune
from studies.comparison.table import read_primary
from studies.comparison.tuning import sweep_summary, tuning_budget
from studies.comparison.versus import is_claimed, sentence, what_holds
from studies.comparison.worlds import (
    budget_section,
    replaced_section,
    replication_section,
    rows_of,
    said,
    transfer_table,
    verdict,
)
from studies.runner import METHODS, recipe_config, steps_for
from tasks import code as code_world
from tasks.shipped import sha256
from tests.conftest import REPO_ROOT, run_main

# every run's record, the base's per seed too: what was measured (None where nothing trained) and its accuracies
FIELDS = ("method", "completion_length_mean", "completion_length_base", *MEASURED_ONLY_WHEN_TRAINED, *FROM_SCORES[:7])


@pytest.mark.slow
def test_writes_summary_table_and_plots(compare_results):
    for name in ("summary.json", "settings.json", "summary.md", "per_problem.jsonl"):
        assert (compare_results / name).stat().st_size > 0, name
    for name in ("memory.png", "accuracy.png", "rewards.png", "compute.png"):
        data = (compare_results / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, name
    summary = json.loads((compare_results / "summary.json").read_text())
    records = summary["runs"]
    assert [(r["method"], r["seed"]) for r in records] == [("base", 0), *((m, 0) for m in METHODS)]
    assert [a["method"] for a in summary["methods"]] == ["base", *METHODS]
    assert all(a["n_seeds"] == 1 and a["sampled_pass1_sd"] is None for a in summary["methods"])
    for record in records:
        assert set(FIELDS) <= record.keys(), (record["method"], set(FIELDS) - record.keys())
        for metric, ci in (("greedy_accuracy", "greedy_ci95"), ("sampled_pass1", "sampled_pass1_ci95")):
            assert 0 <= record[ci][0] <= record[metric] <= record[ci][1] <= 1, (record["method"], metric)
        assert record["accuracy"] == record["sampled_pass1"]  # the headline, as settings.json says
    settings = json.loads((compare_results / "settings.json").read_text())
    assert settings["headline"] == "sampled pass@1" and settings["eval_n"] == 24 and settings["prompts"] == 16
    # where and with what it ran: the commit, a digest of the code, configs and worlds, the CPU and its kernel flags
    assert "commit" in settings and len(settings["code_digest"]) == 64 and settings["cpu"]
    assert settings["load_in_4bit"] is False  # trained, sampled and scored in full precision, as asked
    assert isinstance(settings["kernel_flags"], list)
    table = (compare_results / "summary.md").read_text()
    for method in ("base", *METHODS):
        assert f"| {method} |" in table
    assert settings["versions"]["trl"] in table and "## Settings" in table
    assert f"## What holds\n\n{what_holds(summary)}\n" in table


@pytest.mark.slow
def test_transfer_scores_the_base_and_every_final_adapter_greedy_on_the_other_task(compare_results):
    """--transfer: the base once and each run's final adapter, greedy, on the transfer problems (as make eval scores
    them); their scores per problem, each method against the base as plain arithmetic on them, in the summary's own
    Holm family and its section."""
    settings = json.loads((compare_results / "settings.json").read_text())
    assert settings["transfer"]["task"] == "tiny" and settings["transfer"]["problems"] == 8
    assert settings["transfer"]["sha256"] == sha256(Path(settings["transfer"]["file"]))
    scores = transfer.read(compare_results)
    assert sorted(scores) == sorted([("base", 0), *((m, 0) for m in METHODS)])
    assert all(len(values) == 8 and set(values) <= {0.0, 1.0} for values in scores.values())
    rows = load_task_data(TASKS["tiny"], settings["transfer"]["file"], 8)
    model, tokenizer = load_for_eval(recipe_config("tiny", "grpo")[1]["model_name_or_path"], None, False)
    metrics, records = evaluate_model(model, tokenizer, "tiny", rows)
    assert scores[("base", 0)] == [r["score"] for r in records]  # the base as make eval scores it
    summary = json.loads((compare_results / "summary.json").read_text())
    part = summary["transfer"]
    assert part["shares"]["base"]["mean"] == pytest.approx(metrics["accuracy"])
    for row in part["against_base"]:
        gain = sum(scores[(row["a"], 0)]) / 8 - sum(scores[("base", 0)]) / 8
        assert row["b"] == "base" and row["mean"] == pytest.approx(gain) and "p_holm" in row
    assert len(part["against_base"]) == len(METHODS)
    assert transfer.section(part) in (compare_results / "summary.md").read_text()
    with pytest.raises(SystemExit, match="--transfer gsm8k:nowhere.jsonl: no such file nowhere.jsonl"):
        transfer.plan("gsm8k:nowhere.jsonl")
    with pytest.raises(SystemExit, match=r"--transfer gsm9k:x: no task 'gsm9k'"):
        transfer.plan("gsm9k:x")


@pytest.mark.slow
def test_report_computes_every_number_again_from_the_per_problem_scores(compare_results, tmp_path):
    with pytest.raises(SystemExit, match="no summary.json and settings.json in"):
        main(["--profile", "tiny", "--out", str(tmp_path), "--report"])
    # the published files: the JSON and the per-problem scores (the table's and those at matched compute)
    for path in [*compare_results.glob("*.json"), *compare_results.glob("*per_problem.jsonl")]:
        shutil.copy(path, tmp_path / path.name)
    main(["--profile", "tiny", "--out", str(tmp_path), "--report"])
    for name in ("summary.json", "summary.md"):  # byte for byte
        assert (tmp_path / name).read_bytes() == (compare_results / name).read_bytes(), name
    for name in ("memory.png", "accuracy.png", "rewards.png", "compute.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    # the numbers come from the scores: ORPO's every sample right, and its accuracy, difference and claim follow
    lines = [json.loads(line) for line in (tmp_path / "per_problem.jsonl").read_text().splitlines()]
    for line in lines:
        if line["method"] == "orpo":
            line["sampled_passes"] = line["samples"]
    (tmp_path / "per_problem.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    main(["--profile", "tiny", "--out", str(tmp_path), "--report"])
    summary = json.loads((tmp_path / "summary.json").read_text())
    orpo = next(a for a in summary["methods"] if a["method"] == "orpo")
    base = next(a for a in summary["methods"] if a["method"] == "base")
    assert orpo["sampled_pass1"] == 1.0 and orpo["sampled_pass1_ci95"][1] == 1.0
    assert orpo["sampled_vs_base"] == pytest.approx(1.0 - base["sampled_pass1"])
    assert orpo["sampled_vs_base_claimed"] and orpo["beats_base"]
    assert what_holds(summary) in (tmp_path / "summary.md").read_text()
    (tmp_path / "per_problem.jsonl").write_text('{"method": "orpo", "seed": 0}\n')
    with pytest.raises(
        SystemExit,
        match=r"per_problem.jsonl:1: not a per-problem score \(no problem, greedy, sampled_passes, samples\)",
    ):
        main(["--profile", "tiny", "--out", str(tmp_path), "--report"])


@pytest.mark.parametrize("folder", ["tiny", "tiny-completions", "tiny-code", "tiny-code-completions", "smol"])
def test_every_published_summary_is_what_its_per_problem_scores_make(folder):
    """What --report rewrites, byte for byte, for each published table: every statistic in summary.json computed
    again from per_problem.jsonl, the runs' measured costs as recorded (the README's parts: the rerun-README tests)."""
    out = REPO_ROOT / "results" / "compare" / folder
    again = summary_again(*read_published(out), out)
    assert json.dumps(again, indent=2) + "\n" == (out / "summary.json").read_text()


def eval_records(eval_file) -> list[dict]:
    """A run's evaluation records (eval_*.jsonl): the greedy one of each problem first, then its samples."""
    return [json.loads(line) for line in eval_file.read_text().splitlines()]


def claim_verdicts(reference: dict, summary: dict) -> dict:
    """(a, b, metric) -> what `summary` says of each claim of `reference` (worlds.verdict, as the README reads it)."""
    now = rows_of(summary)
    return {key: verdict(row, now.get(key)) for key, row in rows_of(reference).items() if is_claimed(row)}


def per_problem(eval_file, problems: int) -> dict:
    """Greedy and sampled pass@1 per problem from a run's evaluation records."""
    records = eval_records(eval_file)
    greedy, samples = records[:problems], records[problems:]
    k = len(samples) // problems
    sampled = [sum(r["score"] for r in samples if r["index"] == i) / k for i in range(problems)]
    return {"greedy": [r["score"] for r in greedy], "sampled": sampled}


@pytest.mark.slow
def test_every_difference_is_the_paired_difference_of_the_evaluations_corrected_as_one_family(compare_results):
    summary = json.loads((compare_results / "summary.json").read_text())
    scores = {m: per_problem(compare_results / f"eval_{m}-seed0.jsonl", 24) for m in ("base", *METHODS)}
    rows = summary["versus"]
    pairs = [(a, b) for i, a in enumerate(METHODS) for b in METHODS[i + 1 :]]
    assert [(r["a"], r["b"]) for r in rows] == [pair for pair in pairs for _ in range(2)]
    assert [(r["a"], r["b"]) for r in summary["against_base"]] == [(m, "base") for m in METHODS for _ in range(2)]
    family = summary["against_base"] + rows
    assert summary["family_size"] == len(family) == 30
    table = (compare_results / "summary.md").read_text()
    assert "## Method against method" in table and "## Against the base" in table
    for row in family:
        diffs = [x - y for x, y in zip(scores[row["a"]][row["metric"]], scores[row["b"]][row["metric"]], strict=True)]
        assert abs(row["mean"] - sum(diffs) / 24) < 1e-12 and row["seeds"] == [0] and row["problems"] == 24
        low, high = row["ci95"]
        assert low <= row["mean"] <= high and row["excludes_zero"] == (low > 0 or high < 0)
        # Holm over the 30: never less than the row's own p, at most 30 times it; a claim needs adjusted p < 0.05
        assert row["p"] <= row["p_holm"] <= min(1.0, 30 * row["p"]) + 1e-12
        assert row["claimed"] == (row["p_holm"] < 0.05 and row["excludes_zero"])
        assert (row["detectable"] is None) == row["claimed"]
        if not row["claimed"]:  # 80% power at the level its Holm step tested it (zero where the scores never differ)
            expected = detectable_difference(row["se"], row["df"], row["level"])
            assert row["detectable"] == pytest.approx(expected) and row["detectable"] >= 0
        if row["metric"] == "sampled" and row["b"] != "base":  # the sentence under the table claims only with evidence
            said = sentence(row)
            assert f"- {said}" in table and (" > " in said) == row["claimed"]
            assert ("could have detected" in said) == (not row["claimed"])


def test_a_rerun_is_printed_against_the_published_table():
    folder = REPO_ROOT / "results" / "compare" / "tiny"
    published = read_published(folder)
    summary = json.loads(json.dumps(published[0]))
    settings = dict(published[1])
    assert (settings["load_in_4bit"], settings["budget"]) == (True, "prompts")
    grpo = next(a for a in summary["methods"] if a["method"] == "grpo")
    published_grpo, (_, high) = grpo["sampled_pass1"], grpo["sampled_pass1_ci95"]
    grpo["sampled_pass1"] = high + 0.05  # above the published interval
    settings["kernel_flags"] = ["avx512_bf16", "amx_tile"]
    lines = against_published(summary, settings, published)
    assert "another CPU, numbers may differ" in lines[0]
    # an older table's settings, before the CPU, the precision and the budget were recorded (they ran as the defaults)
    unrecorded = {k: v for k, v in published[1].items() if k not in ("cpu", "kernel_flags", "load_in_4bit", "budget")}
    assert "the published CPU unrecorded" in against_published(summary, settings, (published[0], unrecorded))[0]
    grpo_sampled = next(line for line in lines if line.split()[:3] == ["grpo", "sampled", "pass@1"])
    assert grpo_sampled.endswith("no") and f"{(high + 0.05 - published_grpo) * 100:+6.1f} points" in grpo_sampled
    others = [line for line in lines[2:] if "pass@1" in line and line is not grpo_sampled]
    assert others and all(line.endswith("yes") and "+0.0 points" in line for line in others)
    assert against_published(summary, settings | {"prompts": 16}, published) == [
        "against the published table: not comparable, other settings (prompts 320 -> 16)"
    ]
    assert against_published(summary, settings | {"budget": "completions"}, published) == [
        "against the published table: not comparable, other settings (budget prompts -> completions)"
    ]
    assert against_published(summary, settings | {"load_in_4bit": False}, published) == [
        "against the published table: not comparable, other settings (load_in_4bit True -> False)"
    ]
    assert against_published(summary, settings, read_published(folder / "no-such")) == [
        "against the published table: none to compare with"
    ]


@pytest.mark.slow
def test_records_measured_costs_per_method(compare_results):
    records = {r["method"]: r for r in json.loads((compare_results / "summary.json").read_text())["runs"]}
    assert records["base"]["peak_memory_mb"] is None  # nothing trained, nothing to measure
    # 16 prompts once each: GRPO 8 prompts (64 completions) a step, PPO 8 prompts a step
    assert records["grpo"]["train_steps"] == 2 and records["ppo"]["train_steps"] == 2
    assert records["grpo"]["samples"] == 16 * 8 and records["ppo"]["samples"] == 16
    pairs = sum(1 for _ in open(compare_results / "pairs-seed0.jsonl"))
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
    # compute in the same measures for every method: completions sampled and trained on, CPU seconds
    pairs_cost = json.loads((compare_results / "pairs-seed0.cost.json").read_text())
    assert pairs_cost["completions_generated"] == 16 * 8 and pairs_cost["cpu_seconds"] > 0
    assert records["grpo"]["completions_generated"] == records["grpo"]["completions_trained"] == 16 * 8
    assert records["ppo"]["completions_generated"] == records["ppo"]["completions_trained"] == 16
    for method in ("dpo", "ipo", "orpo"):  # they trained on pairs sampled before: that sampling counts
        r = records[method]
        assert r["completions_generated"] == 16 * 8 and r["completions_trained"] == 2 * r["samples"]
        # the sampling's own CPU seconds, as training counts its own (not its process's imports and model load)
        assert 0 < r["pair_sampling_cpu_seconds"] == pairs_cost["sampling_cpu_seconds"] < pairs_cost["cpu_seconds"]
        assert r["cpu_seconds"] == pytest.approx(r["cpu_seconds_training"] + pairs_cost["sampling_cpu_seconds"])
    for method in ("grpo", "ppo"):
        assert records[method]["cpu_seconds"] == records[method]["cpu_seconds_training"] > 0
        assert records[method]["pair_sampling_cpu_seconds"] is None
    # completion tokens (special tokens not counted): every completion has some and none passes the length limit;
    # GRPO trains once on what it sampled (num_iterations 1), PPO twice (num_ppo_epochs 2 in the tiny config)
    limit = recipe_config("tiny", "grpo")[1]["max_completion_length"]
    for method, passes in (("grpo", 1), ("ppo", 2)):
        r = records[method]
        assert r["completions_generated"] < r["tokens_generated"] <= r["completions_generated"] * limit
        assert r["tokens_trained"] == passes * r["tokens_generated"]
    assert pairs_cost["completions_generated"] < pairs_cost["tokens_generated"] <= 16 * 8 * limit
    for method in ("dpo", "ipo", "orpo"):  # sampled: the pairs' tokens; trained: a chosen and a rejected per pair
        r = records[method]
        assert r["tokens_generated"] == pairs_cost["tokens_generated"]
        assert r["completions_trained"] < r["tokens_trained"] <= r["completions_trained"] * limit
    assert records["dpo"]["tokens_trained"] == records["ipo"]["tokens_trained"] == records["orpo"]["tokens_trained"]
    # PPO trains two networks, policy and critic (on one shared 4-bit base); the others one (the reference is the
    # adapter switched off)
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


@pytest.mark.slow
def test_the_code_comparison_writes_the_same_schema_plus_reward_costs(code_compare_results):
    records = {r["method"]: r for r in json.loads((code_compare_results / "summary.json").read_text())["runs"]}
    assert list(records) == ["base", "grpo", "dpo"]
    for record in records.values():
        assert set(FIELDS) <= record.keys(), (record["method"], set(FIELDS) - record.keys())
    r = records["grpo"]  # it scores completions while training: the sandbox's time is its own
    assert 0 < r["reward_seconds"] < r["train_seconds"] and 0 < r["reward_share"] < 1
    assert r["sandbox_programs_per_second"] > 1 and r["reward_time"]["code_tests"]["completions"] == r["samples"]
    # DPO's pairs were scored before training
    assert records["dpo"]["reward_seconds"] == 0 and records["dpo"]["sandbox_programs_per_second"] is None
    settings = json.loads((code_compare_results / "settings.json").read_text())
    assert settings["profile"] == "tiny-code" and settings["task"] == "tiny-code" and settings["eval_n"] == 24
    for name in ("memory.png", "accuracy.png", "rewards.png", "summary.md"):
        assert (code_compare_results / name).stat().st_size > 1000
    assert "sandbox programs/s" in (code_compare_results / "summary.md").read_text()


@pytest.mark.slow
def test_accuracy_against_compute_is_measured_at_each_checkpoint_on_validation(compare_results):
    summary = json.loads((compare_results / "summary.json").read_text())
    for run in summary["runs"][1:]:
        curve = run["compute_curve"]
        assert curve and [p["step"] for p in curve] == sorted(p["step"] for p in curve)
        assert all(0 < p["train_seconds"] <= run["train_seconds"] + 1 for p in curve)
        assert all(0 <= p["validation_sampled_pass1"] <= 1 for p in curve)
        assert curve[-1]["samples"] >= curve[0]["samples"] > 0
    assert 0 < summary["base_validation_sampled_pass1"] < 1
    settings = json.loads((compare_results / "settings.json").read_text())
    assert settings["validation"].endswith("validation.jsonl") and settings["seeds"] == 1


def measured(method: str, seed: int, seconds: float | None) -> dict:
    record = {"method": method, "seed": seed, "completion_length_mean": 50.0, "completion_length_base": 48.0}
    record["clipped_share"] = 0.0
    if seconds is not None:
        record |= {"peak_memory_mb": 600.0 + seed, "train_seconds": seconds, "seconds_per_step": seconds / 40}
        record |= {"reward_first": 0.5, "reward_last": 0.7, "models_in_memory": 1, "samples": 2560}
    return record


def test_every_statistic_comes_from_the_per_problem_scores_as_a_hand_computation_says():
    # three seeds x 4 problems; the base drawn again under each seed, GRPO better on every seed
    base = [[0.5, 0.5, 0.0, 1.0], [0.5, 0.0, 0.0, 1.0], [0.5, 0.5, 0.5, 1.0]]
    grpo = [[1.0, 1.0, 0.5, 1.0], [1.0, 0.5, 0.5, 1.0], [1.0, 1.0, 0.5, 1.0]]
    scores = {}
    for seed in range(3):
        scores[("base", seed)] = {"greedy": [1, 0, 0, 1], "sampled": base[seed], "samples": 2}
        scores[("grpo", seed)] = {"greedy": [1, 1, 0, 1], "sampled": grpo[seed], "samples": 2}
    records = [measured("base", s, None) for s in range(3)] + [measured("grpo", s, 200.0 + 10 * s) for s in range(3)]
    summary = from_scores(records, scores, ["grpo"], None)
    methods = {a["method"]: a for a in summary["methods"]}
    g = methods["grpo"]
    # by hand: seed means 0.875, 0.75, 0.875 -> mean 0.8333, sd over seeds 0.0722
    assert g["n_seeds"] == 3 and g["sampled_pass1"] == pytest.approx(0.8333, abs=1e-4)
    assert g["sampled_pass1_sd"] == pytest.approx(0.0722, abs=1e-4)
    assert 0 <= g["sampled_pass1_ci95"][0] < g["sampled_pass1"] < g["sampled_pass1_ci95"][1] <= 1
    expected = crossed_difference(grpo, base)
    assert g["sampled_vs_base"] == pytest.approx(expected["mean"])
    assert g["sampled_vs_base_ci95"] == pytest.approx(expected["ci95"])
    # a family of two (sampled and greedy against the base): Holm doubles the smaller p
    rows = {r["metric"]: r for r in summary["against_base"]}
    smaller = min(rows.values(), key=lambda r: r["p"])
    assert summary["family_size"] == 2 and smaller["p_holm"] == pytest.approx(min(1.0, 2 * smaller["p"]))
    assert g["beats_base"] == (rows["sampled"]["claimed"] and rows["sampled"]["mean"] > 0)
    assert g["train_seconds"] == pytest.approx(210.0) and g["peak_memory_mb"] == pytest.approx(601.0)
    assert methods["base"]["n_seeds"] == 3 and methods["base"]["sampled_pass1"] == pytest.approx(0.5)
    # each run against the base drawn under its own seed
    run = next(r for r in summary["runs"] if (r["method"], r["seed"]) == ("grpo", 1))
    assert run["sampled_vs_base"] == pytest.approx((0.5 + 0.5 + 0.5 + 0) / 4)


def test_a_preregistered_primary_family_is_corrected_apart_from_the_secondary_one(tmp_path):
    """#66's table: the contrasts a pre-registration names (`--primary`) are one Holm family, every other difference
    another. By hand: Holm over the two primary p's (the smaller doubled, the larger at least that), and the secondary
    family's smallest p times its own size, not the table's."""
    rng = random.Random(66)
    gains = {"base": 0.0, "grpo": 0.3, "ppo": 0.1, "ipo": 0.15}
    scores = {}
    for seed in range(3):
        for method, gain in gains.items():
            sampled = [min(1.0, max(0.0, 0.4 + gain + rng.choice((-0.25, 0.0, 0.25)))) for _ in range(30)]
            scores[(method, seed)] = {"greedy": [round(x) for x in sampled], "sampled": sampled, "samples": 4}
    records = [measured("base", s, None) for s in range(3)]
    records += [measured(m, s, 200.0) for m in ("grpo", "ppo", "ipo") for s in range(3)]
    named = [["grpo", "base", "sampled"], ["base", "ipo", "sampled"]]  # either order: the table writes ipo - base
    one = from_scores(records, scores, ["grpo", "ppo", "ipo"], None)
    split = from_scores(records, scores, ["grpo", "ppo", "ipo"], None, primary=named)
    assert one["family_size"] == split["family_size"] == 12 and "families" not in one
    assert split["families"] == {"primary": 2, "secondary": 10}
    rows = split["against_base"] + split["versus"]
    primary = [r for r in rows if r["family"] == "primary"]
    assert [(r["a"], r["b"], r["metric"]) for r in primary] == [
        ("grpo", "base", "sampled"),
        ("ipo", "base", "sampled"),
    ]
    low, high = sorted(primary, key=lambda r: r["p"])
    assert low["p_holm"] == pytest.approx(min(1.0, 2 * low["p"]))
    assert high["p_holm"] == pytest.approx(max(low["p_holm"], high["p"]))
    secondary = [r for r in rows if r["family"] == "secondary"]
    smallest = min(secondary, key=lambda r: r["p"])
    assert len(secondary) == 10 and smallest["p_holm"] == pytest.approx(min(1.0, 10 * smallest["p"]))
    same = next(r for r in one["against_base"] if (r["a"], r["metric"]) == ("grpo", "sampled"))
    assert same["p"] == pytest.approx(low["p"] if low["a"] == "grpo" else high["p"])  # the same difference, only
    assert same["p_holm"] >= next(r for r in primary if r["a"] == "grpo")["p_holm"]  # a smaller family's correction
    # what a reader sees: the primary section (its rows alone), the P beside their Holm p, the families in words
    section = "\n".join(versus.primary_section(split))
    assert section.startswith("## Primary contrasts (pre-registered)") and section.count("\n| ") == 1 + 2
    assert versus.primary_section(one) == []
    table = "\n".join(versus.markdown(split["against_base"], "## Against the base"))
    assert table.count(" (P) |") == 2
    holds = " ".join(what_holds(split).split())
    assert "Holm over its family: the 2 pre-registered primary differences, or the 10 secondary ones" in holds
    # named wrongly, it says so in one line before anything trains
    with pytest.raises(SystemExit, match=r"primary contrast \['grpo', 'dpo', 'sampled'\]: not a difference"):
        read_primary_file(tmp_path, {"primary_contrasts": [["grpo", "dpo", "sampled"]]}, ["grpo", "ipo"])
    with pytest.raises(SystemExit, match=r"--primary .*plan.json: not a pre-registration with a `primary_contrasts`"):
        read_primary_file(tmp_path, {"primary": []}, ["grpo", "ipo"])
    with pytest.raises(SystemExit, match=r"primary contrast \['ipo', 'grpo', 'greedy'\]: named twice"):
        named_twice = [["grpo", "ipo", "greedy"], ["ipo", "grpo", "greedy"]]
        read_primary_file(tmp_path, {"primary_contrasts": named_twice}, ["grpo", "ipo"])
    contrasts, source = read_primary_file(tmp_path, {"primary_contrasts": named}, ["grpo", "ppo", "ipo"])
    assert contrasts == [["grpo", "base", "sampled"], ["ipo", "base", "sampled"]] and len(source["sha256"]) == 64


def read_primary_file(folder: Path, plan: dict, methods: list[str]):
    path = folder / "plan.json"
    path.write_text(json.dumps(plan))
    return read_primary(str(path), methods)


@pytest.mark.slow
def test_sweep_writes_its_file_and_chooses_on_validation(tiny_world, tmp_path):
    out = tmp_path / "sweep"
    out.mkdir()
    earlier = {"learning_rate": 1e-3, "validation_sampled_pass1": 0.5, "ci95": [0.4, 0.6], "chosen": True}
    # an earlier sweep: its GRPO row is kept, its DPO row replaced by this sweep's
    (out / "sweep.json").write_text(json.dumps([{"method": "grpo", **earlier}, {"method": "dpo", **earlier}]))
    command = ["--profile", "tiny", "--sweep", "--prompts", "16", "--eval_limit", "12", "--validation_k", "2"]
    command += ["--methods", "dpo", "--learning_rates", "1e-4", "5e-4", "--sweep_seeds", "2", "--sweep_extend", "0"]
    command += ["--key_points", "0", "--load_in_4bit", "false", "--out", str(out)]
    run_main("studies.comparison", *command)
    rows = json.loads((out / "sweep.json").read_text())
    assert [(r["method"], r["learning_rate"]) for r in rows] == [("grpo", 1e-3), ("dpo", 1e-4), ("dpo", 5e-4)]
    assert rows[0] == {"method": "grpo", **earlier}
    scored = rows[1:]
    assert sum(r["chosen"] for r in scored) == 1 and all(r["validation_n"] == 12 for r in scored)
    best = max(scored, key=lambda r: r["validation_sampled_pass1"])
    assert best["chosen"] and best["at_edge"]  # two points and no extension: the best is at an edge, and said to be
    for row in scored:  # every point at both seeds, the mean of theirs, where it ran
        assert row["seeds"] == [0, 1] and len(row["per_seed"]) == 2 and row["key"] == "learning_rate"
        assert row["validation_sampled_pass1"] == pytest.approx(sum(row["per_seed"]) / 2)
        assert 0 <= row["ci95"][0] <= row["validation_sampled_pass1"] <= row["ci95"][1] <= 1
        assert row["measured"]["commit"] and row["measured"]["cpu"]
    assert (out / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # DPO's learning rates trained on one set of pairs per seed, each sampled once
    pairs = sorted(p.relative_to(out) for p in out.rglob("pairs-seed*.jsonl"))
    assert pairs == [Path("sweep/pairs-seed0.jsonl"), Path("sweep/pairs-seed1.jsonl")]
    kept = ("summary.json", "pairs-seed0.jsonl", "pairs-seed1.jsonl")
    trained = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.name in kept}

    # Resumed with beta at 2 points: the learning rates and pairs are kept from sweep.json and the folder, beta's
    # point at the config's value is the chosen rate's own run, and only the one below it trains (at both seeds).
    run_main("studies.comparison", *command[:-6], "--key_points", "2", "--resume", *command[-4:])
    again = json.loads((out / "sweep.json").read_text())
    assert again[:3] == rows
    assert {p: p.stat().st_mtime_ns for p in trained} == trained
    assert len(trained) == 2 * 2 + 2 and len([p for p in out.rglob("summary.json") if p not in trained]) == 2
    beta = {r["value"]: r for r in again if r.get("key") == "beta"}
    centre = recipe_config("tiny", "dpo")[1]["beta"]
    assert sorted(beta) == key_grid(centre, 2) and sum(r["chosen"] for r in beta.values()) == 1
    lower = key_grid(centre, 2)[0]
    assert beta[centre]["per_seed"] == best["per_seed"] and beta[centre]["same_run_as"] == "learning_rate"
    assert beta[lower]["learning_rate"] == best["value"] and "same_run_as" not in beta[lower]
    # the validation split it scored on shares no problem with training or the held-out test
    data = tiny_world / "data"
    questions = {
        name: {json.loads(line)["question"] for line in (data / f"{name}.jsonl").read_text().splitlines()}
        for name in ("train", "validation", "test")
    }
    assert len(questions["validation"]) == 200
    assert not questions["validation"] & questions["train"] and not questions["validation"] & questions["test"]


def test_whether_a_tiny_worlds_claims_hold_on_a_real_model_is_read_from_both_rows():
    tiny = json.loads((REPO_ROOT / "results" / "compare" / "tiny" / "summary.json").read_text())
    claims = [key for key, row in rows_of(tiny).items() if said(row).count(">")]
    between = [key for key in claims if key[1] != "base"]
    assert len(between) >= 3 and len(claims) > len(between)  # claims against the base count too
    real = copy.deepcopy(tiny)
    rows = {(r["a"], r["b"], r["metric"]): r for r in real["versus"]}
    flipped, unseen = rows[between[0]], rows[between[1]]
    flipped["mean"], flipped["ci95"] = -flipped["mean"], [-x for x in reversed(flipped["ci95"])]
    unseen |= {"claimed": False, "excludes_zero": False, "detectable": 2 * abs(unseen["mean"])}
    lines = transfer_table(tiny, real, "tiny", "smol")
    table = [line for line in lines if line.startswith("| ") and not line.startswith("| claim")]
    assert len(table) == len(claims)  # one line per claim of the tiny world
    verdicts = [line.rsplit("| ", 1)[1].strip(" |") for line in table]
    assert verdicts.count("flips") == 1 and sum(v.startswith("not told apart (it could") for v in verdicts) == 1
    assert verdicts.count("holds") == len(claims) - 2
    assert f"Of the {len(claims)} claims of `tiny`: {len(claims) - 2} holds, 1 flips, 1 not told apart." in lines
    # a real model's table also says how many it could test (all but the one not told apart) and how many point the
    # tiny world's way (all but the flipped one)
    said_so = transfer_table(tiny, real, "tiny", "smol", agreement=True)
    tally = next(line for line in said_so if line.startswith("Of the "))
    testable = "Testable on `smol` (claimed there, or it could have detected a difference as large as `tiny`'s): "
    assert f"{testable}{len(claims) - 1} of {len(claims)}." in tally
    assert tally.endswith(f"The difference on `smol` has `tiny`'s sign in {len(claims) - 1} of {len(claims)}.")
    # the real model's own claim the tiny world did not make is said too
    quiet = next(r for r in real["versus"] if (r["a"], r["b"], r["metric"]) not in claims)
    quiet |= {"claimed": True, "excludes_zero": True}
    assert any(
        line.startswith("Claimed on `smol` and not on `tiny`: ") for line in transfer_table(tiny, real, "tiny", "smol")
    )


@pytest.mark.slow
def test_the_real_models_report_checks_the_published_tiny_table(compare_results, tmp_path):
    summary = json.loads((compare_results / "summary.json").read_text())
    settings = json.loads((compare_results / "settings.json").read_text())
    write_report(summary, settings | {"profile": "smol"}, None, tmp_path)
    text = (tmp_path / "summary.md").read_text()
    assert "## Does `tiny` hold on `smol`?" in text
    write_report(summary, settings, None, tmp_path)  # the tiny world's own table checks nothing
    assert "## Does" not in (tmp_path / "summary.md").read_text()


@pytest.mark.parametrize("profile", ["tiny", "tiny-code"])
def test_published_tables_are_their_summary_json(profile):
    """The tables in results/compare/<profile>/README.md, and the sentences under them that say what holds, are
    exactly what `headline_table` and `what_holds` make of the published summary.json (and the results README's
    accuracy against compute is `compute_lines`'): a rerun that changes the numbers changes the tables and what they
    are said to show. (The repository's README shows the pre-registered rerun: its own test.)"""
    folder = REPO_ROOT / "results" / "compare" / profile
    summary = json.loads((folder / "summary.json").read_text())
    table, holds = headline_table(summary), what_holds(summary)
    assert table.count("\n") == 7 and "| grpo | " in table and "| ipo | " in table
    assert {r["seeds"] == [0, 1, 2, 3, 4] for r in summary["versus"]} == {True}  # five seeds, every pair
    assert len(summary["versus"]) == 2 * 10 and "Method against method" in holds
    readme = (folder / "README.md").read_text()
    assert table in readme and holds in readme
    compute = compute_lines(summary)  # accuracy against compute, in words
    assert len(compute) == 1 + 5 and "\n".join(compute) in readme


@pytest.mark.parametrize("profile", ["tiny", "tiny-code", "smol"])
def test_the_configs_train_at_the_learning_rate_their_published_sweep_chose(profile):
    """Each profile's recipe configs train at the value its published sweep chose on validation, for every method
    and key swept (the real model's sweep: its config's former rate x 1/3, 1, 3 on one seed)."""
    import yaml

    rows = json.loads((REPO_ROOT / "results" / "compare" / profile / "sweep.json").read_text())
    chosen = {(r["method"], r["key"]): r for r in rows if r["chosen"]}
    assert {(r["method"], r["key"]) for r in rows} == set(chosen)  # one choice for every method and key swept
    for (method, key), row in chosen.items():
        best = max(r["validation_sampled_pass1"] for r in rows if (r["method"], r["key"]) == (method, key))
        assert row["validation_sampled_pass1"] == best
        config = yaml.safe_load((REPO_ROOT / "recipes" / "configs" / profile / f"{method}.yaml").read_text())
        trained = config.get(key) or (config["learning_rate"] if key == "value_learning_rate" else None)
        assert trained == row["value"], (profile, method, key)
    # every row says where it ran: the commit and the CPU's kernel flags
    assert all(row["measured"]["commit"] and row["measured"]["kernel_flags"] for row in rows)


def test_the_real_model_s_sweep_command_reproduces_its_published_grid():
    """`make sweep PROFILE=smol` checks the points its published sweep.json holds (the grid's centres, the configs'
    former rates, are written out, since the configs moved to the rates it chose), so `--resume` on that file
    measures nothing again."""
    rows = json.loads((REPO_ROOT / "results" / "compare" / "smol" / "sweep.json").read_text())
    grid, plan = sweep_plan("smol", list(METHODS))
    assert grid == {m: sorted(r["value"] for r in rows if r["method"] == m) for m in METHODS}
    assert plan == {"seeds": 1, "extend": 0, "key_points": 0} and all(r["seeds"] == [0] for r in rows)


def test_what_the_math_readme_reads_from_its_table_holds():
    """The hand-written reading under the math table and its sweep (results/compare/tiny/README.md), held to
    summary.json and sweep.json."""
    folder = REPO_ROOT / "results" / "compare" / "tiny"
    summary = json.loads((folder / "summary.json").read_text())
    methods = {a["method"]: a for a in summary["methods"]}
    versus = {(r["a"], r["b"], r["metric"]): r for r in summary["versus"]}
    # PPO and GRPO not told apart in either metric, though GRPO sampled 8x the completions
    assert not versus["grpo", "ppo", "sampled"]["claimed"] and not versus["grpo", "ppo", "greedy"]["claimed"]
    assert methods["grpo"]["completions_generated"] == 8 * methods["ppo"]["completions_generated"]
    for rl in ("grpo", "ppo"):  # both RL methods beat every preference method in sampled pass@1
        for preference in ("dpo", "ipo", "orpo"):
            row = versus[rl, preference, "sampled"]
            assert row["claimed"] and row["mean"] > 0, (rl, preference)
    assert not any(r["claimed"] for r in summary["versus"] if r["metric"] == "greedy")  # no two told apart
    for method in ("dpo", "ipo", "orpo"):  # greedy +23 to +25 points, sampled +4 to +5
        assert (
            0.225 <= methods[method]["greedy_vs_base"] < 0.255 and 0.035 <= methods[method]["sampled_vs_base"] < 0.055
        )
        assert methods[method]["greedy_vs_base"] > 3 * methods[method]["sampled_vs_base"]
    assert not methods["ipo"]["sampled_vs_base_claimed"]
    # DPO's and ORPO's beta extended once more: DPO's 8.1 below 2.7 (inside); ORPO's up to 72.9, 219 within 0.1
    rows = json.loads((folder / "sweep.json").read_text())
    assert not any(r.get("at_edge") for r in rows)
    beta = {r["value"]: r for r in rows if (r["method"], r["key"]) == ("dpo", "beta")}
    assert (
        max(beta) == 8.1
        and beta[2.7]["chosen"]
        and beta[8.1]["validation_sampled_pass1"] < beta[2.7]["validation_sampled_pass1"]
    )
    beta = {r["value"]: r for r in rows if (r["method"], r["key"]) == ("orpo", "beta")}
    score = {value: r["validation_sampled_pass1"] for value, r in beta.items()}
    assert max(beta) == 219 and beta[72.9]["chosen"] and abs(score[72.9] - score[2.7] - 0.025) < 0.005
    assert abs(score[219] - score[72.9]) < 0.001 and beta[219]["per_seed"][0] == beta[72.9]["per_seed"][0]


# The generated parts every same-prompts table's README opens with, in order.
HEAD_PARTS = ["provenance", "sweep", "table", "holds", "seeds", "sharpening"]


@pytest.mark.parametrize("profile", ["tiny", "tiny-code"])
def test_a_rerun_readme_is_its_json(profile):
    """A rerun's README (results/compare/<profile>) carries the generated blocks of its own files: where and in how
    long it ran, the sweep, every difference with its Holm p, and each claim of the table it replaced against this
    one."""
    folder = REPO_ROOT / "results" / "compare" / profile
    readme = (folder / "README.md").read_text()
    names = [m[1] for m in PART.finditer(readme)]
    assert names == [*HEAD_PARTS, "replaced", "compute", "against-base", "versus"]
    assert filled(readme, folder) == readme  # every part is what its files make of it now
    summary = json.loads((folder / "summary.json").read_text())
    replaced = "\n".join(
        replaced_section(json.loads((folder / "replaced.json").read_text()), summary, "commit 172e0fb, 5 seeds")
    )
    assert replaced in readme
    assert len(read_scores(folder)) == 6 * 5  # base and five methods, five seeds: every score behind the table
    # docs/comparison.md's account of it, held to the same tally
    tally = next(line for line in replaced.splitlines() if line.startswith("Of the "))
    kinds = "holds|not seen|consistent|not told apart|flips"
    counts = dict((what, int(n)) for n, what in re.findall(rf"(\d+) ({kinds})", tally))
    claims = int(re.search(r"Of the (\d+) claims", tally).group(1))
    docs = " ".join((REPO_ROOT / "docs" / "comparison.md").read_text().split())
    said = docs.split(f"`results/compare/{profile}/`: rerun", 1)[1].split("- `results/compare/", 1)[0]
    assert f"of {claims} claims, {counts['holds']} hold, {counts['not seen']} are not seen" in said
    for kind in ("consistent", "not told apart"):  # each other verdict the run gave, counted as the tally counts it
        n = counts.get(kind, 0)
        assert n == 0 or f"{n} {'is' if n == 1 else 'are'} {kind}" in said, kind


def test_the_real_models_readme_is_its_json():
    """results/compare/smol: the real model's table, three seeds, every run's records, pairs and evaluations kept, its
    README's generated parts what its files make of them, among them each claim of the tiny math table beside the
    same difference here; docs/comparison.md's account held to that tally."""
    folder = REPO_ROOT / "results" / "compare" / "smol"
    summary = json.loads((folder / "summary.json").read_text())
    settings = json.loads((folder / "settings.json").read_text())
    assert settings["profile"] == "smol" and settings["prompts"] == 56 and settings["eval_n"] == 100
    readme = (folder / "README.md").read_text()
    names = [m[1] for m in PART.finditer(readme)]
    assert names == [*HEAD_PARTS, "worlds", "against-base", "versus"]
    assert filled(readme, folder) == readme
    scores = read_scores(folder)
    assert sorted(scores) == sorted((m, s) for m in ("base", *METHODS) for s in range(3))
    for (method, seed), score in scores.items():  # every score is its run's kept evaluation, problem by problem
        kept = per_problem(folder / f"eval_{method}-seed{seed}.jsonl", 100)
        assert score["greedy"] == kept["greedy"] and score["sampled"] == pytest.approx(kept["sampled"])
        if method != "base":
            assert (folder / f"{method}-seed{seed}" / "summary.json").is_file()
    tiny = json.loads((REPO_ROOT / "results" / "compare" / "tiny" / "summary.json").read_text())
    worlds = transfer_table(tiny, summary, "tiny", "smol", agreement=True)
    assert "\n".join(worlds) in readme
    tally = next(line for line in worlds if line.startswith("Of the "))
    kinds = "holds|not seen|consistent|not told apart|flips"
    counts = dict((what, int(n)) for n, what in re.findall(rf"(\d+) ({kinds})", tally))
    said_there = docs_entry("smol")
    claims = int(re.search(r"Of the (\d+) claims", tally).group(1))
    assert f"of the tiny math table's {claims} claims, {counts.get('holds', 0)} hold" in said_there
    assert f"{counts.get('not seen', 0)} are not seen" in said_there
    assert f"{counts.get('consistent', 0)} is consistent" in said_there
    assert f"{counts.get('not told apart', 0)} are not told apart" in said_there
    # the two claims, and that neither holds on the seeds alone
    assert all(r["crossed_only"] for r in summary["against_base"] + summary["versus"] if r["claimed"])
    assert "both only under the crossed variance" in " ".join(readme.split())
    main_readme = " ".join((REPO_ROOT / "README.md").read_text().split())
    family = summary["against_base"] + summary["versus"]
    assert f"{sum(r['claimed'] for r in family)} of {len(family)} differences claimed" in main_readme
    none = "none holds there and none flips" if not counts.get("holds") and not counts.get("flips") else "?"
    assert f"of the tiny table's {claims} claims, {none}" in main_readme
    # the hand-written reading, held to the runs and their evaluations
    runs = {(r["method"], r["seed"]): r for r in summary["runs"]}
    text = " ".join(readme.split())
    for method in ("grpo", "ppo"):
        greedy = ", ".join(f"{runs[method, s]['greedy_accuracy']:.1%}" for s in range(3))
        assert greedy.rsplit(", ", 1)[0] in text, method
    grpo = next(r for r in summary["against_base"] if (r["a"], r["metric"]) == ("grpo", "sampled"))
    assert f"+{grpo['mean']:.1%} points with an interval from {grpo['ci95'][0]:+.1%}".replace("%", "") in text
    claimed = {(r["a"], r["b"], r["metric"]) for r in summary["against_base"] + summary["versus"] if r["claimed"]}
    assert claimed == {("ipo", "base", "sampled"), ("ipo", "orpo", "sampled")}
    smol_doc = " ".join((REPO_ROOT / "docs" / "smol.md").read_text().split())  # its one-seed table points here
    assert "only IPO's sampled gain over the base and IPO over ORPO in sampled pass@1 are claimed" in smol_doc
    below = {
        key
        for key, r in runs.items()
        if key[0] != "base" and r["greedy_accuracy"] < runs["base", 0]["greedy_accuracy"]
    }
    assert below == {("ppo", 1), ("ppo", 2), ("grpo", 2)}
    seeds_part = readme.split("<!-- generated: seeds -->")[1].split("<!-- end -->")[0]  # the failures, counted
    assert "| grpo | 60.0% / 74.0% | 53.2% / 66.0% | 30.2% / 29.0% | 53.2% / 66.0% | 0 of 3, 1 of 3 |" in seeds_part
    assert "| 1 of 3, 2 of 3 |" in seeds_part.split("| ppo |")[1].splitlines()[0]
    assert f"below the base's greedy accuracy ({runs['base', 0]['greedy_accuracy']:.1%})" in text
    assert min(below, key=lambda key: runs[key]["greedy_accuracy"]) == ("ppo", 1)  # "the lowest"
    lengths = {
        n: json.loads((folder / f"eval_{n}.json").read_text()) for n in ("base-seed1", "ppo-seed1", "grpo-seed2")
    }
    base, ppo = lengths["base-seed1"], lengths["ppo-seed1"]
    assert (
        f"{ppo['completion_length_mean']:.1f} tokens against {base['completion_length_mean']:.1f}; "
        f"{ppo['clipped_share']:.1%} cut at the 128-token limit, the base's {base['clipped_share']:.1%}"
    ) in text
    assert (
        f"seed 2 wrote the shortest of any run ({lengths['grpo-seed2']['completion_length_mean']:.1f} tokens)" in text
    )
    greedy = {n: eval_records(folder / f"eval_{n}-seed2.jsonl")[:100] for n in ("base", "grpo")}
    lost = [g for b, g in zip(greedy["base"], greedy["grpo"], strict=True) if b["score"] and not g["score"]]
    gold = [g["gold"].split("####")[-1].strip() for g in lost]
    kept_right = sum(
        bool(re.search(rf"(?<![\d.]){re.escape(a)}(?![\d.])", g["completion"]))
        for a, g in zip(gold, lost, strict=True)
    )
    assert f"of the {len(lost)} problems the base's greedy answer got right and its did not, {kept_right} have" in text
    for method in ("ipo", "dpo", "orpo"):  # the preference methods' greedy accuracy over their seeds
        scores = [runs[method, s]["greedy_accuracy"] for s in range(3)]
        said = ", ".join(f"{g:.1%}" for g in scores) if method == "ipo" else f"{min(scores):.1%} to {max(scores):.1%}"
        assert f"{method.upper()} {said}" in text, method
    assert min(r["completion_length_mean"] for k, r in runs.items() if k[0] != "base") == pytest.approx(23.53)
    assert settings["steps"] == {"grpo": 14, "ppo": 7}
    assert f"2 took {settings['seconds_this_invocation']:,.0f} s here" in text  # the last invocation: seeds 1 and 2


def comparison_docs() -> str:
    """docs/comparison.md, whitespace folded as the tests read it."""
    return " ".join((REPO_ROOT / "docs" / "comparison.md").read_text().split())


def docs_entry(folder: str) -> str:
    """docs/comparison.md's account of one published folder under results/compare/ (its list item)."""
    return comparison_docs().split(f"- `results/compare/{folder}/`:", 1)[1].split("- `results/compare/", 1)[0]


# Each pre-registered rerun (results/compare/preregistration.json) and the published table its claims are read against.
RERUNS = {
    "tiny-fresh": "results/compare/tiny",
    "tiny-fresh-completions": "results/compare/tiny-completions",
    "tiny-code-fresh": "results/compare/tiny-code",
    "tiny-code-fresh-completions": "results/compare/tiny-code-completions",
}
RERUN_PARTS = {
    "prompts": ["provenance", "sweep", "table", "holds", "seeds", "matched", "sharpening", "replication"],
    "completions": ["provenance", "table", "holds", "seeds", "matched", "budgets", "replication"],
}


@pytest.mark.parametrize("name", sorted(RERUNS))
def test_a_preregistered_rerun_is_what_its_preregistration_named_and_its_readme_its_json(name):
    """A rerun the pre-registration named: the command it named, its fresh problems (their hash in settings.json and in
    every evaluation kept), the seeds it named (none its sweep tuned on), the settings its sweep chose; every score
    behind the table its run's kept evaluation; and its README's generated parts what its files make of them: a part
    per seed, held-out accuracy at matched CPU seconds for GRPO, PPO and DPO, the pre-registered sharpening test, and
    each claim of the published table read against it."""
    folder = REPO_ROOT / "results" / "compare" / name
    plan = json.loads((REPO_ROOT / "results" / "compare" / "preregistration.json").read_text())
    table = next(t for t in plan["tables"] if t["out"] == f"results/compare/{name}")
    settings = json.loads((folder / "settings.json").read_text())
    summary = json.loads((folder / "summary.json").read_text())
    readme = (folder / "README.md").read_text()
    assert table["command"] in " ".join(readme.split())
    assert (settings["profile"], settings["budget"]) == (table["profile"], table["budget"])
    digest = plan["held_out"][table["profile"]]["sha256"]
    assert settings["heldout_sha256"] == digest
    sweep = folder.with_name(f"{table['profile']}-fresh") / "sweep.json"
    assert settings["tuned"] == chosen_settings(sweep, METHODS)
    tuned_on = {seed for row in json.loads(sweep.read_text()) for seed in row["seeds"]}
    scores = read_scores(folder)
    assert sorted(scores) == sorted((m, s) for m in ("base", *METHODS) for s in plan["seeds"]["tables"])
    assert not tuned_on & {seed for _, seed in scores}
    for (method, seed), score in scores.items():  # every score is its run's kept evaluation, on the fresh problems
        kept = folder / f"eval_{method}-seed{seed}.jsonl"
        assert json.loads(kept.with_suffix(".json").read_text())["heldout_sha256"] == digest
        assert per_problem(kept, 200) == {"greedy": score["greedy"], "sampled": pytest.approx(score["sampled"])}
    names = [m[1] for m in PART.finditer(readme)]
    assert names == [
        *RERUN_PARTS[table["budget"]],
        "compute",
        *(["against-base"] if table["budget"] == "prompts" else []),
        "versus",
    ]
    assert f"<!-- generated: replication ({RERUNS[name]}) -->" in readme
    assert filled(readme, folder) == readme
    assert {r["method"] for r in summary["matched"]["runs"]} == {"grpo", "ppo", "dpo"}
    assert (folder / "matched_per_problem.jsonl").is_file()
    if table["budget"] == "prompts":
        assert "<!-- generated: sharpening (pre-registered) -->" in readme
    else:  # its words on PPO at matched compute, held to the runs: a seed is read at its start exactly where its
        # first checkpoint came after the budget
        budget = summary["matched"]["cpu_seconds"]
        ppo_runs = [r for r in summary["matched"]["runs"] if r["method"] == "ppo"]
        for run in ppo_runs:
            lines = (folder / f"ppo-seed{run['seed']}" / "checkpoints.jsonl").read_text().splitlines()
            assert (run["step"] == 0) == (json.loads(lines[0])["cpu_seconds"] > budget), run
        at_start = sum(r["step"] == 0 for r in ppo_runs)
        seeds = "" if at_start == len(ppo_runs) else f" on {at_start} of its {len(ppo_runs)} seeds"
        assert f"At matched compute this budget reads PPO at its start{seeds}" in " ".join(readme.split())
        # docs/comparison.md's account: the budget's and the replication's tallies, PPO's sampled pass@1 under each
        # budget and its CPU seconds' ratio
        prompts = json.loads((folder.with_name(f"{table['profile']}-fresh") / "summary.json").read_text())
        there = docs_entry(name)
        kept = list(claim_verdicts(prompts, summary).values())
        earlier = json.loads((REPO_ROOT / RERUNS[name] / "summary.json").read_text())
        judged = list(claim_verdicts(earlier, summary).values())
        if kept:
            assert f"holds under it ({kept.count('holds')} of {len(kept)})" in there
            assert f"{len(judged)} claims, {judged.count('holds')} hold and 1 is not told apart" in there
        else:  # nothing claimed under the same prompts: every published claim not seen
            assert all(v.startswith("not seen") for v in judged)
            assert f'each of the published same-completions table\'s {len(judged)} claims reads "not seen"' in there
        ppo, before = ({a["method"]: a for a in s["methods"]}["ppo"] for s in (summary, prompts))
        assert f"from {before['sampled_pass1']:.1%} to {ppo['sampled_pass1']:.1%} sampled pass@1" in there
        assert f"for {ppo['cpu_seconds'] / before['cpu_seconds']:.1f}x its CPU seconds" in there
        if not kept:  # and its README says the same
            said = " ".join(readme.split())
            assert f"from {before['sampled_pass1']:.1%} to {ppo['sampled_pass1']:.1%} sampled pass@1" in said
            assert f"for {ppo['cpu_seconds'] / before['cpu_seconds']:.1f}x its CPU seconds" in said
            assert f'each of the published same-completions table\'s {len(judged)} claims reads "not seen"' in said
    if folder == MAIN_README_SHOWS:
        main_readme = (REPO_ROOT / "README.md").read_text()
        assert [m[1] for m in PART.finditer(main_readme)] == ["table", "holds"]
        assert filled(main_readme, folder) == main_readme  # the repository's README shows this table
        # and says where, in how long, on which problems and seeds it ran
        said = " ".join(main_readme.split())
        assert f"commit {settings['commit'][:7]}, " in said and f"{settings['seconds']:,.0f} s:" in said
        seeds = plan["seeds"]["tables"]
        assert f"seeds {seeds[0]}-{seeds[-1]}" in said and "pre-registered" in said
        earlier = json.loads((REPO_ROOT / RERUNS[name] / "summary.json").read_text())  # how many of its claims hold
        judged = list(claim_verdicts(earlier, summary).values())
        assert (
            f"{judged.count('holds')} of the earlier [tiny/]({RERUNS[name]}/README.md)'s {len(judged)} claims" in said
        )


def test_a_readme_part_left_stale_is_written_again_from_the_files(tmp_path):
    """--report's README step: a generated part that no longer says what the folder's files say is written again,
    the prose around it kept; a part with no such name, or whose file is missing, is one line naming it."""
    folder = tmp_path / "tiny"
    shutil.copytree(REPO_ROOT / "results" / "compare" / "tiny", folder)
    readme = folder / "README.md"
    published = readme.read_text()
    assert not write_readme(readme, folder)  # already what its files say
    summary = json.loads((folder / "summary.json").read_text())
    summary["methods"][1]["sampled_pass1"] = 0.5  # grpo's headline, changed as a rerun would
    (folder / "summary.json").write_text(json.dumps(summary))
    assert write_readme(readme, folder)
    text = readme.read_text()
    assert "| grpo | 50.0% " in text and "| grpo | 50.0% " not in published
    assert filled(text, folder) == text and text.splitlines()[0] == published.splitlines()[0]
    prose = [line for line in published.splitlines() if "| grpo |" not in line]
    assert [line for line in text.splitlines() if "| grpo |" not in line] == prose  # only the table's row moved
    readme.write_text(published + "<!-- generated: verdicts -->\nold\n<!-- end -->\n")
    with pytest.raises(SystemExit, match="README part 'verdicts': no such part"):
        write_readme(readme, folder)
    readme.write_text(published)
    (folder / "sweep.json").unlink()
    with pytest.raises(SystemExit, match=r"sweep.json: missing, and a README part is written from it"):
        write_readme(readme, folder)


def test_a_real_model_readme_says_which_tiny_claims_hold_on_it(tmp_path):
    """The `worlds` part of a real model's README: each claim of the tiny table beside it (the folder PROFILES'
    `checks` names) and its verdict, from both summaries."""
    published = REPO_ROOT / "results" / "compare" / "tiny"
    shutil.copytree(published, tmp_path / "tiny")
    real = tmp_path / "smol"
    shutil.copytree(published, real)
    settings = json.loads((real / "settings.json").read_text())
    (real / "settings.json").write_text(json.dumps(settings | {"profile": "smol"}))
    (real / "README.md").write_text("# smol\n\n<!-- generated: worlds -->\n<!-- end -->\n")
    assert write_readme(real / "README.md", real)
    text = (real / "README.md").read_text()
    claims = sum(is_claimed(r) for r in rows_of(json.loads((published / "summary.json").read_text())).values())
    assert "## Does `tiny` hold on `smol`?" in text and text.count("| holds |") == claims  # the same table: all hold
    (tmp_path / "tiny" / "settings.json").write_text(json.dumps(settings))
    (tmp_path / "tiny" / "README.md").write_text("<!-- generated: worlds -->\n<!-- end -->\n")
    with pytest.raises(SystemExit, match="profile tiny checks no tiny world's table"):
        write_readme(tmp_path / "tiny" / "README.md", tmp_path / "tiny")


@pytest.mark.parametrize("profile", ["tiny", "tiny-code"])
def test_the_same_completions_table_is_its_json(profile):
    """results/compare/<profile>-completions: every method sampled the same completions, GRPO's, DPO's, IPO's and
    ORPO's runs are the same-prompts table's (borrowed, the same scores), and its README carries its generated blocks,
    among them what each same-prompts claim becomes under this budget."""
    folder = REPO_ROOT / "results" / "compare" / f"{profile}-completions"
    summary = json.loads((folder / "summary.json").read_text())
    settings = json.loads((folder / "settings.json").read_text())
    prompts = json.loads((REPO_ROOT / "results" / "compare" / profile / "summary.json").read_text())
    assert summary["budget"] == settings["budget"] == "completions" and settings["steps"] == {"grpo": 40, "ppo": 320}
    assert {
        a["method"]: a["completions_generated"] for a in summary["methods"] if a["method"] != "base"
    } == dict.fromkeys(METHODS, 2560)
    assert sorted(settings["borrowed"]["runs"]) == sorted(
        f"{m}-seed{s}" for m in METHODS if m != "ppo" for s in range(5)
    )
    same = {(r["method"], r["seed"]): r["sampled_pass1"] for r in prompts["runs"] if r["method"] != "ppo"}
    assert {(r["method"], r["seed"]): r["sampled_pass1"] for r in summary["runs"] if r["method"] != "ppo"} == same
    readme = (folder / "README.md").read_text()
    assert [m[1] for m in PART.finditer(readme)] == [
        "provenance",
        "table",
        "holds",
        "seeds",
        "budgets",
        "compute",
        "versus",
    ]
    assert filled(readme, folder) == readme
    assert "\n".join(budget_section(prompts, summary)) in readme
    assert len(read_scores(folder)) == 6 * 5
    # docs/comparison.md: PPO with 8x the completions, its sampled pass@1 under each budget, for 8x its CPU seconds
    ppo = next(a for a in summary["methods"] if a["method"] == "ppo")
    ppo_prompts = next(a for a in prompts["methods"] if a["method"] == "ppo")
    said = docs_entry(f"{profile}-completions")
    assert f"from {ppo_prompts['sampled_pass1']:.1%} to {ppo['sampled_pass1']:.1%} sampled pass@1" in said
    assert 7.5 < ppo["cpu_seconds"] / ppo_prompts["cpu_seconds"] < 8.5


def test_what_the_code_readme_reads_from_its_table_holds():
    """The hand-written reading under the code table (results/compare/tiny-code/README.md), and the repository
    README's word on it, held to summary.json, per_problem.jsonl, sweep.json and the table it replaced."""
    folder = REPO_ROOT / "results" / "compare" / "tiny-code"
    summary = json.loads((folder / "summary.json").read_text())
    methods = {a["method"]: a for a in summary["methods"] if a["method"] != "base"}
    versus = {(r["a"], r["b"], r["metric"]): r for r in summary["versus"]}
    # DPO and IPO: about +20 sampled, nothing greedy (below the base, not told apart)
    for method in ("dpo", "ipo"):
        a = methods[method]
        assert 0.19 < a["sampled_vs_base"] < 0.23 and a["sampled_vs_base_claimed"], method
        assert -0.07 < a["greedy_vs_base"] < -0.05 and not a["greedy_vs_base_claimed"], method
    # ... on the same 78 problems the base's greedy program passes and every seed of both fails
    scores = read_scores(folder)
    lost = [
        problem
        for problem, right in enumerate(scores["base", 0]["greedy"])
        if right == 1 and all(scores[m, seed]["greedy"][problem] == 0 for m in ("dpo", "ipo") for seed in range(5))
    ]
    assert len(lost) == 78
    replaced = {a["method"]: a for a in json.loads((folder / "replaced.json").read_text())["methods"]}
    assert (round(replaced["dpo"]["greedy_vs_base"], 3), round(replaced["dpo"]["sampled_vs_base"], 3)) == (
        0.235,
        0.036,
    )
    # ORPO the other way round
    assert (round(methods["orpo"]["greedy_vs_base"], 3), round(methods["orpo"]["sampled_vs_base"], 3)) == (
        0.222,
        0.036,
    )
    # ORPO's beta: extended past its edge on a resumed sweep; 24.3 and 72.9 the same on both seeds, 24.3 chosen
    rows = json.loads((folder / "sweep.json").read_text())
    beta = {r["value"]: r for r in rows if (r["method"], r["key"]) == ("orpo", "beta")}
    assert sorted(beta)[-3:] == [8.1, 24.3, 72.9] and beta[24.3]["chosen"] and not beta[24.3]["at_edge"]
    assert beta[24.3]["per_seed"] == beta[72.9]["per_seed"]
    assert json.loads((folder / "settings.json").read_text())["commit"].startswith("266493d")
    # PPO: one seed of five at 70.5%, the others at 90% or more; GRPO and PPO not told apart (32.0 points detectable)
    ppo = sorted(r["sampled_pass1"] for r in summary["runs"] if r["method"] == "ppo")
    assert round(ppo[0], 3) == 0.705 and ppo[1] >= 0.9
    row = versus["grpo", "ppo", "sampled"]
    assert not row["claimed"] and round(100 * row["detectable"], 1) == 32.0
    sweep = {
        (r["method"], r["key"], r["value"]): r["validation_sampled_pass1"]
        for r in json.loads((folder / "sweep.json").read_text())
    }
    assert 0.004 < sweep["ppo", "learning_rate", 1e-3] - sweep["ppo", "learning_rate", 5e-4] < 0.006
    assert round(sweep["ppo", "learning_rate", 2e-3], 2) == 0.74
    # the sandbox: GRPO's largest share of any method's, 39%; PPO's held-out completions the most cut, 0.03%
    share = {m: a["reward_share"] for m, a in methods.items()}
    assert max(share, key=share.get) == "grpo" and round(share["grpo"], 2) == 0.39
    clipped = {m: a["clipped_share"] for m, a in methods.items()}
    assert max(clipped, key=clipped.get) == "ppo" and round(100 * clipped["ppo"], 2) == 0.03


def test_a_grid_whose_best_point_is_at_an_edge_grows_past_it_at_most_twice():
    def measure_peaking_at(peak):
        def measure(value):
            score = 0.8 - abs(math.log10(value) - math.log10(peak))  # best at `peak`, worse on a log scale around it
            return {"method": "orpo", "key": "learning_rate", "value": value, "validation_sampled_pass1": score}

        return measure

    rows = tune(measure_peaking_at(2.5e-5), [5e-5, 1e-4, 5e-4], rounds=2)
    assert [r["value"] for r in rows] == [1.25e-5, 2.5e-5, 5e-5, 1e-4, 5e-4]  # two steps down, then inside
    assert [r["value"] for r in rows if r["chosen"]] == [2.5e-5] and not any(r["at_edge"] for r in rows)
    rows = tune(measure_peaking_at(1e-7), [5e-5, 1e-4, 5e-4], rounds=2)
    assert len(rows) == 5 and rows[0]["chosen"] and rows[0]["at_edge"]  # still at the edge: said, not hidden
    rows = tune(measure_peaking_at(1e-4), [5e-5, 1e-4, 5e-4], rounds=2)
    assert [r["value"] for r in rows] == [5e-5, 1e-4, 5e-4] and rows[1]["chosen"]  # bracketed: nothing added
    assert key_grid(0.05, 3) == [0.0167, 0.05, 0.15]


@pytest.mark.slow
def test_the_same_completions_budget_gives_ppo_k_times_the_prompts(tiny_world, tmp_path, capsys):
    """--budget completions: every method samples the same number of completions (PPO one for each of k x the
    prompts, GRPO k for each prompt), and the checkpoints of both sit at the same completion counts."""
    out, same_prompts = tmp_path / "completions", tmp_path / "prompts"
    common = ["--eval_limit", "8", "--eval_k", "2", "--validation_k", "2", "--seeds", "1", "--load_in_4bit", "false"]
    run_main(
        "studies.comparison",
        "--profile",
        "tiny",
        "--prompts",
        "8",
        "--methods",
        "grpo",
        *common,
        "--out",
        str(same_prompts),
    )
    argv = ["--profile", "tiny", "--budget", "completions", "--prompts", "8", "--methods", "grpo", "ppo", *common]
    # GRPO trains as under the same-prompts budget: that comparison's run is taken, not trained again
    capsys.readouterr()
    run_main("studies.comparison", *argv, "--out", str(out), "--resume", "--same_runs_from", str(same_prompts))
    printed = capsys.readouterr().out
    assert "the same runs as " in printed and "training grpo" not in printed and "training ppo (seed 0)" in printed
    summary = json.loads((out / "summary.json").read_text())
    settings = json.loads((out / "settings.json").read_text())
    assert settings["borrowed"]["runs"] == ["grpo-seed0"]
    grpo_there = json.loads((same_prompts / "summary.json").read_text())["runs"]
    grpo_there = next(r for r in grpo_there if r["method"] == "grpo")
    assert next(r for r in summary["runs"] if r["method"] == "grpo")["sampled_pass1"] == grpo_there["sampled_pass1"]
    assert summary["budget"] == settings["budget"] == "completions" and settings["steps"] == {"grpo": 1, "ppo": 8}
    runs = {r["method"]: r for r in summary["runs"]}
    assert runs["grpo"]["completions_generated"] == runs["ppo"]["completions_generated"] == 64
    assert runs["ppo"]["train_steps"] == 8
    grpo_points = {p["completions_generated"] for p in runs["grpo"]["compute_curve"]}
    ppo_points = {p["completions_generated"] for p in runs["ppo"]["compute_curve"]}
    assert grpo_points == {64} and 64 in ppo_points  # the end of both: matched compute
    assert "With the same completions for every method" in what_holds(summary).replace("\n", " ")
    assert "same completions: every method samples k x the prompts' completions" in (out / "summary.md").read_text()
    # a rerun spread over sessions: --resume keeps what finished and redoes only the rest
    (out / "ppo-seed0" / "summary.json").unlink()  # as if PPO had been stopped before it finished
    grpo_adapter = (out / "grpo-seed0" / "adapter_model.safetensors").stat().st_mtime_ns
    capsys.readouterr()
    run_main("studies.comparison", *argv, "--out", str(out), "--resume")
    printed = capsys.readouterr().out
    assert "grpo (seed 0): finished before, kept" in printed and "training ppo (seed 0)" in printed
    assert "training grpo" not in printed and "base-seed0: evaluated before, kept" in printed
    assert "ppo-seed0: evaluated before" not in printed  # trained again, so scored again
    assert (out / "grpo-seed0" / "adapter_model.safetensors").stat().st_mtime_ns == grpo_adapter
    again = json.loads((out / "summary.json").read_text())
    grpo_before = next(a for a in summary["methods"] if a["method"] == "grpo")
    grpo_after = next(a for a in again["methods"] if a["method"] == "grpo")
    assert grpo_after["sampled_pass1"] == grpo_before["sampled_pass1"]  # its evaluation kept, not redone
    assert (out / "ppo-seed0" / "summary.json").is_file()
    kept = json.loads((out / "eval_base-seed0.json").read_text())  # kept only for a rerun on the same problems and k
    assert (kept["n"], kept["k"], kept["temperature"]) == (8, 2, settings["temperature"])
    # a clone of the committed records: no adapters. GRPO's checkpoints are still scored (validation curve), so it
    # is trained again rather than kept without the weights its scores come from; PPO, adapter there, is kept
    for weights in [*(out / "grpo-seed0").glob("checkpoint-*"), out / "grpo-seed0" / "adapter_model.safetensors"]:
        shutil.rmtree(weights) if weights.is_dir() else weights.unlink()
    capsys.readouterr()
    run_main("studies.comparison", *argv, "--out", str(out), "--resume")
    printed = capsys.readouterr().out
    assert "grpo (seed 0): finished before, but its adapter is gone" in printed and "training grpo (seed 0)" in printed
    assert "ppo (seed 0): finished before, kept" in printed and "grpo-seed0: evaluated before" not in printed
    assert (out / "grpo-seed0" / "adapter_model.safetensors").is_file()


def test_a_table_never_mixes_cpu_classes():
    amd = {"cpu": "AMD EPYC", "kernel_flags": ["avx2", "avx512f", "avx512_bf16"]}
    records = [{"method": "grpo", "seed": 0, **amd}, {"method": "ppo", "seed": 0, **amd}]
    same_machine(records)  # one class: fine
    records.append({"method": "ppo", "seed": 1, "cpu": "AMD EPYC", "kernel_flags": ["avx2"]})
    with pytest.raises(SystemExit, match=r"more than one CPU class.*AMD EPYC \['avx2'\]: ppo-seed1"):
        same_machine(records)


def test_not_seen_only_where_the_real_interval_leaves_the_tiny_difference_out():
    """The real model's IPO > base greedy as published: the tiny world's +23.2 lies inside [+5.8, +27.6], so not
    claimed there is 'consistent', not 'not seen'; the same row with an interval that ends below +23.2 is 'not seen';
    one that could not have detected +23.2 is 'not told apart' either way."""
    tiny = {"a": "ipo", "b": "base", "metric": "greedy", "mean": 0.232, "ci95": [0.174, 0.29], "claimed": True}
    real = {"a": "ipo", "b": "base", "metric": "greedy", "mean": 0.167, "claimed": False, "detectable": 0.223}
    assert verdict(tiny, real | {"ci95": [0.058, 0.276]}).startswith("consistent (")
    assert verdict(tiny, real | {"ci95": [0.058, 0.230]}).startswith("not seen (")
    assert verdict(tiny, real | {"ci95": [0.058, 0.276]}, consistent=False).startswith("not seen (")  # before #64
    assert verdict(tiny, real | {"ci95": [0.058, 0.276], "detectable": 0.30}).startswith("not told apart (")


def test_the_sharpening_contrast_is_the_gap_of_gaps_the_reviewer_computed():
    """The tiny table's DPO against GRPO: the mean over seeds x problems of (DPO greedy - DPO sampled) - (GRPO greedy
    - GRPO sampled), by plain arithmetic on per_problem.jsonl, is the row's, +9.7 points as the reviewer found, and
    claimed; the real model tells none of the six apart (and says it is post hoc)."""
    folder = REPO_ROOT / "results" / "compare" / "tiny"
    scores = read_scores(folder)
    gaps = []
    for seed in range(5):
        dpo, grpo = scores["dpo", seed], scores["grpo", seed]
        for p in range(len(dpo["greedy"])):
            gaps.append((dpo["greedy"][p] - dpo["sampled"][p]) - (grpo["greedy"][p] - grpo["sampled"][p]))
    row = next(r for r in sharpening(scores) if (r["a"], r["b"]) == ("dpo", "grpo"))
    assert abs(row["mean"] - sum(gaps) / len(gaps)) < 1e-12 and round(row["mean"] * 100, 1) == 9.7
    assert row["claimed"] and [round(x * 100, 1) for x in row["ci95"]] == [6.9, 12.5]
    assert all(r["claimed"] and r["mean"] > 0 for r in sharpening(scores))  # docs/comparison.md's words on each
    code = {(r["a"], r["b"]): r for r in sharpening(read_scores(REPO_ROOT / "results" / "compare" / "tiny-code"))}
    assert all(r["claimed"] and (r["mean"] > 0) == (a == "orpo") for (a, _), r in code.items())
    real = sharpening(read_scores(REPO_ROOT / "results" / "compare" / "smol"))
    assert len(real) == 6 and not any(r["claimed"] for r in real)
    text = (REPO_ROOT / "results" / "compare" / "smol" / "README.md").read_text()
    assert "is told apart from an online method's (3 seeds, post hoc)." in text


def test_each_sweep_reports_its_tuning_budget_per_method():
    """The reviewer's count of configurations tried per method on the tiny table (GRPO 3, PPO 8, DPO 8, IPO 6, ORPO
    11), from sweep.json, said under its sweep in the README as not an equal budget; the real model's 3 each, equal."""
    tiny = json.loads((REPO_ROOT / "results" / "compare" / "tiny" / "sweep.json").read_text())
    assert tuning_budget(tiny) == {"grpo": 3, "ppo": 8, "dpo": 8, "ipo": 6, "orpo": 11}
    text = (REPO_ROOT / "results" / "compare" / "tiny" / "README.md").read_text()
    assert "GRPO 3, PPO 8, DPO 8, IPO 6, ORPO 11: not an equal budget." in text
    smol = json.loads((REPO_ROOT / "results" / "compare" / "smol" / "sweep.json").read_text())
    assert set(tuning_budget(smol).values()) == {3}


@pytest.mark.slow
def test_an_equal_budget_sweep_tunes_every_method_on_as_many_configurations_grpo_s_beta_included(tiny_world, tmp_path):
    """--equal_budget: each method its learning-rate grid, then one key (GRPO's beta, from its config's 0), no grid
    grown past an edge: GRPO and DPO trained 3 configurations each (2 rates, then the key's point the chosen rate did
    not already train), and the README's count says equal."""
    out = tmp_path / "sweep"
    command = ["--profile", "tiny", "--sweep", "--equal_budget", "--prompts", "8", "--eval_limit", "8"]
    # rates neither config trains at (GRPO's 5e-4, DPO's 1e-4): the table's settings must say the rate each trained at
    command += ["--validation_k", "2", "--methods", "grpo", "dpo", "--learning_rates", "2e-4", "3e-4"]
    command += ["--sweep_seeds", "1", "--key_points", "2", "--load_in_4bit", "false", "--out", str(out)]
    run_main("studies.comparison", *command)
    rows = json.loads((out / "sweep.json").read_text())
    assert tuning_budget(rows) == {"grpo": 3, "dpo": 3}
    beta = {r["value"]: r for r in rows if (r["method"], r.get("key")) == ("grpo", "beta")}
    assert sorted(beta) == [0.0, 0.01] and beta[0.0]["same_run_as"] == "learning_rate"
    assert "same_run_as" not in beta[0.01] and beta[0.01]["seeds"] == [0]
    assert not any(r.get("key") == "value_learning_rate" for r in rows)
    assert "GRPO 3, DPO 3 (equal)." in sweep_summary(rows)
    # the table these seeds tuned starts after them, and refuses to reuse one
    assert table_seeds(None, 2, [out / "sweep.json"]) == [1, 2]
    # --tuned: the table trains each method at what the sweep chose, on seeds after the sweep's
    chosen = chosen_settings(out / "sweep.json", ["grpo", "dpo"])
    table = ["--profile", "tiny", "--prompts", "8", "--eval_limit", "6", "--eval_k", "2", "--validation_k", "2"]
    table += ["--methods", "grpo", "dpo", "--seeds", "1", "--tuned", "--load_in_4bit", "false", "--out", str(out)]
    run_main("studies.comparison", *table)
    settings = json.loads((out / "settings.json").read_text())
    assert settings["tuned"] == chosen and settings["first_seed"] == 1
    for method in ("grpo", "dpo"):
        config = yaml.safe_load((out / f"{method}-seed1" / "config.yaml").read_text())
        assert config["learning_rate"] == chosen[method]["learning_rate"] and config["seed"] == 1, method
        assert config["beta"] == chosen[method]["beta"], method
        assert settings["learning_rates"][method] == chosen[method]["learning_rate"], method  # the rate it trained at


def test_a_table_refuses_seeds_its_sweep_tuned_on(tiny_world, tmp_path):
    out = tmp_path / "compare"
    out.mkdir()
    (out / "sweep.json").write_text(json.dumps([{"method": "grpo", "seeds": [0, 1]}]))
    with pytest.raises(
        SystemExit, match=r"--first_seed 1: seed 1 also tuned this table \(sweep.json\).*--first_seed 2"
    ):
        run_main("studies.comparison", "--profile", "tiny", "--seeds", "2", "--first_seed", "1", "--out", str(out))
    assert sorted(p.name for p in out.iterdir()) == ["sweep.json"]  # nothing trained, nothing written


@pytest.mark.slow
def test_rows_at_matched_compute_read_each_run_at_its_last_checkpoint_within_the_cheapest_run(compare_results):
    chosen = json.loads((compare_results / matched.CHOICES).read_text())
    summary = json.loads((compare_results / "summary.json").read_text())
    runs = {(r["method"], r["seed"]): r for r in summary["runs"]}
    # the budget: the most the cheapest of GRPO, PPO and DPO spent on a whole run, DPO's pair sampling counted
    whole = {m: runs[m, 0]["cpu_seconds"] for m in matched.MATCHED}
    assert chosen["cheapest"] == min(whole, key=whole.get)
    assert chosen["cpu_seconds"] == pytest.approx(whole[chosen["cheapest"]])
    for row in chosen["runs"]:
        folder = compare_results / f"{row['method']}-seed{row['seed']}"
        pairs = runs[row["method"], 0]["pair_sampling_cpu_seconds"] or 0.0
        saved = [json.loads(line) for line in (folder / "checkpoints.jsonl").read_text().splitlines()]
        # every checkpoint's CPU seconds rise to the run's own, and the chosen one is the last within the budget
        spent = [pairs + s["cpu_seconds"] for s in saved if s["step"] < runs[row["method"], 0]["train_steps"]]
        spent.append(runs[row["method"], 0]["cpu_seconds"])
        assert spent == sorted(spent) and spent[-1] == pytest.approx(row["run_cpu_seconds"])
        within = [s for s in spent if s <= chosen["cpu_seconds"]]
        assert row["cpu_seconds"] == (within[-1] if within else None)
        if row["method"] == chosen["cheapest"]:
            assert row["checkpoint"] == "." and row["step"] == row["of_steps"]
    # the chosen models' per-problem scores: a checkpoint's own evaluation, a finished run's the table's
    scores = read_scores(compare_results, matched.SCORES)
    table = read_scores(compare_results)
    for row in chosen["runs"]:
        key = (row["method"], row["seed"])
        if row["checkpoint"] == ".":
            assert scores[key] == table[key]
        elif row["checkpoint"] is None:
            assert scores[key]["greedy"] == table["base", row["seed"]]["greedy"]
        else:
            kept = json.loads((compare_results / f"eval_matched_{key[0]}-seed{key[1]}.json").read_text())
            assert kept["step"] == row["step"] and scores[key]["greedy"] == kept["greedy_per_problem"]
    # summary.json's part is computed from those files, and the README part says it
    again = matched.read(compare_results, table)
    assert summary["matched"] == json.loads(json.dumps(again))
    assert summary["matched"]["family_size"] == 12  # three against the base and three pairs, both metrics
    text = matched.section(summary["matched"])
    assert (
        f"at {chosen['cpu_seconds']:.0f} CPU seconds" in text and text in (compare_results / "summary.md").read_text()
    )


def test_a_pre_registered_rerun_reads_the_published_claims_and_tests_the_sharpening_as_registered(tmp_path):
    published = REPO_ROOT / "results" / "compare" / "tiny"
    summary = json.loads((published / "summary.json").read_text())
    claims = sum(is_claimed(r) for r in summary["against_base"] + summary["versus"])
    # the published table read against itself: every claim holds, and the tally says how many
    lines = replication_section(summary, summary, "results/compare/tiny")
    assert lines[0] == "## Does the published table replicate?"
    assert f"Of the {claims} claims of `published`: {claims} holds." in lines
    # as a README part: the folder is the rerun's, the argument the published table's
    shutil.copy(published / "summary.json", tmp_path / "summary.json")
    shutil.copy(published / "per_problem.jsonl", tmp_path / "per_problem.jsonl")
    text = "<!-- generated: replication (results/compare/tiny) -->\n<!-- end -->\n"
    text += "<!-- generated: sharpening (pre-registered) -->\n<!-- end -->\n"
    written = filled(text, tmp_path)
    assert "\n".join(lines) in written
    assert "(pre-registered)" in written and "post hoc" not in written
    assert "post hoc" in filled("<!-- generated: sharpening -->\n<!-- end -->\n", tmp_path)


def test_the_fresh_code_tables_reading_is_its_numbers():
    """The hand-written reading under the pre-registered code rerun (results/compare/tiny-code-fresh/README.md), held
    to its files: the problems at the floor (the base's and the best median's accuracy), no claim made, every
    published claim "not seen", the validation curves above the base on every seed, the grid's 432 pairs all in a
    split, and every rate chosen at its grid's edge."""
    folder = REPO_ROOT / "results" / "compare" / "tiny-code-fresh"
    text = " ".join((folder / "README.md").read_text().split())
    summary = json.loads((folder / "summary.json").read_text())
    base = next(a for a in summary["methods"] if a["method"] == "base")
    sampled, greedy = base["sampled_pass1"], base["greedy_accuracy"]
    assert f"The base passes {sampled:.1%} of them (sampled pass@1; {greedy:.1%} greedy)" in text
    runs = summary["runs"]
    medians = {m: statistics.median(r["greedy_accuracy"] for r in runs if r["method"] == m) for m in METHODS}
    assert f"no method's median run more than {max(medians.values()):.1%} greedy" in text
    assert not any(r["claimed"] for r in summary["against_base"] + summary["versus"])
    old = json.loads((REPO_ROOT / "results" / "compare" / "tiny-code" / "summary.json").read_text())
    judged = claim_verdicts(old, summary)
    assert all(verdict.startswith("not seen (") for verdict in judged.values())
    assert f'each of the published table\'s {len(judged)} claims reads "not seen"' in text
    start = summary["base_validation_sampled_pass1"]
    assert f"above the base's {start:.1%}" in text
    last = [
        json.loads((folder / f"{m}-seed{s}" / "compute_curve.json").read_text())[-1]["validation_sampled_pass1"]
        for m in METHODS
        for s in range(2, 7)
    ]
    assert len(last) == 25 and min(last) > start
    pairs = {
        json.loads(line)["text"]
        for split in ("train", "validation", "test")
        for line in (REPO_ROOT / "tasks" / "worlds" / "tiny-code" / "data" / f"{split}.jsonl").read_text().splitlines()
    }
    assert len(pairs) == len(code_world.all_pairs()) == 432 and "each of its 432 (family, constants) pairs" in text
    sweep = json.loads((folder / "sweep.json").read_text())
    assert all(r["at_edge"] for r in sweep if r["chosen"] and r["key"] == "learning_rate")
    assert "every method's learning rate was chosen at its grid's upper edge" in text
    there = docs_entry("tiny-code-fresh")  # its account in docs/comparison.md, the same numbers
    assert f"the base passes {sampled:.1%} and no method's median run more than {max(medians.values()):.1%}" in there
    assert f'each of the published table\'s {len(judged)} claims reads "not seen"' in there
    assert f"{json.loads((folder / 'settings.json').read_text())['seconds']:,.0f} s" in there


def test_the_fresh_math_tables_reading_is_its_numbers():
    """The hand-written reading under the pre-registered math rerun (results/compare/tiny-fresh/README.md), held to its
    summary, the published table's and the sweep: the replication tally, the one claim that did not hold and why
    (DPO's rate), the pre-registered sharpening family, and which choices sit at a grid's edge."""
    folder = REPO_ROOT / "results" / "compare" / "tiny-fresh"
    published = REPO_ROOT / "results" / "compare" / "tiny"
    text = " ".join((folder / "README.md").read_text().split())
    summary = json.loads((folder / "summary.json").read_text())
    old = json.loads((published / "summary.json").read_text())
    judged = claim_verdicts(old, summary)
    held = [key for key, said_now in judged.items() if said_now == "holds"]
    assert f"{len(held)} of the published table's {len(judged)} claims hold" in text
    assert [key for key in judged if key not in held] == [("ppo", "dpo", "sampled")]
    assert "The one that does not is PPO > DPO in sampled pass@1" in text and "PPO and DPO are not told apart" in text
    tuned = json.loads((folder / "settings.json").read_text())["tuned"]["dpo"]["learning_rate"]
    before = json.loads((published / "settings.json").read_text())["learning_rates"]["dpo"]
    assert f"trained at {tuned:.0e} here ({before:.0e} in the published table)".replace("e-0", "e-") in text
    gain = next(r for r in summary["against_base"] if (r["a"], r["metric"]) == ("dpo", "sampled"))["mean"]
    then = next(r for r in old["against_base"] if (r["a"], r["metric"]) == ("dpo", "sampled"))["mean"]
    assert f"+{gain * 100:.1f} points of sampled pass@1 over the base against +{then * 100:.1f} there" in text
    ahead = {
        (r["a"], r["b"]) for r in summary["versus"] if r["metric"] == "sampled" and r["claimed"] and r["mean"] > 0
    }
    assert {("grpo", "dpo"), ("grpo", "ipo"), ("grpo", "orpo")} <= ahead
    sharpened = sharpening(read_scores(folder))
    claimed = [(r["a"], r["b"]) for r in sharpened if r["claimed"]]
    assert all(r["mean"] > 0 for r in sharpened if r["claimed"])
    assert f"claims {len(claimed)} of its {len(sharpened)} differences" in text
    assert [(r["a"], r["b"]) for r in sharpened if not r["claimed"]] == [("dpo", "ppo")]
    sweep = json.loads((folder / "sweep.json").read_text())
    at_edge = {(r["method"], r["key"]) for r in sweep if r["chosen"] and r.get("at_edge")}
    assert at_edge == {("ppo", "learning_rate"), ("ppo", "kl_coef"), ("dpo", "learning_rate")}
    assert "PPO's rate and kl_coef and DPO's rate were chosen at their grid's edge" in text
    docs = comparison_docs()
    there = docs_entry("tiny-fresh")  # its account there, the same tally
    assert f"Of the published table's {len(judged)} claims, {len(held)} hold and 1 is not told apart" in there
    assert f"+{gain * 100:.1f} points over the base instead of +{then * 100:.1f}" in there
    assert f"claims {len(claimed)} of {len(sharpened)} (all but DPO against PPO)" in there
    assert f"it holds for {len(claimed)} of the {len(sharpened)} pairs" in docs
