"""Your own task, evaluated: any dataset (a local file or a hub id) scored by any rewards (registered names or dotted
paths), with the same data checks as training (`make eval DATA=... REWARDS=...`).

Each row's prompt is built as the recipes build it (`prompt_column`, or `prompt_template` filled from the row, and
`system_prompt`); each completion is scored by every reward (`rewards.call_reward`: checked, errors name the reward
and the row) and by their weighted sum. A sample passes when the weighted sum reaches `pass_threshold`, by default
the sum of the positive weights (every reward at its maximum of 1.0, as the project's pass/fail rewards score);
accuracy is the share of samples that pass (k=1) or pass@k over rows.
"""

import math
from dataclasses import dataclass, field

from core.inputs.arguments import PromptArguments, RewardArguments
from core.inputs.prepare import prepare_prompts
from core.inputs.prompts import prompt_messages, prompt_text
from core.inputs.rewards import resolve_rewards
from rewards import call_reward


@dataclass
class RewardTask:
    data: str
    reward_names: list[str]
    reward_weights: list[float]
    funcs: list = field(repr=False)
    prompt_column: str = "question"
    prompt_template: str | None = None
    system_prompt: str | None = None
    pass_threshold: float | None = None
    split: str = "train"

    @property
    def name(self) -> str:
        return "rewards:" + ",".join(self.reward_names)

    @property
    def threshold(self) -> float:
        return self.pass_threshold if self.pass_threshold is not None else sum(w for w in self.reward_weights if w > 0)

    def messages(self, row: dict) -> list[dict]:
        return prompt_messages(prompt_text(row, self.prompt_column, self.prompt_template), self.system_prompt)


def load_reward_task(
    data: str,
    reward_names: list[str],
    reward_weights: list[float] | None = None,
    prompt_column: str = "question",
    prompt_template: str | None = None,
    system_prompt: str | None = None,
    pass_threshold: float | None = None,
    split: str = "train",
    limit: int | None = None,
    drop_incomplete: bool = False,
) -> tuple[RewardTask, list[dict]]:
    """The task and its rows, checked before any model loads: the rewards resolve (and the sandbox can isolate code),
    the weights match them, and the data has the prompt's columns and every column the rewards read
    (`prepare_prompts`, as the recipes prepare theirs)."""
    rewards = resolve_rewards(RewardArguments(reward_funcs=list(reward_names)), reward_weights)
    data_args = PromptArguments(
        dataset_name=data,
        dataset_train_split=split,
        drop_incomplete_rows=drop_incomplete,
        prompt_column=prompt_column,
        prompt_template=prompt_template,
        system_prompt=system_prompt,
    )
    dataset = prepare_prompts(data_args, rewards.names, limit=limit).dataset
    task = RewardTask(
        data,
        rewards.names,
        rewards.weights,
        rewards.funcs,
        prompt_column,
        prompt_template,
        system_prompt,
        pass_threshold,
        split,
    )
    return task, [dict(row) for row in dataset]


def mean_ci95(values: list[float]) -> dict:
    """Mean with a normal 95% interval over the values that are numbers (None: not applicable, left out).

    >>> mean_ci95([1.0, 0.0, None, 1.0, 0.0])
    {'mean': 0.5, 'ci95': [-0.0658, 1.0658], 'n': 4}
    """
    scored = [v for v in values if v is not None]
    if not scored:
        return {"mean": None, "ci95": None, "n": 0}
    mean = sum(scored) / len(scored)
    sd = math.sqrt(sum((v - mean) ** 2 for v in scored) / max(1, len(scored) - 1))
    half = 1.96 * sd / math.sqrt(len(scored))
    return {"mean": mean, "ci95": [round(mean - half, 4), round(mean + half, 4)], "n": len(scored)}


def score_samples(task: RewardTask, rows: list[dict], samples: list[list[str]]) -> tuple[dict, list[dict]]:
    """(each reward's mean and the weighted sum's, with intervals; per-sample records with every reward's score and
    `score` = 1.0 when the sample passes). `samples` holds k completions per row."""
    k = len(samples[0]) if samples else 1
    flat_rows = [row for row in rows for _ in range(k)]
    completions = [c for group in samples for c in group]
    prompts = [task.messages(row) for row in flat_rows]
    columns = {key: [row.get(key) for row in flat_rows] for key in rows[0]} if rows else {}
    labels = [f"{i // k}" + (f" (sample {i % k})" if k > 1 else "") for i in range(len(completions))]
    per_reward = {
        name: call_reward(func, completions, row_labels=labels, prompts=prompts, **columns)
        for name, func in zip(task.reward_names, task.funcs, strict=True)
    }
    weighted = [
        sum(w * (per_reward[name][i] or 0.0) for name, w in zip(task.reward_names, task.reward_weights, strict=True))
        for i in range(len(completions))
    ]
    records = [
        {
            "index": i // k,
            "sample": i % k,
            "prompt": prompts[i][-1]["content"],
            "completion": completion,
            "rewards": {name: per_reward[name][i] for name in task.reward_names},
            "weighted": weighted[i],
            "score": float(weighted[i] >= task.threshold),
            "reason": f"weighted {weighted[i]:.3f} {'>=' if weighted[i] >= task.threshold else '<'} "
            f"threshold {task.threshold:g}",
        }
        for i, completion in enumerate(completions)
    ]
    summary = {
        "reward_means": {name: mean_ci95(per_reward[name]) for name in task.reward_names},
        "weighted_mean": mean_ci95(weighted),
    }
    return summary, records
