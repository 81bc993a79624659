"""The "7B on limited compute" comparison: GRPO, PPO, DPO and ORPO from the same start, on the same prompts,
with the same rewards; what each costs (memory, time) and buys (held-out accuracy), over several seeds.

Usage:
    make compare                       # = python -m eval.comparison --profile tiny --seeds 3 (2-core CPU, offline)
    make compare SEEDS=1               # one seed per method: a quick look
    make compare PROFILE=tiny-code     # the same on the tiny code world
    make sweep                         # = --sweep: each method's learning rate from a grid, chosen on validation
    python -m eval.comparison --profile tiny --prompts 16 --eval_limit 20 --seeds 1 --out /tmp/compare-smoke

Matched budget: every method sees the same `--prompts` training prompts (the first N rows of the profile's
training set), each exactly once. GRPO samples k completions for each (its group is its baseline); PPO samples
one (its critic is its baseline); DPO and ORPO train one epoch on the pairs that `recipes.pairs` builds from k
samples of the same prompts by the starting model, scored with the same rewards (a prompt whose k samples all
score the same gives no pair). Each method trains in its own process with its profile's recipe config
(`recipes/configs/<profile>/<method>.yaml`); only the output folder, the prompt budget (as max_steps), the seed,
checkpointing and the logging interval are overridden, so `make grpo` and the comparison's GRPO are the same run.
The seed drives the LoRA initialisation, sampling (pairs included) and data order.

Evaluation (every adapter and the starting model, 4-bit as trained, on the same held-out problems): greedy
accuracy, and sampled pass@1 at the training temperature from `--eval_k` samples per problem (the headline: what
the RL methods optimise, and with k samples per problem a much narrower interval than greedy accuracy). Per run:
Wilson / normal 95% intervals and the paired per-problem difference from the base. Per method, over seeds: the
mean, the standard deviation and a 95% t-interval of the seeds' values and of their paired differences.
Accuracy against compute: each run saves its adapter at every quarter of its budget; each checkpoint is scored on
the validation split (sampled pass@1) against the training seconds and samples it had used. Learning rates are
chosen by `--sweep` on the validation split, never on the held-out test.

Writes results/compare/<profile>/: summary.json ({"methods": one aggregate per method and `base`, "runs": one
record per (method, seed)}), settings.json (machine, versions, budget), summary.md, memory.png, accuracy.png,
rewards.png, compute.png; `--sweep` writes sweep.json and sweep.png. Run folders and evaluation samples
(eval_<method>-seed<k>.jsonl) stay beside them, unpublished.
"""

import argparse
import json
import math
import platform
import subprocess
import sys
import time
from pathlib import Path

import yaml

from eval.reward_check import paired_difference
from recipes.common import REWARD_KEYS, first_last, reward_curve
from rewards._cli import one_line_errors

METHODS = ("grpo", "ppo", "dpo", "orpo")
PROFILES = {
    "tiny": {"task": "tiny", "prompts": 320, "eval_limit": None, "eval_k": 8, "model_name": "artifacts/tiny/model",
             "validation": "artifacts/tiny/data/validation.jsonl"},
    "tiny-code": {"task": "tiny-code", "prompts": 320, "eval_limit": None, "eval_k": 8,
                  "model_name": "artifacts/tiny-code/model",
                  "validation": "artifacts/tiny-code/data/validation.jsonl"},
    "7b": {"task": "gsm8k", "prompts": 512, "eval_limit": 500, "eval_k": 4, "model_name": "qwen2.5-7b",
           "validation": None},
}
# The sweep's grid: learning rates around each method's working range on the tiny worlds.
SWEEP_GRID = {"grpo": [2e-4, 5e-4, 1e-3], "ppo": [2e-4, 5e-4, 1e-3], "dpo": [5e-5, 1e-4, 5e-4],
              "orpo": [5e-5, 1e-4, 5e-4]}
CHECKPOINTS = 4  # accuracy against compute: an adapter at every quarter of the budget
CLIPPED_FLAG = 0.05  # a method whose held-out completions hit the length limit more often than this is flagged
# Two-sided 95% Student t quantiles by degrees of freedom: intervals over a handful of seeds.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}
# What each trainer logs as its training reward (recipes.common.REWARD_KEYS): GRPO and PPO the task reward of the
# batch; DPO and ORPO have no task reward in training, only their implicit reward margin (chosen minus rejected).
HOLDS = {"grpo": "policy; reference = the same base with the adapter off",
         "ppo": "policy + critic (a second 4-bit base); reference = adapter off; reward = a function",
         "dpo": "policy; reference = the same base with the adapter off",
         "orpo": "policy; no reference"}


