"""One record per run and one aggregate per method: accuracy with intervals, the paired difference from the base,
and what each run cost (from its cost.json, metrics.jsonl and resolved config)."""

import json
from pathlib import Path

import yaml

from core.report.stats import over_seeds, paired_difference
from core.runs.metrics import REWARD_KEYS, first_last, reward_curve
from studies.runner import PREFERENCE_METHODS, SCRIPT, samples_per_step

CLIPPED_FLAG = 0.05  # a method whose held-out completions hit the length limit more often than this is flagged

# What each method holds in memory while it trains. (Its training signal, core.runs.metrics.REWARD_KEYS: GRPO and PPO
# log the task reward of the batch; DPO and ORPO have no task reward in training, only their implicit reward margin.)
HOLDS = {
    "grpo": "policy; reference = the same base with the adapter off",
    "ppo": "policy + critic (own LoRA + head on the policy's 4-bit base); reference = adapter off; reward: a function",
    "dpo": "policy; reference = the same base with the adapter off",
    "ipo": "policy; reference = the same base with the adapter off",
    "orpo": "policy; no reference",
}


def summarise(runs: dict, evals: dict, headline: str, estimates: dict | None, curves: dict | None = None) -> list:
    """One record per run (and `base`): accuracy with intervals, paired difference from the base, measured costs."""
    records = []
    base = evals["base"]
    for key in ["base", *runs]:
        e = evals[key]
        method, seed = (key, None) if key == "base" else key
        record = {
            "method": method,
            "seed": seed,
            "accuracy": e[headline],
            "accuracy_ci95": e[f"{headline}_ci95"],
            "headline_metric": headline,
            "greedy_accuracy": e["greedy"],
            "greedy_ci95": e["greedy_ci95"],
            "sampled_pass1": e["sampled"],
            "sampled_pass1_ci95": e["sampled_ci95"],
            "completion_length_mean": e["completion_length_mean"],
            "completion_length_base": base["completion_length_mean"],
            "clipped_share": e["clipped_share"],
        }
        if key == "base":
            record |= {
                key: None
                for key in (
                    "peak_memory_mb",
                    "train_seconds",
                    "seconds_per_step",
                    "samples_per_second",
                    "train_steps",
                    "models_in_memory",
                    "trainable_params",
                    "reward_first",
                    "reward_last",
                    "reward_seconds",
                    "reward_share",
                    "sandbox_programs_per_second",
                )
            }
            records.append(record)
            continue
        cost = json.loads((runs[key] / "cost.json").read_text())
        curve = reward_curve(runs[key], REWARD_KEYS[method])
        first, last = first_last(curve)
        steps = cost["train_steps"]
        samples = samples_trained(method, runs[key], steps)
        logged_clipped = [v for _, v in reward_curve(runs[key], "completions/clipped_ratio")]
        record |= {
            "peak_memory_mb": cost["peak_memory_mb"],
            "memory_measure": cost["measure"],
            "runtime_memory_mb": cost.get("rss_before_model_mb"),
            "train_seconds": cost["train_seconds"],
            "train_steps": steps,
            "seconds_per_step": cost["train_seconds"] / max(1, steps),
            "samples_per_second": samples / cost["train_seconds"],
            "samples": samples,
            "models_in_memory": cost["models_in_memory"],
            "holds": HOLDS[method],
            "trainable_params": cost["trainable_params"],
            **reward_cost(cost),
            "reward_key": REWARD_KEYS[method],
            "reward_first": first,
            "reward_last": last,
            "reward_curve": curve,
            "training_clipped_share": sum(logged_clipped) / len(logged_clipped) if logged_clipped else None,
            "compute_curve": (curves or {}).get(key, []),
        }
        for metric in ("greedy", "sampled"):
            diff = paired_difference(base[f"{metric}_per_problem"], e[f"{metric}_per_problem"])
            record[f"{metric}_vs_base"] = diff["mean"]
            record[f"{metric}_vs_base_ci95"] = diff["ci95"]
        headline_low = record[f"{headline}_vs_base_ci95"][0]
        record["beats_base"] = headline_low > 0
        # Reward hacking or overfitting shows up exactly here: the training reward rose, held-out accuracy did not.
        record["flag_reward_up_accuracy_not"] = first is not None and last > first and headline_low <= 0
        record["flag_clipped"] = e["clipped_share"] > CLIPPED_FLAG
        if estimates:
            record["estimated_gb"] = estimates[SCRIPT.get(method, method)]["total_gb"]
        records.append(record)
    return records


