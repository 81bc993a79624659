"""Reading what a run logged (metrics.jsonl): the training signal each method logs, its curve, first and last."""

import json
import math
from numbers import Real
from pathlib import Path

# What each method logs as its training signal: the reward for GRPO and PPO, the preference margin for DPO/ORPO.
REWARD_KEYS = {
    "grpo": "reward",
    "ppo": "objective/scores",
    "dpo": "rewards/margins",
    "ipo": "rewards/margins",
    "orpo": "rewards/margins",
}


def read_metrics(run_dir: str | Path) -> list[dict]:
    """Every logged row of a run's metrics.jsonl (empty if the run logged nothing)."""
    path = Path(run_dir) / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def is_number(value) -> bool:
    """A finite number (not a bool, None, text, NaN or infinity): what a summary can average.

    >>> [is_number(v) for v in (0.5, 3, float("nan"), float("inf"), None, "0.5", True)]
    [True, True, False, False, False, False, False]
    """
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)


def numbers_of(rows: list[dict], key: str) -> list[float]:
    """The finite numbers logged under `key`, in order (rows without it, or with a non-number, left out)."""
    return [row[key] for row in rows if is_number(row.get(key))]


def reward_curve(run_dir: str | Path, key: str) -> list[tuple[int, float]]:
    return [(row["step"], row[key]) for row in read_metrics(run_dir) if is_number(row.get(key))]


def first_last(curve: list[tuple[int, float]]) -> tuple[float | None, float | None]:
    """Mean of the first and of the last fifth of the logged values: single steps are too noisy. Values that are not
    finite numbers (None, NaN, text) are left out; (None, None) when none is left.

    >>> first_last([(1, 0.0), (2, 0.5), (3, 0.5), (4, 0.5), (5, 1.0)])
    (0.0, 1.0)
    >>> first_last([(1, None), (2, float("nan"))])
    (None, None)
    """
    values = [v for _, v in curve if is_number(v)]
    if not values:
        return None, None
    n = max(1, len(values) // 5)
    return sum(values[:n]) / n, sum(values[-n:]) / n