def recipe_config(profile: str, method: str) -> tuple[Path, dict]:
    path = Path("recipes/configs") / profile / f"{method}.yaml"
    if not path.is_file():
        raise SystemExit(f"--profile {profile}: no recipe config {path}")
    return path, yaml.safe_load(path.read_text())


def samples_per_step(method: str, config: dict) -> int:
    """Samples an optimizer step trains on: completions for GRPO (k per prompt) and PPO (one per prompt, over all its
    mini-batches), pairs for DPO/ORPO."""
    per_step = config.get("per_device_train_batch_size", 8) * config.get("gradient_accumulation_steps", 1)
    return per_step * config.get("num_mini_batches", 1) if method == "ppo" else per_step


def steps_for(method: str, config: dict, prompts: int) -> int:
    """Optimizer steps that show each of `prompts` prompts once (GRPO and PPO; DPO/ORPO run one epoch)."""
    group = config.get("num_generations", 8) if method == "grpo" else 1
    prompts_per_step = samples_per_step(method, config) // group
    return max(1, math.ceil(prompts / prompts_per_step))


def run(command: list[str], log: Path) -> float:
    start = time.time()
    with open(log, "w") as fh:
        result = subprocess.run(command, stdout=fh, stderr=subprocess.STDOUT)
    if result.returncode:
        raise SystemExit(f"{' '.join(command)} failed (exit {result.returncode}); see {log}:\n"
                         + "\n".join(log.read_text().splitlines()[-15:]))
    return time.time() - start


