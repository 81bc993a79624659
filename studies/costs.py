"""What a run held and processed, read the same way by the comparison and the memory bench: what each method holds in
memory while it trains (`HOLDS`) and the training samples a run processed (`samples_trained`)."""

from pathlib import Path

import yaml

from studies.runner import PREFERENCE_METHODS, samples_per_step

# What each method holds in memory while it trains. (Its training signal, core.runs.metrics.REWARD_KEYS: GRPO and PPO
# log the task reward of the batch; DPO and ORPO have no task reward in training, only their implicit reward margin.)
HOLDS = {
    "grpo": "policy; reference = the same base with the adapter off",
    "ppo": "policy + critic (own LoRA + head on the policy's 4-bit base); reference = adapter off; reward: a function",
    "dpo": "policy; reference = the same base with the adapter off",
    "ipo": "policy; reference = the same base with the adapter off",
    "orpo": "policy; no reference",
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
