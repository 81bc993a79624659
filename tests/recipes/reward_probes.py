"""Rewards used by the resume tests, selected by dotted path (`tests.recipes.reward_probes.record_prompts`) like any
user reward: they log what the trainer asked them to score, so a test can compare the data order of two runs."""

import json
import os

from rewards.text import completion_text


def record_prompts(completions, prompts=None, **kwargs) -> list[float]:
    """Appends one line per call: the prompts and completions scored and a digest of torch's RNG state.
    Scores completion length (any signal will do)."""
    texts = [completion_text(c) for c in completions]
    prompt_texts = [p if isinstance(p, str) else p[-1]["content"] for p in (prompts or [])]
    with open(os.environ["PROMPT_LOG"], "a") as fh:
        fh.write(json.dumps({"prompts": prompt_texts, "completions": texts, "rng": _rng_digest()}) + "\n")
    return [min(len(t), 100) / 100 for t in texts]


def _rng_digest() -> str:
    import hashlib

    import torch

    return hashlib.md5(torch.random.get_rng_state().numpy().tobytes()).hexdigest()[:12]