def train_all(profile: str, prompts: int, out: Path, methods, seed: int = 0,
              learning_rates: dict | None = None, checkpoints: int = CHECKPOINTS) -> dict:
    """Train every method once with `seed`, each in its own process; returns (method, seed) -> run folder. With
    `checkpoints`, each run saves its adapter at every 1/checkpoints of its budget (and their times)."""
    runs = {}
    pairs_path, pairs_config = recipe_config(profile, "pairs")
    pairs_file = out / f"pairs-seed{seed}.jsonl"
    if {"dpo", "orpo"} & set(methods):
        grpo_config = recipe_config(profile, "grpo")[1]
        run([sys.executable, "-m", "recipes.pairs", "--config", str(pairs_path), "--max_prompts", str(prompts),
             "--num_samples", str(grpo_config.get("num_generations", 8)), "--seed", str(seed),
             "--temperature", str(grpo_config.get("temperature", 1.0)), "--output", str(pairs_file)],
            out / f"pairs-seed{seed}.log")
    for method in methods:
        path, config = recipe_config(profile, method)
        run_dir = out / f"{method}-seed{seed}"
        command = [sys.executable, "-m", f"recipes.{method}", "--config", str(path), "--output_dir", str(run_dir),
                   "--logging_steps", "1", "--seed", str(seed)]
        if method in ("grpo", "ppo"):
            steps = steps_for(method, config, prompts)
            command += ["--max_train_samples", str(prompts), "--max_steps", str(steps)]
        else:
            steps = max(1, math.ceil(sum(1 for _ in open(pairs_file)) / samples_per_step(method, config)))
            command += ["--dataset_name", str(pairs_file), "--max_steps", "-1", "--num_train_epochs", "1"]
        if learning_rates and method in learning_rates:
            command += ["--learning_rate", str(learning_rates[method])]
        # every quarter of the budget, all kept (the recipe YAMLs keep only the last few)
        command += (["--save_strategy", "steps", "--save_steps", str(max(1, steps // checkpoints)),
                     "--save_total_limit", str(steps + 1)] if checkpoints else ["--save_strategy", "no"])
        print(f"[compare] training {method} (seed {seed}) ...", flush=True)
        seconds = run(command, out / f"{method}-seed{seed}.log")
        print(f"[compare] {method} (seed {seed}) done in {seconds:.0f} s", flush=True)
        runs[(method, seed)] = run_dir
    return runs


def evaluate(model_name: str, adapter: Path | None, task: str, rows: list[dict], k: int, temperature: float,
             greedy: bool = True) -> tuple[dict, list[dict]]:
    """One model (4-bit as trained) on `rows`: sampled pass@1 from k samples, greedy accuracy, per-problem scores,
    completion lengths and the share cut at the length limit."""
    import torch

    from eval.run import correct_per_problem, evaluate_model, load_for_eval
    from eval.tasks import TASKS

    model, tokenizer = load_for_eval(model_name, str(adapter) if adapter else None, load_in_4bit=True)
    result, records = {}, []
    if greedy:
        torch.manual_seed(0)
        metrics, greedy_records = evaluate_model(model, tokenizer, task, rows)
        result |= {"greedy": metrics["accuracy"], "greedy_ci95": metrics["accuracy_ci95"],
                   "greedy_per_problem": [r["score"] for r in greedy_records]}
        records += greedy_records
    torch.manual_seed(0)
    metrics, sampled_records = evaluate_model(model, tokenizer, task, rows, k=k, temperature=temperature)
    records += sampled_records
    lengths = [len(tokenizer(r["completion"], add_special_tokens=False)["input_ids"]) for r in records]
    limit = TASKS[task].max_new_tokens
    result |= {"sampled": metrics["pass@1"], "sampled_ci95": metrics["pass@1_ci95"],
               "sampled_per_problem": [c / k for c in correct_per_problem(sampled_records, k)],
               "completion_length_mean": sum(lengths) / len(lengths),
               "clipped_share": sum(n >= limit for n in lengths) / len(lengths)}
    del model
    return result, records


def evaluate_all(model_name: str, runs: dict, task: str, limit: int | None, k: int, temperature: float,
                 out: Path) -> dict:
    """`base` and every (method, seed) -> greedy and sampled metrics on the held-out set."""
    from eval.tasks import TASKS, load_task_data

    rows = load_task_data(TASKS[task], None, limit)
    results = {}
    for key, adapter in [("base", None), *runs.items()]:
        name = key if key == "base" else f"{key[0]}-seed{key[1]}"
        results[key], records = evaluate(model_name, adapter, task, rows, k, temperature)
        with open(out / f"eval_{name}.jsonl", "w") as fh:
            fh.writelines(json.dumps(record) + "\n" for record in records)
        print(f"[compare] {name}: greedy {results[key]['greedy']:.3f}, sampled pass@1 {results[key]['sampled']:.3f}",
              flush=True)
    return results


def checkpoint_curves(model_name: str, runs: dict, task: str, validation: str, k: int, temperature: float,
                      limit: int | None = None) -> dict:
    """(method, seed) -> [{step, train_seconds, samples, validation sampled pass@1}] at each saved checkpoint."""
    from eval.tasks import TASKS, load_task_data

    rows = load_task_data(TASKS[task], validation, limit)
    curves = {}
    for (method, seed), run_dir in runs.items():
        saved = [json.loads(line) for line in (run_dir / "checkpoints.jsonl").read_text().splitlines()] \
            if (run_dir / "checkpoints.jsonl").is_file() else []
        config = yaml.safe_load((run_dir / "config.yaml").read_text())
        points = []
        for point in saved:
            checkpoint = run_dir / f"checkpoint-{point['step']}"
            if not (checkpoint / "adapter_model.safetensors").is_file():
                continue
            metrics, _ = evaluate(model_name, checkpoint, task, rows, k, temperature, greedy=False)
            points.append({"step": point["step"], "train_seconds": point["train_seconds"],
                           "samples": samples_per_step(method, config) * point["step"],
                           "validation_sampled_pass1": metrics["sampled"]})
        curves[(method, seed)] = points
        print(f"[compare] {method}-seed{seed} on validation: "
              + ", ".join(f"step {p['step']} {p['validation_sampled_pass1']:.3f}" for p in points), flush=True)
    return curves


def summarise(runs: dict, evals: dict, headline: str, estimates: dict | None, curves: dict | None = None) -> list:
    """One record per run (and `base`): accuracy with intervals, paired difference from the base, measured costs."""
    records = []
    base = evals["base"]
    for key in ["base", *runs]:
        e = evals[key]
        method, seed = (key, None) if key == "base" else key
        record = {"method": method, "seed": seed, "accuracy": e[headline], "accuracy_ci95": e[f"{headline}_ci95"],
                  "headline_metric": headline, "greedy_accuracy": e["greedy"], "greedy_ci95": e["greedy_ci95"],
                  "sampled_pass1": e["sampled"], "sampled_pass1_ci95": e["sampled_ci95"],
                  "completion_length_mean": e["completion_length_mean"],
                  "completion_length_base": base["completion_length_mean"], "clipped_share": e["clipped_share"]}
        if key == "base":
            record |= {key: None for key in ("peak_memory_mb", "train_seconds", "seconds_per_step",
                                             "samples_per_second", "train_steps", "models_in_memory",
                                             "trainable_params", "reward_first", "reward_last", "reward_seconds",
                                             "reward_share", "sandbox_programs_per_second")}
            records.append(record)
            continue
        cost = json.loads((runs[key] / "cost.json").read_text())
        curve = reward_curve(runs[key], REWARD_KEYS[method])
        first, last = first_last(curve)
        steps = cost["train_steps"]
        samples = samples_trained(method, runs[key], steps)
        logged_clipped = [v for _, v in reward_curve(runs[key], "completions/clipped_ratio")]
        record |= {
            "peak_memory_mb": cost["peak_memory_mb"], "memory_measure": cost["measure"],
            "runtime_memory_mb": cost.get("rss_before_model_mb"),
            "train_seconds": cost["train_seconds"], "train_steps": steps,
            "seconds_per_step": cost["train_seconds"] / max(1, steps),
            "samples_per_second": samples / cost["train_seconds"], "samples": samples,
            "models_in_memory": cost["models_in_memory"], "holds": HOLDS[method],
            "trainable_params": cost["trainable_params"], **reward_cost(cost),
            "reward_key": REWARD_KEYS[method], "reward_first": first, "reward_last": last, "reward_curve": curve,
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
            record["estimated_gb"] = estimates[method]["total_gb"]
        records.append(record)
    return records


def over_seeds(values: list[float]) -> dict:
    """Mean, sample standard deviation and 95% t-interval of one value per seed (one seed: no spread).

    >>> [round(x, 4) for x in over_seeds([0.80, 0.90, 0.85])["ci95"]]  # 0.85 -/+ 4.303 x 0.05 / sqrt(3)
    [0.7258, 0.9742]
    """
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return {"mean": mean, "sd": None, "ci95": None, "n": n}
    sd = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5
    half = T95.get(n - 1, 1.96) * sd / n ** 0.5
    return {"mean": mean, "sd": sd, "ci95": [mean - half, mean + half], "n": n}


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
        for key in ("peak_memory_mb", "train_seconds", "seconds_per_step", "samples_per_second", "reward_seconds",
                    "reward_share", "sandbox_programs_per_second", "completion_length_mean", "estimated_gb",
                    "training_clipped_share"):
            values = [r[key] for r in runs if r.get(key) is not None]
            entry[key] = sum(values) / len(values) if values else None
        for key in ("models_in_memory", "trainable_params", "train_steps", "samples", "holds", "reward_key",
                    "completion_length_base", "runtime_memory_mb", "memory_measure"):
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
    return {"reward_seconds": seconds, "reward_share": seconds / cost["train_seconds"],
            "reward_time": spent,
            "sandbox_programs_per_second": code["completions"] / code["seconds"] if code and code["seconds"] else None}


def samples_trained(method: str, run_dir: Path, steps: int) -> int:
    """Training samples processed: completions scored for GRPO (k per prompt) and PPO (one per prompt), preference
    pairs for DPO/ORPO (one epoch: its last batch may be short); read from the run's resolved config."""
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    per_step = samples_per_step(method, config)
    if method in ("dpo", "orpo"):
        pairs = sum(1 for _ in open(config["dataset_name"]))
        return min(per_step * steps, int(pairs * config["num_train_epochs"])) if config["max_steps"] <= 0 \
            else per_step * steps
    return per_step * steps


def write_markdown(summary: dict, settings: dict, path: Path, sweep: list | None = None) -> None:
    def pct(value, ci=None):
        return "n/a" if value is None else f"{value:.1%}" + (f" [{ci[0]:.1%}, {ci[1]:.1%}]" if ci else "")

    def diff(value, ci):
        return "" if value is None else f"{value:+.1%}" + (f" [{ci[0]:+.1%}, {ci[1]:+.1%}]" if ci else "")

    def num(value, fmt):
        return "n/a" if value is None else format(value, fmt)

    n_seeds = max(a["n_seeds"] for a in summary["methods"])
    lines = [f"# Method comparison, profile `{settings['profile']}`", "",
             f"Headline: **{settings['headline']}** (sampled pass@1 at T={settings['temperature']} from "
             f"{settings['eval_k']} samples per problem; greedy also shown). Held-out: {settings['eval_n']} problems "
             f"of task `{settings['task']}`. Budget: {settings['prompts']} training prompts, each seen once by every "
             f"method; {n_seeds} seed(s) per method. Per method: the mean over seeds with the seeds' 95% t-interval "
             "(with one seed: the run's own 95% interval); 'vs base' is the paired per-problem difference from the "
             "base, averaged over seeds.", "",
             "| method | seeds | sampled pass@1 | vs base | greedy | vs base | sd (sampled, greedy) | peak memory MB "
             "| est. GB | s/step | samples/s | models | trainable | reward s (share) | sandbox programs/s | clipped "
             "| flag |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for a in summary["methods"]:
        run = next(r for r in summary["runs"] if r["method"] == a["method"])
        single = a["n_seeds"] == 1
        flags = [f for f, on in (("beats base", a.get("beats_base")), ("clipped > 5%", a.get("flag_clipped")),
                                 ("reward up, held-out not", single and run.get("flag_reward_up_accuracy_not")))
                 if on]
        sd = ("" if a["sampled_pass1_sd"] is None else
              f"{a['sampled_pass1_sd']:.1%}, {a['greedy_accuracy_sd']:.1%}")
        reward_time = ("n/a" if a["reward_seconds"] is None else
                       f"{a['reward_seconds']:.1f} ({a['reward_share']:.0%})")
        vs_sampled = a.get("sampled_vs_base_ci95_seeds") or run.get("sampled_vs_base_ci95")
        vs_greedy = a.get("greedy_vs_base_ci95_seeds") or run.get("greedy_vs_base_ci95")
        lines.append(
            f"| {a['method']} | {a['n_seeds']} "
            f"| {pct(a['sampled_pass1'], a['sampled_pass1_ci95_seeds'] or run['sampled_pass1_ci95'])} "
            f"| {diff(a.get('sampled_vs_base'), vs_sampled)} "
            f"| {pct(a['greedy_accuracy'], a['greedy_accuracy_ci95_seeds'] or run['greedy_ci95'])} "
            f"| {diff(a.get('greedy_vs_base'), vs_greedy)} "
            f"| {sd} | {num(a['peak_memory_mb'], '.0f')} | {num(a['estimated_gb'], '.3f')} "
            f"| {num(a['seconds_per_step'], '.2f')} | {num(a['samples_per_second'], '.1f')} "
            f"| {num(a['models_in_memory'], 'd')} | {num(a['trainable_params'], ',')} "
            f"| {reward_time} | {num(a['sandbox_programs_per_second'], '.0f')} "
            f"| {pct(a['clipped_share'])} | {', '.join(flags)} |")
    lines += ["", "## Single runs", "", "| method | seed | sampled pass@1 | vs base | greedy | vs base | s/step "
              "| reward first -> last |", "|---|---|---|---|---|---|---|---|"]
    for r in summary["runs"]:
        if r["method"] == "base":
            continue
        lines.append(f"| {r['method']} | {r['seed']} | {pct(r['sampled_pass1'], r['sampled_pass1_ci95'])} "
                     f"| {diff(r['sampled_vs_base'], r['sampled_vs_base_ci95'])} "
                     f"| {pct(r['greedy_accuracy'], r['greedy_ci95'])} "
                     f"| {diff(r['greedy_vs_base'], r['greedy_vs_base_ci95'])} | {r['seconds_per_step']:.2f} "
                     f"| {num(r['reward_first'], '.3f')} -> {num(r['reward_last'], '.3f')} ({r['reward_key']}) |")
    if sweep:
        lines += ["", "## Learning-rate sweep (validation split)", "", "| method | learning rate | validation sampled "
                  "pass@1 | chosen |", "|---|---|---|---|"]
        lines += [f"| {row['method']} | {row['learning_rate']:g} "
                  f"| {pct(row['validation_sampled_pass1'], row['ci95'])} | {'yes' if row['chosen'] else ''} |"
                  for row in sweep]
    lines += ["", "Peak memory is measured in each method's own process: " + settings["memory_measure"]
              + ". 'est. GB' is `eval.estimate` for the same configs. Training rewards: GRPO and PPO log the task "
              "reward of their batches; DPO and ORPO log their implicit reward margin (no task reward in training). "
              "'clipped': share of held-out completions (greedy and sampled) that reached the length limit.",
              "", "## Settings", "", "```json", json.dumps(settings, indent=2), "```", ""]
    path.write_text("\n".join(lines))


def plot(summary: dict, estimates: dict | None, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from eval.plot import rolling_mean

    methods = summary["methods"]
    trained = [a for a in methods if a["method"] != "base"]
    names = [a["method"] for a in trained]
    runs = [r for r in summary["runs"] if r["method"] != "base"]
    colors = {a["method"]: f"C{i}" for i, a in enumerate(methods)}

    panels = 2 if estimates else 1
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 4), squeeze=False)
    runtime = [next(r for r in runs if r["method"] == n).get("runtime_memory_mb") or 0 for n in names]
    training = [a["peak_memory_mb"] - rt for a, rt in zip(trained, runtime, strict=True)]
    axes[0][0].bar(names, runtime, label="runtime before model load (measured)")
    axes[0][0].bar(names, training, bottom=runtime, label="model + training (measured, mean over seeds)")
    axes[0][0].set_ylabel("peak memory, MB")
    axes[0][0].set_title(f"measured ({runs[0]['memory_measure'].split(' (')[0]})" if runs else "measured")
    axes[0][0].legend(fontsize=7)
    if estimates:
        components = [c for c in next(iter(estimates.values())) if c != "total_gb"]
        bottom = [0.0] * len(names)
        for component in components:
            values = [estimates[m][component] for m in names]
            if any(values):
                axes[0][1].bar(names, values, bottom=bottom, label=component.removesuffix("_gb"))
                bottom = [b + v for b, v in zip(bottom, values, strict=True)]
        axes[0][1].set_ylabel("GB")
        axes[0][1].set_title("estimated by component (eval.estimate)")
        axes[0][1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "memory.png", dpi=100)
    plt.close(fig)

    # accuracy: the mean over seeds with its interval, and every single run as a point
    fig, ax = plt.subplots(figsize=(7, 4))
    metrics = (("sampled_pass1", "sampled_pass1_ci95", "sampled pass@1"), ("greedy_accuracy", "greedy_ci95", "greedy"))
    for offset, (metric, run_ci, label) in enumerate(metrics):
        xs = [i + offset * 0.4 for i in range(len(methods))]
        means = [a[metric] for a in methods]
        cis = [a[f"{metric}_ci95_seeds"] or next(r for r in summary["runs"] if r["method"] == a["method"])[run_ci]
               for a in methods]
        err = [[m - ci[0] for m, ci in zip(means, cis, strict=True)], [ci[1] - m for m, ci in zip(means, cis,
                                                                                              strict=True)]]
        ax.bar(xs, means, width=0.4, yerr=err, capsize=3, label=f"{label} (mean, 95% CI)", alpha=0.7)
        for x, a in zip(xs, methods, strict=True):
            points = [r[metric] for r in summary["runs"] if r["method"] == a["method"]]
            ax.plot([x] * len(points), points, "k.", markersize=5)
    ax.set_xticks([i + 0.2 for i in range(len(methods))], [a["method"] for a in methods])
    ax.set_ylabel("held-out accuracy (dots: single seeds)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "accuracy.png", dpi=100)
    plt.close(fig)

    # training signal: every seed's raw points and its rolling mean
    fig, axes = plt.subplots(1, max(1, len(trained)), figsize=(4 * max(1, len(trained)), 3.5), squeeze=False)
    for ax, a in zip(axes[0], trained, strict=False):
        for r in (r for r in runs if r["method"] == a["method"] and r["reward_curve"]):
            steps, values = zip(*r["reward_curve"], strict=True)
            ax.plot(steps, values, ".", color=colors[a["method"]], alpha=0.25, markersize=3)
            ax.plot(steps, rolling_mean(list(values), max(1, len(values) // 8)), color=colors[a["method"]],
                    linewidth=1, label=f"seed {r['seed']} (rolling mean)")
        ax.set_title(a["method"])
        ax.set_xlabel("step")
        ax.set_ylabel(a["reward_key"])
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(out / "rewards.png", dpi=100)
    plt.close(fig)

    # accuracy against compute: validation sampled pass@1 at each checkpoint, mean over seeds and its range
    if any(r.get("compute_curve") for r in runs):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for a in trained:
            curves = [r["compute_curve"] for r in runs if r["method"] == a["method"] and r.get("compute_curve")]
            if not curves:
                continue
            length = min(len(c) for c in curves)
            for ax, x_key in zip(axes, ("train_seconds", "samples"), strict=True):
                xs = [sum(c[i][x_key] for c in curves) / len(curves) for i in range(length)]
                ys = [[c[i]["validation_sampled_pass1"] for c in curves] for i in range(length)]
                ax.plot(xs, [sum(y) / len(y) for y in ys], marker="o", color=colors[a["method"]], label=a["method"])
                ax.fill_between(xs, [min(y) for y in ys], [max(y) for y in ys], color=colors[a["method"]], alpha=0.2)
        base = next(a for a in methods if a["method"] == "base")
        for ax, label in zip(axes, ("training seconds", "samples generated or trained on"), strict=True):
            ax.axhline(summary.get("base_validation_sampled_pass1") or base["sampled_pass1"], color="gray",
                       linestyle="--", linewidth=1, label="base")
            ax.set_xlabel(label)
            ax.set_ylabel("validation sampled pass@1 (band: seeds' range)")
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "compute.png", dpi=100)
        plt.close(fig)


def sweep(profile: str, prompts: int, out: Path, methods, grid: dict, validation: str, k: int,
          limit: int | None) -> list[dict]:
    """Each method at each learning rate of its grid (seed 0, the comparison's budget), scored on the validation
    split; the best validation sampled pass@1 per method is `chosen`. Writes sweep.json and sweep.png."""
    from eval.tasks import TASKS, load_task_data

    config = recipe_config(profile, "grpo")[1]
    task = PROFILES[profile]["task"]
    rows = load_task_data(TASKS[task], validation, limit)
    results = []
    for index in range(max(len(grid[m]) for m in methods)):
        rates = {m: grid[m][index] for m in methods if index < len(grid[m])}
        folder = out / "sweep" / f"grid-{index}"
        folder.mkdir(parents=True, exist_ok=True)
        runs = train_all(profile, prompts, folder, list(rates), 0, rates, checkpoints=0)
        for (method, _), run_dir in runs.items():
            metrics, _ = evaluate(config["model_name_or_path"], run_dir, task, rows, k, config["temperature"],
                                  greedy=False)
            results.append({"method": method, "learning_rate": rates[method],
                            "validation_sampled_pass1": metrics["sampled"], "ci95": metrics["sampled_ci95"],
                            "validation_n": len(rows), "k": k})
            print(f"[sweep] {method} lr {rates[method]:g}: validation sampled pass@1 {metrics['sampled']:.3f}",
                  flush=True)
    for method in methods:
        best = max((r for r in results if r["method"] == method), key=lambda r: r["validation_sampled_pass1"])
        for r in results:
            if r["method"] == method:
                r["chosen"] = r is best
    results.sort(key=lambda r: (METHODS.index(r["method"]), r["learning_rate"]))
    (out / "sweep.json").write_text(json.dumps(results, indent=2) + "\n")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for method in methods:
        rows_ = [r for r in results if r["method"] == method]
        ax.errorbar([r["learning_rate"] for r in rows_], [r["validation_sampled_pass1"] for r in rows_],
                    yerr=[[r["validation_sampled_pass1"] - r["ci95"][0] for r in rows_],
                          [r["ci95"][1] - r["validation_sampled_pass1"] for r in rows_]],
                    marker="o", capsize=3, label=method)
    ax.set_xscale("log")
    ax.set_xlabel("learning rate")
    ax.set_ylabel("validation sampled pass@1 (95% CI)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "sweep.png", dpi=100)
    plt.close(fig)
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="tiny", choices=sorted(PROFILES))
    parser.add_argument("--prompts", type=int, help="training prompts every method sees once (profile default)")
    parser.add_argument("--eval_limit", type=int, help="held-out (and validation) problems (default: the profile's)")
    parser.add_argument("--eval_k", type=int, help="samples per problem for sampled pass@1")
    parser.add_argument("--seeds", type=int, default=3, help="runs per method, seeds 0..N-1")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--sweep", action="store_true", help="the learning-rate sweep on the validation split")
    parser.add_argument("--learning_rates", type=float, nargs="+", help="the sweep's grid for every method "
                        "(default: SWEEP_GRID)")
    parser.add_argument("--validation_k", type=int, default=4, help="samples per validation problem")
    parser.add_argument("--out", help="default results/compare/<profile>")
    one_line_errors()
    args = parser.parse_args(argv)

    profile = PROFILES[args.profile]
    prompts = args.prompts or profile["prompts"]
    eval_k = args.eval_k or profile["eval_k"]
    limit = args.eval_limit or profile["eval_limit"]
    out = Path(args.out or f"results/compare/{args.profile}")
    out.mkdir(parents=True, exist_ok=True)
    grpo_config = recipe_config(args.profile, "grpo")[1]  # also fails early on a profile without configs
    temperature = grpo_config["temperature"]
    validation = profile["validation"]
    if (args.sweep or validation) and validation and not Path(validation).is_file():
        raise SystemExit(f"--profile {args.profile}: no validation split {validation} (make tiny builds it)")
    start = time.time()

    if args.sweep:
        if not validation:
            raise SystemExit(f"--profile {args.profile} has no validation split to sweep on")
        grid = {m: args.learning_rates or SWEEP_GRID[m] for m in args.methods}
        results = sweep(args.profile, prompts, out, args.methods, grid, validation, args.validation_k, limit)
        for row in results:
            if row["chosen"]:
                print(f"[sweep] {row['method']}: learning_rate {row['learning_rate']:g} (validation sampled pass@1 "
                      f"{row['validation_sampled_pass1']:.3f})")
        print(f"[sweep] wrote {out}/sweep.json, sweep.png in {time.time() - start:.0f} s")
        return results

    runs = {}
    for seed in range(args.seeds):
        runs |= train_all(args.profile, prompts, out, args.methods, seed, checkpoints=CHECKPOINTS if validation
                          else 0)
    evals = evaluate_all(grpo_config["model_name_or_path"], runs, profile["task"], limit, eval_k, temperature, out)
    curves = base_validation = None
    if validation:
        from eval.tasks import TASKS, load_task_data

        curves = checkpoint_curves(grpo_config["model_name_or_path"], runs, profile["task"], validation,
                                   args.validation_k, temperature, limit)
        rows = load_task_data(TASKS[profile["task"]], validation, limit)
        base_validation = evaluate(grpo_config["model_name_or_path"], None, profile["task"], rows,
                                   args.validation_k, temperature, greedy=False)[0]["sampled"]

    from eval.estimate import estimate_all
    from recipes.common import library_versions

    estimate_model = grpo_config["model_name_or_path"] if args.profile.startswith("tiny") else profile["model_name"]
    estimates = estimate_all(estimate_model, args.profile)[0]
    records = summarise(runs, evals, "sampled", estimates, curves)
    summary = {"methods": aggregate(records), "runs": records, "base_validation_sampled_pass1": base_validation}
    measure = next((r["memory_measure"] for r in records if "memory_measure" in r), "n/a")
    settings = {"profile": args.profile, "task": profile["task"], "prompts": prompts, "seeds": args.seeds,
                "eval_n": len(evals["base"]["greedy_per_problem"]), "eval_k": eval_k, "temperature": temperature,
                "validation": validation, "validation_k": args.validation_k,
                "learning_rates": {m: recipe_config(args.profile, m)[1].get("learning_rate") for m in args.methods},
                "headline": "sampled pass@1", "memory_measure": measure, "machine": platform.platform(),
                "processor": platform.processor() or platform.machine(), "cpus": __import__("os").cpu_count(),
                "versions": library_versions(), "seconds": round(time.time() - start, 1),
                "steps": {m: steps_for(m, recipe_config(args.profile, m)[1], prompts) for m in ("grpo", "ppo")}}
    sweep_path = out / "sweep.json"
    sweep_rows = json.loads(sweep_path.read_text()) if sweep_path.is_file() else None
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    write_markdown(summary, settings, out / "summary.md", sweep_rows)
    plot(summary, estimates, out)
    print((out / "summary.md").read_text())
    print(f"[compare] wrote {out}/summary.json, summary.md, memory.png, accuracy.png, rewards.png, compute.png "
          f"in {settings['seconds']:.0f} s")
    return summary


if __name__ == "__main__":
    main()
