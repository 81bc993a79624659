"""Rewards the recipe tests select by dotted path (`tests.recipes.reward_probes.record_prompts`) like any user reward:
one logs what the trainer asked it to score, so a test can compare the data order of two runs; one reads a column the
data does not have."""

import json
import os

from rewards.text import completion_text


def record_prompts(completions, prompts=None, completion_ids=None, **kwargs) -> list[float]:
    """Appends one line per call: the prompts and completions scored (and, from GRPO, their token counts), the
    process's rank and a digest of torch's RNG state. Scores completion length (any signal will do)."""
    texts = [completion_text(c) for c in completions]
    prompt_texts = [p if isinstance(p, str) else p[-1]["content"] for p in (prompts or [])]
    with open(os.environ["PROMPT_LOG"], "a") as fh:
        record = {"prompts": prompt_texts, "completions": texts, "rank": os.environ.get("RANK", "0")}
        record["token_counts"] = [len(ids) for ids in completion_ids] if completion_ids is not None else None
        fh.write(json.dumps(record | {"rng": _rng_digest()}) + "\n")
    return [min(len(t), 100) / 100 for t in texts]


def needs_unit(completions, unit, **kwargs) -> list[float]:
    """Reads its own column, `unit`: the pre-flight must ask the data for it before any model loads."""
    return [1.0 if u in completion_text(c) else 0.0 for c, u in zip(completions, unit, strict=True)]


def always_zero(completions, **kwargs) -> list[float]:
    """The same score for every completion: a run with no signal."""
    return [0.0 for _ in completions]


def always_half(completions, **kwargs) -> list[float]:
    return [0.5 for _ in completions]


def alternating(completions, **kwargs) -> list[float]:
    """1, 0, 1, 0, ... in the order given: whatever the model writes (and whatever the CPU's numerics make of it),
    every group of two or more samples holds a pair."""
    return [float(i % 2 == 0) for i in range(len(completions))]


def one_score_per_batch(completions, **kwargs) -> list[float]:
    """Broken on purpose: one score for the whole batch."""
    return [1.0]


def _rng_digest() -> str:
    import hashlib

    import torch

    return hashlib.md5(torch.random.get_rng_state().numpy().tobytes()).hexdigest()[:12]


def longer(completions, **kwargs) -> list[float]:
    """Pays for characters, up to 400: a length-sensitive reward that says nothing about being right."""
    return [min(len(completion_text(c)), 400) / 400 for c in completions]


def worked_solution(completions, answer, **kwargs) -> list[float]:
    """1.0 for the data's worked solution word for word, else 0.0: every sampled variation is pushed down at once,
    so the policy's next-token distributions narrow to the one text."""
    return [float(completion_text(c).strip() == a.strip()) for c, a in zip(completions, answer, strict=True)]


def shorter(completions, **kwargs) -> list[float]:
    """Pays for brevity, up to 400 characters: the mirror of `longer` (the policy learns to stop at once)."""
    return [1 - min(len(completion_text(c)), 400) / 400 for c in completions]
