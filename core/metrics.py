"""Reading what a run logged (metrics.jsonl): the training signal each method logs, its curve, first and last."""

import json
from pathlib import Path

# What each method logs as its training signal: the reward for GRPO and PPO, the preference margin for DPO/ORPO.
REWARD_KEYS = {"grpo": "reward", "ppo": "objective/scores", "dpo": "rewards/margins", "orpo": "rewards/margins"}


def read_metrics(run_dir: str | Path) -> list[dict]:
    """Every logged row of a run's metrics.jsonl (empty if the run logged nothing)."""
    path = Path(run_dir) / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def reward_curve(run_dir: str | Path, key: str) -> list[tuple[int, float]]:
    return [(row["step"], row[key]) for row in read_metrics(run_dir) if key in row]


def first_last(curve: list[tuple[int, float]]) -> tuple[float | None, float | None]:
    """Mean of the first and of the last fifth of the logged values: single steps are too noisy.

    >>> first_last([(1, 0.0), (2, 0.5), (3, 0.5), (4, 0.5), (5, 1.0)])
    (0.0, 1.0)
    """
    if not curve:
        return None, None
    n = max(1, len(curve) // 5)
    values = [v for _, v in curve]
    return sum(values[:n]) / n, sum(values[-n:]) / n