def aggregate(records: list[dict]) -> list[dict]:
    """Per method, over its seeds: mean, sd and 95% interval of sampled pass@1, greedy accuracy and the paired
    differences from the base; means of the costs; the seeds' records stay in `runs`."""
    aggregates = []
    for method in dict.fromkeys(r["method"] for r in records):
        runs = [r for r in records if r["method"] == method]
        entry = {"method": method, "seeds": [r["seed"] for r in runs], "n_seeds": len(runs)}
        for metric in ("sampled_pass1", "greedy_accuracy", "sampled_vs_base", "greedy_vs_base", "clipped_share"):
            if runs[0].get(metric) is None:
                continue
            stats = over_seeds([r[metric] for r in runs])
            if stats["ci95"] and metric in ("sampled_pass1", "greedy_accuracy", "clipped_share"):
                stats["ci95"] = [max(0.0, stats["ci95"][0]), min(1.0, stats["ci95"][1])]  # a share stays a share
            entry |= {metric: stats["mean"], f"{metric}_sd": stats["sd"], f"{metric}_ci95_seeds": stats["ci95"]}
        entry["accuracy"] = entry["sampled_pass1"]
        entry["accuracy_ci95"] = entry["sampled_pass1_ci95_seeds"] or runs[0]["sampled_pass1_ci95"]
        for key in (
            "peak_memory_mb",
            "train_seconds",
            "seconds_per_step",
            "samples_per_second",
            "reward_seconds",
            "reward_share",
            "sandbox_programs_per_second",
            "completion_length_mean",
            "estimated_gb",
            "training_clipped_share",
        ):
            values = [r[key] for r in runs if r.get(key) is not None]
            entry[key] = sum(values) / len(values) if values else None
        for key in (
            "models_in_memory",
            "trainable_params",
            "train_steps",
            "samples",
            "holds",
            "reward_key",
            "completion_length_base",
            "runtime_memory_mb",
            "memory_measure",
        ):
            entry[key] = runs[0].get(key)
        if method != "base":
            low = (entry["sampled_vs_base_ci95_seeds"] or runs[0]["sampled_vs_base_ci95"])[0]
            entry["beats_base"] = low > 0  # across seeds: the seeds' interval of the paired difference
            entry["flag_clipped"] = entry["clipped_share"] > CLIPPED_FLAG
        aggregates.append(entry)
    return aggregates


def reward_cost(cost: dict) -> dict:
    """Time training spent in reward calls (GRPO and PPO score in-process; DPO/ORPO's pairs were scored before) and
    the sandbox's programs per second during training, from the run's cost.json."""
    spent = cost.get("reward_time", {})
    seconds = sum(r["seconds"] for r in spent.values())
    code = spent.get("code_tests")
    return {
        "reward_seconds": seconds,
        "reward_share": seconds / cost["train_seconds"],
        "reward_time": spent,
        "sandbox_programs_per_second": code["completions"] / code["seconds"] if code and code["seconds"] else None,
    }


def samples_trained(method: str, run_dir: Path, steps: int) -> int:
    """Training samples processed: completions scored for GRPO (k per prompt) and PPO (one per prompt), preference
    pairs for DPO/ORPO (one epoch: its last batch may be short); read from the run's resolved config."""
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    per_step = samples_per_step(method, config)
    if method in PREFERENCE_METHODS:
        pairs = sum(1 for _ in open(config["dataset_name"]))
        return (
            min(per_step * steps, int(pairs * config["num_train_epochs"]))
            if config["max_steps"] <= 0
            else per_step * steps
        )
    return per_step * steps
