"""Batched generation from chat prompts or plain strings: `make pairs`, `make eval` and the tiny worlds' build."""

import torch


@torch.no_grad()
def generate(
    model,
    tokenizer,
    prompts: list,
    max_new_tokens: int = 128,
    batch_size: int = 64,
    temperature: float = 0.0,
    num_return_sequences: int = 1,
) -> list[list[str]]:
    """Batched generation for chat prompts (lists of messages) or plain strings; greedy when temperature is 0.

    Returns, per prompt, `num_return_sequences` completions (special tokens removed).
    """
    tokenizer.padding_side = "left"
    model.eval()
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
        generated = model.generate(
            **enc,
            max_new_tokens=max_new_tokens,
            num_return_sequences=num_return_sequences,
            pad_token_id=tokenizer.pad_token_id,
            **sampling,
        )
        completions = tokenizer.batch_decode(generated[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
        outputs.extend(
            completions[i : i + num_return_sequences] for i in range(0, len(completions), num_return_sequences)
        )
    return outputs
