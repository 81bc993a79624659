"""What each reward cost and scored while a run trains: `TimedReward` wraps a reward as training calls it, and the
run's `RewardLedger` keeps the seconds, calls, scores and lengths it saw (cost.json's reward time, metrics.jsonl's
per-reward means and the lengths of passed and failed completions)."""

import time
from dataclasses import dataclass, field

from rewards import call_reward
from rewards.time_limit import REWARD_TIMEOUT_SECONDS


@dataclass
class RewardLedger:
    """One run's reward bookkeeping, held by the run and handed to its rewards and callbacks.

    Args:
        time: reward name -> seconds, calls and completions spent in it (what a code reward's sandbox costs).
        scores: reward name -> its scores since the last logged step, so every trainer's metrics.jsonl has
            `rewards/<name>/mean` (GRPO logs it itself; PPO only the weighted total).
        lengths: `lengths/<name>/passed|failed` -> the token lengths of the completions each pass/fail reward passed
            and failed since the last logged step (this process's batches).
    """

    time: dict[str, dict[str, float]] = field(default_factory=dict)
    scores: dict[str, list[float]] = field(default_factory=dict)
    lengths: dict[str, list[int]] = field(default_factory=dict)

    def means_since_last_log(self) -> dict[str, float]:
        """Each reward's mean score and each length key's mean since the last call, then forgotten."""
        means = {f"rewards/{name}/mean": sum(s) / len(s) for name, s in self.scores.items() if s}
        means |= {key: sum(lengths) / len(lengths) for key, lengths in self.lengths.items() if lengths}
        self.scores.clear()
        self.lengths.clear()
        return means

    def record(self, name: str, seconds: float, completions: int, scores: list, columns: dict) -> None:
        spent = self.time.setdefault(name, {"seconds": 0.0, "calls": 0, "completions": 0})
        spent["seconds"] += seconds
        spent["calls"] += 1
        spent["completions"] += completions
        self.scores.setdefault(name, []).extend(score for score in scores if score is not None)
        self.record_lengths(name, scores, columns)

    def record_lengths(self, name: str, scores: list, columns: dict) -> None:
        """For a pass/fail reward, the token lengths of the completions it passed and of those it failed (TRL's GRPO
        hands rewards `completion_ids`): what training does to the length of right and of wrong answers (GRPO's
        length bias). Not through TRL's `log_metric`: that gathers each metric across ranks, and a rank whose batch
        has no passed (or no failed) completion would leave the others waiting."""
        ids = columns.get("completion_ids")
        if ids is None or len(ids) != len(scores) or not {s for s in scores if s is not None} <= {0.0, 1.0}:
            return
        for verdict, value in (("passed", 1.0), ("failed", 0.0)):
            lengths = [len(i) for i, s in zip(ids, scores, strict=True) if s == value]
            self.lengths.setdefault(f"lengths/{name}/{verdict}", []).extend(lengths)


class TimedReward:
    """A reward function as training calls it: checked (`rewards.call_reward`: one finite number or None per
    completion within `timeout` seconds, or an error naming the reward and the row) and recorded in the run's
    `ledger`. A class, not a closure, so it pickles like the rewards it wraps."""

    def __init__(self, func, ledger: RewardLedger, timeout: float | None = REWARD_TIMEOUT_SECONDS):
        self.func, self.ledger, self.timeout = func, ledger, timeout
        self.__name__ = getattr(func, "__name__", type(func).__name__)

    def __call__(self, completions, **columns):
        start = time.perf_counter()
        scores = call_reward(self.func, completions, timeout=self.timeout, **columns)
        self.ledger.record(self.__name__, time.perf_counter() - start, len(completions), scores, columns)
        return scores
