"""Does GRPO raise the reward on the prompts it trains on? Before/after a short run on the tiny world.

Usage:
    make reward-check                  # = python -m studies.reward_check
    python -m studies.reward_check --steps 20 --prompts 32 --k 16

GRPO trains on the first `--prompts` training prompts for `--steps` steps (several passes over them); the
training reward (math_accuracy, sampled at the training temperature) of the starting model and of the adapter is
measured on exactly those prompts x `--k` samples, both in 4-bit as trained, and reported with 95% intervals and
as a paired per-prompt difference. This checks that the loop optimises its reward; whether that carries over to
held-out problems is the comparison's question (held-out accuracy), not this one's. The per-step batch reward in
metrics.jsonl (4 prompts a step) is too noisy for either.
"""

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch
import yaml

from core.errors import one_line_errors
from core.evaluation.accuracy import correct_per_problem, evaluate_model, load_for_eval
from core.evaluation.benchmarks import TASKS, load_task_data
from core.report.stats import paired_difference

CONFIG = "recipes/configs/tiny/grpo.yaml"


def sampled_reward(model: str, adapter: str | None, data: str, prompts: int, k: int, temperature: float) -> dict:
    torch.manual_seed(0)
    rows = load_task_data(TASKS["tiny"], data, prompts)
    loaded, tokenizer = load_for_eval(model, adapter, load_in_4bit=True)
    metrics, records = evaluate_model(loaded, tokenizer, "tiny", rows, k=k, temperature=temperature)
    per_prompt = [correct / k for correct in correct_per_problem(records, k)]
    return {
        "mean_reward": metrics["pass@1"],
        "ci95": metrics["pass@1_ci95"],
        "prompts": prompts,
        "k": k,
        "per_prompt": per_prompt,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=CONFIG)
    parser.add_argument("--steps", type=int, default=20)  # 8 prompts a step: 5 passes over 32 prompts
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--out", default="results/reward_check")
    parser.add_argument("--grpo_args", nargs=argparse.REMAINDER, default=[], help="extra recipe flags, last")
    one_line_errors()
    args = parser.parse_args(argv)

    config = yaml.safe_load(Path(args.config).read_text())
    model, data, temperature = config["model_name_or_path"], config["dataset_name"], config["temperature"]
    if "--temperature" in args.grpo_args:  # measure at the temperature the run trains at
        temperature = float(args.grpo_args[args.grpo_args.index("--temperature") + 1])
    out = Path(args.out)
    run_dir = out / "grpo"
    shutil.rmtree(run_dir, ignore_errors=True)  # a rerun starts clean: its metrics.jsonl must not append to the last
    start = time.time()
    before = sampled_reward(model, None, data, args.prompts, args.k, temperature)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "recipes.grpo",
            "--config",
            args.config,
            "--max_steps",
            str(args.steps),
            "--max_train_samples",
            str(args.prompts),
            "--output_dir",
            str(run_dir),
            "--heldout_limit",  # the check samples before and after itself (ARGS can turn this back on)
            "0",
            *args.grpo_args,
        ],
        check=True,
    )
    after = sampled_reward(model, str(run_dir), data, args.prompts, args.k, temperature)
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    report = {
        "before": before,
        "after": after,
        "steps": args.steps,
        "temperature": temperature,
        "config": args.config,
        "grpo_args": args.grpo_args,
        "seconds": round(time.time() - start, 1),
        "batch_reward_curve": [[row["step"], row["reward"]] for row in rows if "reward" in row],
        "difference": paired_difference(before["per_prompt"], after["per_prompt"]),
        "rose": after["mean_reward"] > before["mean_reward"],
    }
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(
        f"mean training reward (T={temperature}, {args.prompts} prompts x {args.k}): "
        f"{before['mean_reward']:.3f} [{before['ci95'][0]:.3f}, {before['ci95'][1]:.3f}] before -> "
        f"{after['mean_reward']:.3f} [{after['ci95'][0]:.3f}, {after['ci95'][1]:.3f}] after {args.steps} GRPO "
        f"steps ({report['seconds']:.0f}s); paired difference {report['difference']['mean']:+.3f} "
        f"[{report['difference']['ci95'][0]:+.3f}, {report['difference']['ci95'][1]:+.3f}]"
    )
    return report


if __name__ == "__main__":
    main()
