"""The "7B on limited compute" comparison: GRPO, PPO, DPO and ORPO from the same start, on the same prompts,
with the same rewards; what each costs (memory, time) and buys (held-out accuracy).

Usage:
    make compare                       # = python -m eval.comparison --profile tiny  (2-core CPU, offline)
    make compare PROFILE=7b            # one GPU; GSM8K from the hub
    python -m eval.comparison --profile tiny --prompts 16 --eval_limit 20 --out /tmp/compare-smoke

Matched budget: every method sees the same `--prompts` training prompts (the first N rows of the profile's
training set), each exactly once. GRPO samples k completions for each (its group is its baseline); PPO samples
one (its critic is its baseline); DPO and ORPO train one epoch on the pairs that `recipes.pairs` builds from k
samples of the same prompts by the starting model, scored with the same rewards (a prompt whose k samples all
score the same gives no pair). Each method trains in its own process with its profile's recipe config
(`recipes/configs/<profile>/<method>.yaml`); only the output folder, the prompt budget (as max_steps) and the
logging interval are overridden, so `make grpo` and the comparison's GRPO are the same run.

Evaluation (every adapter and the starting model, 4-bit as trained, on the same held-out problems): greedy
accuracy, and sampled pass@1 at the training temperature from `--eval_k` samples per problem. The headline is
sampled pass@1: it is what the RL methods optimise (expected reward at the temperature they sample at) and, with k
samples per problem, it has a much narrower interval than greedy accuracy. Both are reported, with Wilson /
normal 95% intervals, and each method's paired per-problem difference from the base with its own interval.

Writes results/compare/<profile>/: summary.json (a list, one record per method and `base`), settings.json (machine,
versions, budget), summary.md (the table with both), memory.png, accuracy.png, rewards.png, and per method its run
folder (adapter, metrics.jsonl, cost.json) and its evaluation samples (eval_<method>.jsonl).
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
    "tiny": {"task": "tiny", "prompts": 320, "eval_limit": None, "eval_k": 8, "model_name": "artifacts/tiny/model"},
    "tiny-code": {"task": "tiny-code", "prompts": 320, "eval_limit": None, "eval_k": 8,
                  "model_name": "artifacts/tiny-code/model"},
    "7b": {"task": "gsm8k", "prompts": 512, "eval_limit": 500, "eval_k": 4, "model_name": "qwen2.5-7b"},
}
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


def train_all(profile: str, prompts: int, out: Path, methods) -> dict:
    """Train every method in its own process; returns method -> run folder."""
    runs = {}
    pairs_path, pairs_config = recipe_config(profile, "pairs")
    pairs_file = out / "pairs.jsonl"
    if {"dpo", "orpo"} & set(methods):
        grpo_config = recipe_config(profile, "grpo")[1]
        run([sys.executable, "-m", "recipes.pairs", "--config", str(pairs_path), "--max_prompts", str(prompts),
             "--num_samples", str(grpo_config.get("num_generations", 8)),
             "--temperature", str(grpo_config.get("temperature", 1.0)), "--output", str(pairs_file)],
            out / "pairs.log")
    for method in methods:
        path, config = recipe_config(profile, method)
        run_dir = out / method
        command = [sys.executable, "-m", f"recipes.{method}", "--config", str(path), "--output_dir", str(run_dir),
                   "--logging_steps", "1", "--save_strategy", "no"]
        if method in ("grpo", "ppo"):
            command += ["--max_train_samples", str(prompts), "--max_steps", str(steps_for(method, config, prompts))]
        else:
            command += ["--dataset_name", str(pairs_file), "--max_steps", "-1", "--num_train_epochs", "1"]
        print(f"[compare] training {method} ...", flush=True)
        seconds = run(command, out / f"{method}.log")
        print(f"[compare] {method} done in {seconds:.0f} s", flush=True)
        runs[method] = run_dir
    return runs


def evaluate_all(model_name: str, runs: dict, task: str, limit: int | None, k: int, temperature: float,
                 out: Path) -> dict:
    """method (and `base`) -> greedy and sampled metrics with per-problem scores, 4-bit as trained."""
    import torch

    from eval.run import correct_per_problem, evaluate_model, load_for_eval
    from eval.tasks import TASKS, load_task_data

    rows = load_task_data(TASKS[task], None, limit)
    results = {}
    for method, adapter in [("base", None), *runs.items()]:
        model, tokenizer = load_for_eval(model_name, str(adapter) if adapter else None, load_in_4bit=True)
        torch.manual_seed(0)
        greedy, greedy_records = evaluate_model(model, tokenizer, task, rows)
        torch.manual_seed(0)
        sampled, sampled_records = evaluate_model(model, tokenizer, task, rows, k=k, temperature=temperature)
        lengths = [len(tokenizer(r["completion"], add_special_tokens=False)["input_ids"]) for r in greedy_records]
        with open(out / f"eval_{method}.jsonl", "w") as fh:
            for record in greedy_records + sampled_records:
                fh.write(json.dumps(record) + "\n")
        results[method] = {
            "greedy": greedy["accuracy"], "greedy_ci95": greedy["accuracy_ci95"],
            "sampled": sampled["pass@1"], "sampled_ci95": sampled["pass@1_ci95"],
            "greedy_per_problem": [r["score"] for r in greedy_records],
            "sampled_per_problem": [correct / k for correct in correct_per_problem(sampled_records, k)],
            "completion_length_mean": sum(lengths) / len(lengths),
        }
        print(f"[compare] {method}: greedy {greedy['accuracy']:.3f}, sampled pass@1 {sampled['pass@1']:.3f}",
              flush=True)
        del model
    return results


def summarise(runs: dict, evals: dict, headline: str, estimates: dict | None) -> list[dict]:
    records = []
    base = evals["base"]
    for method in ["base", *runs]:
        e = evals[method]
        record = {"method": method, "accuracy": e[headline], "accuracy_ci95": e[f"{headline}_ci95"],
                  "headline_metric": headline, "greedy_accuracy": e["greedy"], "greedy_ci95": e["greedy_ci95"],
                  "sampled_pass1": e["sampled"], "sampled_pass1_ci95": e["sampled_ci95"],
                  "completion_length_mean": e["completion_length_mean"],
                  "completion_length_base": base["completion_length_mean"]}
        if method == "base":
            record |= {key: None for key in ("peak_memory_mb", "train_seconds", "seconds_per_step",
                                             "samples_per_second", "train_steps", "models_in_memory",
                                             "trainable_params", "reward_first", "reward_last", "reward_seconds",
                                             "reward_share", "sandbox_programs_per_second")}
            records.append(record)
            continue
        cost = json.loads((runs[method] / "cost.json").read_text())
        curve = reward_curve(runs[method], REWARD_KEYS[method])
        first, last = first_last(curve)
        steps = cost["train_steps"]
        samples = samples_trained(method, runs[method], steps)
        record |= {
            "peak_memory_mb": cost["peak_memory_mb"], "memory_measure": cost["measure"],
            "runtime_memory_mb": cost.get("rss_before_model_mb"),
            "train_seconds": cost["train_seconds"], "train_steps": steps,
            "seconds_per_step": cost["train_seconds"] / max(1, steps),
            "samples_per_second": samples / cost["train_seconds"], "samples": samples,
            "models_in_memory": cost["models_in_memory"], "holds": HOLDS[method],
            "trainable_params": cost["trainable_params"], **reward_cost(cost),
            "reward_key": REWARD_KEYS[method], "reward_first": first, "reward_last": last, "reward_curve": curve,
        }
        for metric in ("greedy", "sampled"):
            diff = paired_difference(base[f"{metric}_per_problem"], e[f"{metric}_per_problem"])
            record[f"{metric}_vs_base"] = diff["mean"]
            record[f"{metric}_vs_base_ci95"] = diff["ci95"]
        headline_low = record[f"{headline}_vs_base_ci95"][0]
        record["beats_base"] = headline_low > 0
        # Reward hacking or overfitting shows up exactly here: the training reward rose, held-out accuracy did not.
        record["flag_reward_up_accuracy_not"] = first is not None and last > first and headline_low <= 0
        if estimates:
            record["estimated_gb"] = estimates[method]["total_gb"]
        records.append(record)
    return records


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


def write_markdown(records: list[dict], settings: dict, path: Path) -> None:
    def pct(value, ci=None):
        return "n/a" if value is None else f"{value:.1%}" + (f" [{ci[0]:.1%}, {ci[1]:.1%}]" if ci else "")

    def num(value, fmt):
        return "n/a" if value is None else format(value, fmt)

    lines = [f"# Method comparison, profile `{settings['profile']}`", "",
             f"Headline: **{settings['headline']}** (sampled pass@1 at T={settings['temperature']} from "
             f"{settings['eval_k']} samples per problem; greedy also shown). Held-out: {settings['eval_n']} problems "
             f"of task `{settings['task']}`. Budget: {settings['prompts']} training prompts, each seen once by every "
             "method. 95% intervals; 'vs base' is the paired per-problem difference.", "",
             "| method | sampled pass@1 | vs base | greedy | vs base | peak memory MB | est. GB | s/step | steps "
             "| samples/s | models | trainable | reward first -> last | reward s (share) | sandbox programs/s "
             "| length (base) | flag |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        vs = {m: ("" if r["method"] == "base" else
                  f"{r[m + '_vs_base']:+.1%} [{r[m + '_vs_base_ci95'][0]:+.1%}, {r[m + '_vs_base_ci95'][1]:+.1%}]")
              for m in ("sampled", "greedy")}
        reward = ("" if r["reward_first"] is None else
                  f"{r['reward_first']:.3f} -> {r['reward_last']:.3f} ({r['reward_key']})")
        flag = "reward up, held-out not" if r.get("flag_reward_up_accuracy_not") else ""
        reward_time = ("n/a" if r["reward_seconds"] is None else
                       f"{r['reward_seconds']:.1f} ({r['reward_share']:.0%})")
        lines.append(
            f"| {r['method']} | {pct(r['sampled_pass1'], r['sampled_pass1_ci95'])} | {vs['sampled']} "
            f"| {pct(r['greedy_accuracy'], r['greedy_ci95'])} | {vs['greedy']} | {num(r['peak_memory_mb'], '.0f')} "
            f"| {num(r.get('estimated_gb'), '.3f')} | {num(r['seconds_per_step'], '.2f')} "
            f"| {num(r['train_steps'], 'd')} | {num(r['samples_per_second'], '.1f')} "
            f"| {num(r['models_in_memory'], 'd')} | {num(r['trainable_params'], ',')} | {reward} "
            f"| {reward_time} | {num(r['sandbox_programs_per_second'], '.0f')} "
            f"| {r['completion_length_mean']:.1f} ({r['completion_length_base']:.1f}) | {flag} |")
    lines += ["", "Peak memory is measured in each method's own process: " + settings["memory_measure"]
              + ". 'est. GB' is `eval.estimate` for the same configs. Training rewards: GRPO and PPO log the task "
              "reward of their batches; DPO and ORPO log their implicit reward margin (no task reward in training).",
              "", "## Settings", "", "```json", json.dumps(settings, indent=2), "```", ""]
    path.write_text("\n".join(lines))


def plot(records: list[dict], estimates: dict | None, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    trained = [r for r in records if r["method"] != "base"]
    names = [r["method"] for r in trained]
    panels = 2 if estimates else 1
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 4), squeeze=False)
    runtime = [r.get("runtime_memory_mb") or 0 for r in trained]
    training = [r["peak_memory_mb"] - rt for r, rt in zip(trained, runtime, strict=True)]
    axes[0][0].bar(names, runtime, label="runtime before model load (measured)")
    axes[0][0].bar(names, training, bottom=runtime, label="model + training (measured)")
    axes[0][0].set_ylabel("peak memory, MB")
    axes[0][0].set_title(f"measured ({trained[0]['memory_measure'].split(' (')[0]})" if trained else "measured")
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

    fig, ax = plt.subplots(figsize=(7, 4))
    all_names = [r["method"] for r in records]
    metrics = (("sampled_pass1", "sampled_pass1_ci95", "sampled pass@1"), ("greedy_accuracy", "greedy_ci95", "greedy"))
    for offset, (metric, ci_key, label) in enumerate(metrics):
        values = [r[metric] for r in records]
        err = [[r[metric] - r[ci_key][0] for r in records], [r[ci_key][1] - r[metric] for r in records]]
        ax.bar([i + offset * 0.4 for i in range(len(records))], values, width=0.4, yerr=err, capsize=3, label=label)
    ax.set_xticks([i + 0.2 for i in range(len(records))], all_names)
    ax.set_ylabel("held-out accuracy (95% CI)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "accuracy.png", dpi=100)
    plt.close(fig)

    fig, axes = plt.subplots(1, len(trained), figsize=(4 * max(1, len(trained)), 3.5), squeeze=False)
    for ax, r in zip(axes[0], trained, strict=False):
        if r["reward_curve"]:
            steps, values = zip(*r["reward_curve"], strict=True)
            ax.plot(steps, values, marker=".", linewidth=1)
        ax.set_title(r["method"])
        ax.set_xlabel("step")
        ax.set_ylabel(r["reward_key"])
    fig.tight_layout()
    fig.savefig(out / "rewards.png", dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="tiny", choices=sorted(PROFILES))
    parser.add_argument("--prompts", type=int, help="training prompts every method sees once (profile default)")
    parser.add_argument("--eval_limit", type=int, help="held-out problems (default: the profile's)")
    parser.add_argument("--eval_k", type=int, help="samples per problem for sampled pass@1")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
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
    start = time.time()

    runs = train_all(args.profile, prompts, out, args.methods)
    evals = evaluate_all(grpo_config["model_name_or_path"], runs, profile["task"], limit, eval_k, temperature, out)

    from eval.estimate import estimate_all
    from recipes.common import library_versions

    estimate_model = grpo_config["model_name_or_path"] if args.profile.startswith("tiny") else profile["model_name"]
    estimates = estimate_all(estimate_model, args.profile)[0]
    records = summarise(runs, evals, "sampled", estimates)
    measure = next((r["memory_measure"] for r in records if "memory_measure" in r), "n/a")
    settings = {"profile": args.profile, "task": profile["task"], "prompts": prompts, "eval_n": len(
        evals["base"]["greedy_per_problem"]), "eval_k": eval_k, "temperature": temperature,
        "headline": "sampled pass@1", "memory_measure": measure, "machine": platform.platform(),
        "processor": platform.processor() or platform.machine(), "cpus": __import__("os").cpu_count(),
        "versions": library_versions(), "seconds": round(time.time() - start, 1),
        "steps": {m: steps_for(m, recipe_config(args.profile, m)[1], prompts) for m in ("grpo", "ppo")}}
    (out / "summary.json").write_text(json.dumps(records, indent=2) + "\n")
    (out / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    write_markdown(records, settings, out / "summary.md")
    plot(records, estimates, out)
    print((out / "summary.md").read_text())
    print(f"[compare] wrote {out}/summary.json, summary.md, memory.png, accuracy.png, rewards.png "
          f"in {settings['seconds']:.0f} s")
    return records


if __name__ == "__main__":
    main()
