"""Scoring a model's completions on a benchmark's rows with the training verifiers (`score_rows`: `make eval` and
held-out evaluation during training), and how far a policy drifted from its start on the same completions
(`drift`)."""

import torch

from core.evaluation.benchmarks import TASKS, score
from core.evaluation.generation import generate


def score_rows(
    model,
    tokenizer,
    task_name: str,
    rows: list[dict],
    k: int = 1,
    temperature: float = 0.0,
    max_new_tokens: int | None = None,
    batch_size: int = 64,
    samples: list[list[str]] | None = None,
) -> list[dict]:
    """Per-sample records (index, sample, prompt, completion, extracted, gold, score, reason) of k completions per
    row, scored with the training verifiers. `samples` (k completions per row) skips generation."""
    task = TASKS[task_name]
    if k > 1 and temperature <= 0:
        raise ValueError(f"k={k} samples need a temperature > 0")
    prompts = [task.messages(row) for row in rows]
    if samples is None:
        samples = generate(
            model,
            tokenizer,
            prompts,
            max_new_tokens=max_new_tokens or task.max_new_tokens,
            batch_size=batch_size,
            temperature=temperature,
            num_return_sequences=k,
        )
    flat_rows = [row for row in rows for _ in range(k)]
    completions = [c for group in samples for c in group]
    verdicts = score(task, flat_rows, completions)
    return [
        {
            "index": i // k,
            "sample": i % k,
            "prompt": prompts[i // k][-1]["content"],
            "completion": completion,
            "extracted": extracted,
            "gold": flat_rows[i].get(task.gold) if task.kind == "math" else None,
            "score": s,
            "reason": reason,
        }
        for i, (completion, (s, extracted, reason)) in enumerate(zip(completions, verdicts, strict=True))
    ]


# Logit elements one drift batch may hold (x 4 bytes, a few copies): ~0.5 GB at a 7B model's 152k vocabulary.
DRIFT_LOGITS_BUDGET = 2**27


def _log_probs(model, ids, mask, positions) -> torch.Tensor:
    logits = model(input_ids=ids, attention_mask=mask).logits
    return torch.log_softmax(logits[positions].float(), dim=-1)


@torch.no_grad()
def drift(model, tokenizer, prompts: list[list[dict]], completions: list[str], max_new_tokens: int) -> dict:
    """On the given completions: mean per-token KL(policy || start) over the vocabulary, the policy's mean token
    entropy (nats), mean length in tokens and the share that reached `max_new_tokens`. The start model is the
    policy with its adapter off (`disable_adapter`); a model without one has drifted nowhere (KL 0). The tokens
    include the end of sequence where a completion ended before the budget: the decision to stop is output too (a
    policy that learned to stop at once has one token per completion, and its certainty is measured there)."""
    device = next(model.parameters()).device
    sequences = []
    for prompt, completion in zip(prompts, completions, strict=True):
        prompt_ids = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True)
        if not isinstance(prompt_ids, list):
            prompt_ids = prompt_ids["input_ids"]
        sequences.append((list(prompt_ids), tokenizer(completion, add_special_tokens=False)["input_ids"]))
    lengths = [len(c) for _, c in sequences]
    if tokenizer.eos_token_id is not None:
        sequences = [(p, c + [tokenizer.eos_token_id] if len(c) < max_new_tokens else c) for p, c in sequences]
    longest = max((len(p) + len(c) for p, c in sequences), default=1)
    batch = max(1, min(64, DRIFT_LOGITS_BUDGET // (longest * model.config.vocab_size)))
    kl_sum = entropy_sum = tokens = 0.0
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    for start in range(0, len(sequences), batch):
        chunk = [(p, c) for p, c in sequences[start : start + batch] if c]
        if not chunk:
            continue
        width = max(len(p) + len(c) for p, c in chunk)
        ids = torch.full((len(chunk), width), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        positions = torch.zeros_like(ids, dtype=torch.bool)  # the logits that predict a completion token
        for row, (p, c) in enumerate(chunk):
            ids[row, : len(p) + len(c)] = torch.tensor(p + c)
            mask[row, : len(p) + len(c)] = 1
            positions[row, len(p) - 1 : len(p) + len(c) - 1] = True
        ids, mask, positions = ids.to(device), mask.to(device), positions.to(device)
        policy = _log_probs(model, ids, mask, positions)
        if hasattr(model, "disable_adapter"):
            with model.disable_adapter():
                reference = _log_probs(model, ids, mask, positions)
        else:
            reference = policy
        p = policy.exp()
        kl_sum += (p * (policy - reference)).sum().item()
        entropy_sum -= (p * policy).sum().item()
        tokens += policy.shape[0]
    n = max(len(completions), 1)
    return {
        "kl": kl_sum / tokens if tokens else 0.0,
        "entropy": entropy_sum / tokens if tokens else 0.0,
        "length": sum(lengths) / n,
        "clipped": sum(length >= max_new_tokens for length in lengths) / n,
    }
