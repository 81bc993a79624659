"""The tables docs/memory.md shows, made from the published results and the estimator, so that tests can hold the
docs to them (tests/studies/memory/)."""

from studies.memory.estimate import METHODS

COMPONENT_NAMES = {
    "weights_gb": "weights (4-bit linears + constants, bf16 embeddings/lm_head/norms)",
    "lora_gb": "LoRA weights",
    "gradients_gb": "gradients (during backward)",
    "optimizer_gb": "optimizer state",
    "critic_weights_gb": "critic's own tensors (LoRA + head; its base is the policy's)",
    "rollout_buffer_gb": "rollout buffer (PPO)",
    "activations_gb": "activations",
    "logits_gb": "logits and copies (chunked: one chunk + gradient rows)",
    "kv_cache_gb": "KV cache for generation (its own phase)",
    "reference_pass_gb": "reference log-prob pass (its own phase)",
}


def estimate_table(chunked: dict, full: dict) -> str:
    """docs/memory.md's 7B table: the components of the chunked path, and both paths' totals."""
    lines = ["| component (GB) | GRPO | PPO | DPO | ORPO |", "|---|---|---|---|---|"]
    for key, name in COMPONENT_NAMES.items():
        lines.append(f"| {name} | " + " | ".join(f"{chunked[m][key]:.2f}" for m in METHODS) + " |")
    lines.append(
        "| **total, `logprobs: chunked`** | " + " | ".join(f"**{chunked[m]['total_gb']:.2f}**" for m in METHODS) + " |"
    )
    lines.append("| total, `logprobs: full` | " + " | ".join(f"{full[m]['total_gb']:.2f}" for m in METHODS) + " |")
    return "\n".join(lines)


def validation_table(records: list[dict]) -> str:
    """Markdown: method x model x log-prob path x checkpointing, measured live-tensor peak, estimate, error."""
    lines = [
        "| method | model | vocabulary | log-probs | activation checkpointing | measured peak MB | estimated MB "
        "| error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['method']} | {r['model']['parameters'] / 1e6:.0f}M | {r['vocab_size']:,} | {r['logprobs']} | "
            f"{'on' if r['settings']['gradient_checkpointing'] else 'off'} | {r['measured_mb']:,.0f} | "
            f"{r['estimated_mb']:,.0f} | {r['error']:+.1%} |"
        )
    return "\n".join(lines)


def time_table(times: list[dict]) -> str:
    """Markdown: each method's training seconds on both log-prob paths (results/memory/time.json)."""
    lines = ["| method | TRL's path (`full`), s | `chunked`, s | chunked / full |", "|---|---|---|---|"]
    for t in times:
        lines.append(
            f"| {t['method']} | {t['train_seconds_full']:.1f} | {t['train_seconds_chunked']:.1f} | {t['ratio']:.2f}x |"
        )
    return "\n".join(lines)
