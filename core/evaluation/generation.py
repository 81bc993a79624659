"""Batched generation from chat prompts or plain strings: `make pairs`, `make eval` and the tiny worlds' build."""

from contextlib import contextmanager

import torch

from core.runs.tokens import TokenCount, completion_tokens


@contextmanager
def inference(model):
    """Eval mode for generating and scoring, with bitsandbytes' 4-bit layers left on the kernel they train with: in
    eval mode on AVX512-BF16 CPUs bitsandbytes repacks their weights for another kernel, one way, which shifts
    results and breaks training afterwards. The model's mode is restored after."""
    was_training = model.training
    model.eval()
    for module in model.modules():
        if type(module).__name__ == "Linear4bit":
            module.training = True  # its one use of the flag is that repacking; dropout lives in other modules
    try:
        yield model
    finally:
        model.train(was_training)


@torch.no_grad()
def generate(
    model,
    tokenizer,
    prompts: list,
    max_new_tokens: int = 128,
    batch_size: int = 64,
    temperature: float = 0.0,
    num_return_sequences: int = 1,
    tokens: TokenCount | None = None,
) -> list[list[str]]:
    """Batched generation for chat prompts (lists of messages) or plain strings; greedy when temperature is 0.

    Returns, per prompt, `num_return_sequences` completions (special tokens removed); counts their tokens as
    generated into `tokens` when given.
    """
    padding_side, tokenizer.padding_side = tokenizer.padding_side, "left"  # restored: a trainer may share it
    outputs = []
    device = next(model.parameters()).device
    for start in range(0, len(prompts), batch_size):
        batch = prompts[start : start + batch_size]
        texts = [
            p if isinstance(p, str) else tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True)
            for p in batch
        ]
        enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
        sampling = (
            {"do_sample": True, "temperature": temperature, "top_k": 0, "top_p": 1.0}
            if temperature > 0
            else {"do_sample": False}
        )
        with inference(model):
            generated = model.generate(
                **enc,
                max_new_tokens=max_new_tokens,
                num_return_sequences=num_return_sequences,
                pad_token_id=tokenizer.pad_token_id,
                **sampling,
            )
        new_tokens = generated[:, enc["input_ids"].shape[1] :]
        completions = tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        if tokens is not None:
            special = tokenizer.all_special_ids
            tokens.record(generated=completion_tokens(new_tokens, torch.ones_like(new_tokens), special))
        outputs.extend(
            completions[i : i + num_return_sequences] for i in range(0, len(completions), num_return_sequences)
        )
    tokenizer.padding_side = padding_side
    return outputs
